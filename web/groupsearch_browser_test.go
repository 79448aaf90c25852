package web_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardMarkedByAndBarNames is issue 28 item 9 (the rest): a recipient
// resolved by hand shows "Delivered (marked by <who>)", not a bare
// "Delivered"; every progress bar on the list and the group page has an
// accessible name.
func TestBoardMarkedByAndBarNames(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	eli := "+15550102005"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{eli: "unknown"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{eli}, "text": "Gate code changed"})
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")
	wait("the card", `!!document.querySelector('#group-list li[data-group-id="`+id+`"] [role=progressbar]')`)
	barsNamed(t, b, "the list")

	do("open the group", chromedp.Navigate(srv.URL()+"/#/groups/"+id))
	wait("unknown", `!!document.querySelector('`+row(eli)+`[data-status="unknown"]')`)
	barsNamed(t, b, "the group page")
	do("open the resolve dialog", chromedp.Click(chromedp.CSS(row(eli)+" button.resolve")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("choose delivered", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delivered"]`)))
	wait("delivered", `!!document.querySelector('`+row(eli)+`[data-status="delivered"]')`)
	label := `(document.querySelector(` + webtest.JS(row(eli)+` .chip[data-status]`) + `) || {}).textContent`
	if !waitTrue(t, b, label+` === "Delivered (marked by Dana Dispatcher)"`) {
		t.Errorf("the resolved recipient's label is %q, want %q", webtest.Eval[string](t, ctx, label), "Delivered (marked by Dana Dispatcher)")
	}
	// After a reload, too: the name comes from the journal, not the page.
	do("reload", chromedp.Reload())
	wait("the row again", `!!document.querySelector('`+row(eli)+`[data-status="delivered"]')`)
	if got := webtest.Eval[string](t, ctx, label); got != "Delivered (marked by Dana Dispatcher)" {
		t.Errorf("after a reload the label is %q", got)
	}
	b.axeClean(t, "a recipient marked by hand")
}

// barsNamed fails t when a progressbar or meter on the page has no
// accessible name (aria-label or aria-labelledby) or there is none.
func barsNamed(t *testing.T, b *tab, where string) {
	t.Helper()
	n := webtest.Eval[int](t, b.ctx, `document.querySelectorAll("[role=progressbar], [role=meter], progress, meter").length`)
	unnamed := webtest.Eval[int](t, b.ctx, `[...document.querySelectorAll("[role=progressbar], [role=meter], progress, meter")].filter((e) => !(e.getAttribute("aria-label") || "").trim() && !e.getAttribute("aria-labelledby")).length`)
	if n == 0 || unnamed != 0 {
		t.Errorf("%s: %d progress bars, %d without an accessible name", where, n, unnamed)
	}
}

// waitTrue polls expr for up to 5 s.
func waitTrue(t *testing.T, b *tab, expr string) bool {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if webtest.Eval[bool](t, b.ctx, expr) {
			return true
		}
	}
	return false
}

// TestBoardGroupSearch is issue 28 item 8: the group list's search form
// narrows the list by text and by sender, and the live stream keeps
// working under a search: a new group that matches appears, one that does
// not stays out.
func TestBoardGroupSearch(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{})
	mk := func(from, text string) string {
		return createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": from, "to": []string{"+15550103001"}, "text": text})
	}
	gate := mk("+15550100000", "Gate CODE changed")
	call := mk("+15550100001", "Crew call 7am")
	b := openTab(t)
	wait, do := b.wait, b.do
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")
	shown := func(ids ...string) string {
		js := `document.querySelectorAll("#group-list li.group-card").length === ` + strconv.Itoa(len(ids))
		for _, id := range ids {
			js += ` && !!document.querySelector('#group-list li[data-group-id="` + id + `"]')`
		}
		return js
	}
	wait("both groups", shown(gate, call))

	do("search by text", chromedp.SendKeys("#groups-q", "gate code"), chromedp.Click("#group-search button[type=submit]"))
	wait("only the gate group", shown(gate))
	late := mk("+15550100001", "gate code again")
	mk("+15550100000", "Lunch at noon")
	wait("the new match, live", shown(late, gate))
	b.axeClean(t, "the group list under a search")

	do("clear", chromedp.Click("#groups-clear"))
	wait("all four", `document.querySelectorAll("#group-list li.group-card").length === 4`)
	do("search by sender", chromedp.SendKeys("#groups-from", "+15550100001"), chromedp.Click("#group-search button[type=submit]"))
	wait("the sender's groups", shown(late, call))
	do("and by text", chromedp.SendKeys("#groups-q", "crew"), chromedp.Click("#group-search button[type=submit]"))
	wait("one left", shown(call))
	do("no match", chromedp.SetValue("#groups-q", "zebra"), chromedp.Click("#group-search button[type=submit]"))
	wait("the empty message", `(document.querySelector("#group-list .empty") || {}).textContent === "No group messages match this search."`)
}
