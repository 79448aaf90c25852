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
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardLadderHistory (issue 31 item 5): on the demo (calls through
// TeXML to the simulator, mail to an SMTP server), a person's history
// names each attempt's channel and outcome: the call claimed and placed,
// how it ended ("Call: busy"), the mail sent; a second person who presses
// 2 on the call shows "Answered by call".
func TestBoardLadderHistory(t *testing.T) {
	box, err := sim.ServeSMTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	ada, bo := "+15550100401", "+15550100402"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second,
		SMTPURL: "smtp://" + box.Addr(), EmailFrom: "crewcast@example.org", Settings: group.Settings{CheckAfter: time.Minute}})
	if err := srv.Sim().SetVoiceScript(ada, "busy"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Sim().SetVoiceScript(bo, "2"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := srv.Store().CreateContact(context.Background(), store.Contact{ID: "ct_ada", Number: ada, Name: "Ada", Email: "ada@example.org",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{ada, bo}, "text": "Crew call 6am",
		"responses": []map[string]string{{"key": "Y", "label": "Coming"}, {"key": "N", "label": "Cannot"}},
		"followup":  map[string]any{"steps": []map[string]string{{"after": "1s", "channel": "voice"}, {"after": "2s", "channel": "email"}}}})

	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signIn(srv.URL()+"/", key)
	do("open the group", chromedp.Navigate(srv.URL()+"/#/groups/"+id))
	wait("Bo's answer", `[...document.querySelectorAll("#roster-body tr.recipient")].some(tr => tr.dataset.number === "`+bo+`" && /Cannot/.test(tr.textContent))`)
	wait("the answers by channel", `(document.querySelector('[data-counter="by_channel_voice"] .tile-value') || {}).textContent === "1"`)
	deadline := time.Now().Add(20 * time.Second)
	for len(box.Mail()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no mail to Ada")
		}
		time.Sleep(50 * time.Millisecond)
	}
	do("open Ada's history", chromedp.Click(chromedp.CSS(`#roster-body tr.recipient[data-number="`+ada+`"] .history`)))
	titles := `[...document.querySelectorAll(".timeline-row .tl-title")].map(e => e.textContent)`
	wait("Ada's attempts", titles+`.includes("Email sent")`)
	got := strings.Join(webtest.Eval[[]string](t, ctx, titles), " | ")
	for _, want := range []string{"Call claimed", "Call: placed", "Call: busy", "Email claimed", "Email sent"} {
		if !strings.Contains(got, want) {
			t.Errorf("Ada's history %q lacks %q", got, want)
		}
	}
	do("close it", chromedp.Click(chromedp.CSS(`#roster-body tr.recipient[data-number="`+ada+`"] .history`)))
	do("open Bo's history", chromedp.Click(chromedp.CSS(`#roster-body tr.recipient[data-number="`+bo+`"] .history`)))
	wait("Bo's answer by call", titles+`.includes("Answered by call")`)
	got = strings.Join(webtest.Eval[[]string](t, ctx, titles), " | ")
	if !strings.Contains(got, "Call: answered") || strings.Contains(got, "Email sent") {
		t.Errorf("Bo's history %q: want the call answered and no mail", got)
	}
}
