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

// TestBoardLabelsDoNotMislead is issue 28 item 9 (part), as a dispatcher:
// a list card for a group with options shows the option counts ("1 Coming
// · 0 Cannot · 1 no answer"); a card without options counts replies as the
// group page's tiles do (Yes, No, Replied); Unknown and Unconfirmed rows
// each explain themselves in one line.
func TestBoardLabelsDoNotMislead(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo, cy, dee, eli, fay := "+15550101001", "+15550101002", "+15550101003", "+15550101004", "+15550101005", "+15550101006"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{ada: "reply:1", bo: "deliver", cy: "reply:YES", dee: "reply:Running late", eli: "unknown", fay: "accept_timeout:silent"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	opts := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{ada, bo}, "text": "Crew call 7am",
		"responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}}})
	plain := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{cy, dee, eli, fay}, "text": "Call 6am. Reply YES"})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	card := func(id string) string { return `#group-list li[data-group-id="` + id + `"]` }
	wait("the option counts", `(document.querySelector(`+webtest.JS(card(opts)+` .card-answers`)+`) || {}).textContent === "1 Coming · 0 Cannot · 1 no answer"`)
	wait("the plain card's replies", `(document.querySelector(`+webtest.JS(card(plain)+` .summary-extra`)+`) || {}).textContent === "1 yes · 1 replied"`)
	b.axeClean(t, "list cards with counts")

	do("open the plain group", chromedp.Navigate(srv.URL()+"/#/groups/"+plain))
	wait("the tiles", counter("ack_yes")+` === "1" && `+counter("replied")+` === "1"`)
	wait("unknown and unconfirmed", `!!document.querySelector('`+row(eli)+`[data-status="unknown"]') && !!document.querySelector('`+row(fay)+`[data-status="unconfirmed"]')`)
	unk, unc := text(row(eli)+" .status-why"), text(row(fay)+" .status-why")
	if !strings.Contains(unk, "receipt") || !strings.Contains(unc, "may or may not") || unk == unc {
		t.Errorf("explanations: unknown %q, unconfirmed %q", unk, unc)
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("#roster-body .status-why").length`); n != 2 {
		t.Errorf("%d rows explain their status, want the 2 unknown/unconfirmed ones", n)
	}
	b.axeClean(t, "a group with unknown and unconfirmed rows")
}
