package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/tracker"
	"github.com/crewcast/crewcast/web/webtest"
)

// demoCrew mirrors the example group of `crewcast demo`
// (cmd/crewcast/demo.go, package main, so it cannot be imported): the same
// people and scripted fates, with the four the demo leaves to chance
// delivered, so the counts below are exact.
var demoCrew = []struct{ number, name, fate string }{
	{"+15550100101", "Ana Ruiz (foreman)", "reply:YES"},
	{"+15550100102", "Ben Okafor", "reply:YES, on my way"},
	{"+15550100103", "Chen Li", "fail:40008"},
	{"+15550100104", "Dana Kowalski", "reply:NO"},
	{"+15550100105", "Eli Haddad", "unknown"},
	{"+15550100106", "Fatima Noor", "reply:running late"},
	{"+15550100107", "Gus Petersen", "accept_timeout:silent"},
	{"+15550100108", "Hana Sato", "deliver"},
	{"+15550100109", "Ivan Morales", "deliver"},
	{"+15550100110", "Jo Whitfield", "deliver"},
	{"+15550100111", "Kai Mensah", "deliver"},
	{"+15550100112", "Lena Brandt", "deliver"},
}

// TestBoardDemoExampleGroupIsHonest opens the demo's example group on the
// real server in a real browser (issue 11): YES and NO are separate tiles,
// replies that are neither stay "Replied", the people who did not answer
// are counted, a group that ended with failed, unconfirmed and unknown
// recipients reads "Complete — 3 need attention" (not a green "Complete"),
// the banner counts all three, the failed one's error is explained with a
// link, and the unknown recipient can be resolved from the board.
func TestBoardDemoExampleGroupIsHonest(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{20, 200}
	faults.Script = map[string]string{}
	req := group.Request{From: "+15550100000", Mode: crewcast.ModeIndividual,
		Text: "Crew call: site B, 7:00 tomorrow. Reply YES if you can make it, NO if not."}
	for _, c := range demoCrew {
		faults.Script[c.number] = c.fate
		req.Recipients = append(req.Recipients, group.RecipientInput{Number: c.number, Name: c.name})
	}
	srv, key := startServer(t, "demo", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	id, _, err := srv.Tracker().Create(context.Background(), req, tracker.CreateOptions{By: "demo"})
	if err != nil {
		t.Fatal(err)
	}

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text

	b.signIn(srv.URL()+"/#/groups/"+id, key)
	wait("the example group", `document.querySelectorAll("#roster-body tr.recipient").length === 12`)

	for name, want := range map[string]string{"delivered": "9", "failed": "1", "unconfirmed": "1", "unknown": "1",
		"ack_yes": "2", "ack_no": "1", "replied": "1", "no_reply": "8", "in_progress": "0"} {
		wait("counter "+name+" = "+want, counter(name)+" === "+webtest.JS(want))
	}
	wait("the group complete", `!!document.querySelector('.group-head [data-group-status="complete"]')`)
	if got := text(".group-head [data-group-status]"); got != "Complete — 3 need attention" {
		t.Errorf("status label = %q, want \"Complete — 3 need attention\"", got)
	}
	if !webtest.Eval[bool](t, ctx, `document.querySelector(".group-head [data-group-status]").classList.contains("tone-warn")`) {
		t.Error("a group with people needing attention is not shown in the warning colour")
	}
	if got := text("#attention"); !strings.Contains(got, "3 recipients need attention (1 failed, 1 unconfirmed, 1 unknown)") {
		t.Errorf("attention banner = %q", got)
	}
	if got := text(row("+15550100103") + " .error-detail"); !strings.Contains(got, "carrier could not deliver") {
		t.Errorf("error 40008 explained as %q", got)
	}
	if got := webtest.Eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%s).getAttribute("href")`, webtest.JS(row("+15550100103")+" .error-link"))); !strings.HasPrefix(got, "https://developers.telnyx.com/") {
		t.Errorf("error 40008 link = %q", got)
	}
	webtest.SaveScreenshot(t, ctx, "board-demo-group.png", webtest.DesktopWidth, webtest.DesktopHeight)

	// The unknown recipient is no dead end: resolve it from the board.
	eli := row("+15550100105")
	do("open the resolve dialog for the unknown recipient", chromedp.Click(chromedp.CSS(eli+" button.resolve")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	if got := text("#confirm-dialog"); !strings.Contains(got, "never reported whether it reached the phone") {
		t.Errorf("dialog for an unknown recipient = %q", got)
	}
	do("confirm delivered", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delivered"]`)))
	wait("the unknown recipient delivered", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.status === "delivered"`, webtest.JS(eli)))
	wait("two left needing attention", `document.querySelector(".group-head [data-group-status]").textContent === "Complete — 2 need attention"`)
	do("open its history", chromedp.Click(chromedp.CSS(eli+" button.history")))
	wait("the resolution in the history", `!!document.querySelector('.timeline-row .tl-item[data-type="recipient.resolved"]')`)
	if got := text(`.timeline-row .tl-item[data-type="recipient.resolved"] .tl-detail`); !strings.Contains(got, "was unknown") {
		t.Errorf("history of the resolution = %q, want who and from which status", got)
	}
	if n := len(srv.Sim().Ledger()); n != 12 {
		t.Errorf("ledger has %d sends, want 12: resolving sends nothing", n)
	}
}
