package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardPossibleOptOut: a reply that only holds a stop word inside other
// words ("I can't stop by today") is not an opt-out but is flagged for a
// person to decide. The replies inbox marks it, can show only such replies,
// and one click opts the number out (through POST /v1/suppressions, so the
// audit trail names the dispatcher); a plain reply gets no such button.
func TestBoardPossibleOptOut(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	cy, di := "+15550100931", "+15550100932"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{cy: "reply:I can't stop by today, sorry", di: "reply:On my way"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{cy, di}, "text": "Crew call 7am"})
	b := openTab(t)
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	b.do("open replies", chromedp.Click(chromedp.CSS("#nav-replies")))
	cyRow, diRow := `#replies-body tr.reply[data-number="`+cy+`"]`, `#replies-body tr.reply[data-number="`+di+`"]`
	b.wait("both replies", `!!document.querySelector(`+webtest.JS(cyRow)+`) && !!document.querySelector(`+webtest.JS(diRow)+`)`)
	if got := b.text(cyRow); !strings.Contains(got, "Possible opt-out") {
		t.Errorf("Cy's row %q is not marked as a possible opt-out", got)
	}
	if webtest.Eval[bool](t, b.ctx, `!!document.querySelector(`+webtest.JS(diRow+` button.optout-now`)+`)`) {
		t.Error("a plain reply offers to opt the number out")
	}
	b.do("only possible opt-outs", chromedp.Click(chromedp.CSS("#replies-possible")))
	b.wait("the filter", `!document.querySelector(`+webtest.JS(diRow)+`) && !!document.querySelector(`+webtest.JS(cyRow)+`)`)
	b.axeClean(t, "replies, possible opt-outs")
	b.do("opt Cy out", chromedp.Click(chromedp.CSS(cyRow+` button.optout-now`)))
	b.wait("opted out", `/Opted out/.test(document.querySelector(`+webtest.JS(cyRow)+`).textContent)`)

	var list struct {
		Suppressions []struct{ Number, Reason string }
	}
	getJSON(t, srv.URL()+"/v1/suppressions", key, &list)
	if len(list.Suppressions) != 1 || list.Suppressions[0].Number != cy {
		t.Fatalf("suppressions after the click: %+v", list.Suppressions)
	}
	var audit struct {
		Entries []struct {
			Action string
			Actor  struct{ Name string }
		}
	}
	getJSON(t, srv.URL()+"/v1/audit?action=suppression.added", key, &audit)
	found := false
	for _, e := range audit.Entries {
		found = found || e.Actor.Name == "Dana Dispatcher"
	}
	if !found {
		t.Errorf("no audit entry names the dispatcher: %+v", audit.Entries)
	}
}
