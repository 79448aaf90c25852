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

// TestBoardFollowups shows a group's follow-up policy, each recipient's
// next reminder, and drives "Nudge non-responders now" and "Retry all
// failed" through their confirmation dialogs on the real server.
func TestBoardFollowups(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	crew := []string{"+15550100301", "+15550100302", "+15550100303"}
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{crew[0]: "deliver", crew[1]: "reply:YES", crew[2]: "fail:40008"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	create := func(v map[string]any) string { t.Helper(); return createVia(t, srv.URL()+"/v1/groups", key, v) }
	// Escalation crews come from the directory (a 422 names an unknown one).
	now := time.Now()
	if err := srv.Store().CreateContact(context.Background(), store.Contact{ID: "ct_sup", Number: "+15550100309", Name: "Sue",
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Store().CreateCrew(context.Background(), store.Crew{ID: "cr_sup", Name: "Supervisors", Members: []string{"ct_sup"},
		CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	g := struct{ ID string }{create(map[string]any{"from": "+15550100000", "to": crew, "text": "Crew call 6am",
		"followup": map[string]any{"after": "1h", "max": 1},
		"escalate": map[string]any{"after": "2h", "crews": []string{"Supervisors"}}})}
	later := create(map[string]any{"from": "+15550100000", "to": []string{"+15550100304"}, "text": "Tomorrow's call",
		"send_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})

	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signIn(srv.URL()+"/", key)
	do("open the group", chromedp.Navigate(srv.URL()+"/#/groups/"+g.ID))
	wait("the policy", `(document.querySelector("#policy")||{}).textContent === "Reminder every 1 h, once; escalate to Supervisors, +15550100309 at 2 h"`)
	// The one who has not answered waits for a reminder; the one who
	// answered YES does not; the failed one gets "Retry all failed".
	wait("a next reminder", `[...document.querySelectorAll("#roster-body tr.recipient")].some(tr => tr.dataset.number === "`+crew[0]+`" && /Next reminder/.test(tr.textContent))`)
	wait("the answer", `[...document.querySelectorAll("#roster-body tr.recipient")].some(tr => tr.dataset.number === "`+crew[1]+`" && /Acknowledged/.test(tr.textContent) && !/Next reminder/.test(tr.textContent))`)
	wait("retry all failed", `!!document.querySelector("#retry-failed")`)

	do("nudge", chromedp.Click(chromedp.CSS("#nudge-group")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm the nudge", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="nudge"]`)))
	wait("the reminder sent", `[...document.querySelectorAll("#roster-body tr.recipient")].some(tr => tr.dataset.number === "`+crew[0]+`" && /1 reminder sent/.test(tr.textContent))`)
	wait("nudge gone (max reached)", `!document.querySelector("#nudge-group")`)
	do("open the history", chromedp.Click(chromedp.CSS(`#roster-body tr.recipient[data-number="`+crew[0]+`"] .history`)))
	wait("the history shows the reminder", `/Operator nudged non-responders/.test(document.body.textContent) && /Reminder sent/.test(document.body.textContent)`)

	do("retry all failed", chromedp.Click(chromedp.CSS("#retry-failed")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm the retry", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="retry"]`)))
	wait("the dialog closed", `!document.querySelector("#confirm-dialog").open`)
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#confirm-error").textContent`); strings.TrimSpace(got) != "" {
		t.Fatalf("dialog error %q", got)
	}

	// A scheduled group: its recipient is Scheduled, held until send_at.
	do("open the scheduled group", chromedp.Navigate(srv.URL()+"/#/groups/"+later))
	wait("scheduled", `(document.querySelector('[data-counter="scheduled"] .tile-value')||{}).textContent === "1" && /Held until/.test(document.querySelector("#roster-body").textContent) && /Scheduled/.test(document.querySelector("#roster-body").textContent)`)
	wait("its policy", `/^Scheduled for /.test((document.querySelector("#policy")||{}).textContent || "")`)
}
