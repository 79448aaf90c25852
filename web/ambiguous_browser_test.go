package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardAmbiguousReply: a bare "1" from a person with two open requests
// from one number is applied to neither (docs/design.md §15); the replies
// inbox marks it ambiguous and can show only such answers, and a plain
// reply is not marked.
func TestBoardAmbiguousReply(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo := "+15550100941", "+15550100942"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	from := "+15550100000"
	options := []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}}
	for _, text := range []string{"North gate 7am", "South gate 9am"} {
		createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": from, "to": []string{ada}, "text": text, "responses": options})
	}
	createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": from, "to": []string{bo}, "text": "East gate 8am", "responses": options})
	// Both of Ada's requests are claimed (and so open) before she answers.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var list struct {
			Groups []struct {
				Counts struct{ Pending, Sending int }
			}
		}
		getJSON(t, srv.URL()+"/v1/groups", key, &list)
		sent := 0
		for _, g := range list.Groups {
			if g.Counts.Pending == 0 && g.Counts.Sending == 0 {
				sent++
			}
		}
		if sent == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the three groups were not sent: %+v", list.Groups)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, in := range [][2]string{{ada, "1"}, {bo, "1"}} {
		if _, err := srv.Sim().Inbound(context.Background(), in[0], from, in[1]); err != nil {
			t.Fatal(err)
		}
	}
	b := openTab(t)
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")
	b.do("open replies", chromedp.Click(chromedp.CSS("#nav-replies")))
	adaRow, boRow := `#replies-body tr.reply[data-number="`+ada+`"]`, `#replies-body tr.reply[data-number="`+bo+`"]`
	b.wait("both replies", `!!document.querySelector(`+webtest.JS(adaRow)+`) && !!document.querySelector(`+webtest.JS(boRow)+`)`)
	if got := b.text(adaRow); !strings.Contains(got, "Ambiguous") {
		t.Errorf("Ada's bare answer %q is not marked ambiguous", got)
	}
	if got := b.text(boRow); strings.Contains(got, "Ambiguous") {
		t.Errorf("Bo's answer to his one request %q is marked ambiguous", got)
	}
	b.do("only ambiguous", chromedp.Click(chromedp.CSS("#replies-ambiguous")))
	b.wait("the filter", `!document.querySelector(`+webtest.JS(boRow)+`) && !!document.querySelector(`+webtest.JS(adaRow)+`)`)
	b.axeClean(t, "replies, ambiguous answers")
}
