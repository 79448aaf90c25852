package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardRepliesOptOutsAndPeople is issue 28 item 7, as a dispatcher on
// the real server: the #/replies inbox lists a reply with the group it went
// to; #/opt-outs lists the person who texted STOP, adds a number and lifts
// it through a confirmation; a person's history across groups
// (#/people/{number}) opens from the inbox and from a roster row.
func TestBoardRepliesOptOutsAndPeople(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo, extra := "+15550100901", "+15550100902", "+15550100999"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{ada: "reply:Running late", bo: "reply:STOP"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{ada, bo}, "text": "Crew call 7am"})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	do("open replies", chromedp.Click(chromedp.CSS("#nav-replies")))
	reply := `#replies-body tr.reply[data-number="` + ada + `"]`
	wait("Ada's reply", `location.hash === "#/replies" && !!document.querySelector(`+webtest.JS(reply)+`)`)
	if got := text(reply); !strings.Contains(got, "Running late") || !strings.Contains(got, "Crew call 7am") {
		t.Errorf("reply row %q lacks the text or the group", got)
	}
	if got := webtest.Eval[string](t, ctx, `document.querySelector(`+webtest.JS(reply+` a.group-link`)+`).getAttribute("href")`); got != "#/groups/"+id {
		t.Errorf("reply's group link %q", got)
	}
	b.axeClean(t, "replies")

	// The person's history, from the inbox.
	do("open Ada's history", chromedp.Click(chromedp.CSS(reply+` a.person-link`)))
	wait("the history", `location.hash === "#/people/`+url.QueryEscape(ada)+`" && document.querySelectorAll("#person-body tr").length === 1`)
	if got := text("#person-body tr"); !strings.Contains(got, "Crew call 7am") {
		t.Errorf("history row %q", got)
	}
	b.axeClean(t, "a person's history")

	// Opt-outs: Bo's STOP is listed; add one by hand and lift it.
	do("open opt-outs", chromedp.Click(chromedp.CSS("#nav-opt-outs")))
	wait("Bo listed", `location.hash === "#/opt-outs" && !!document.querySelector('#optouts-body tr[data-number="`+bo+`"]')`)
	if got := text(`#optouts-body tr[data-number="` + bo + `"]`); !strings.Contains(got, "stop") {
		t.Errorf("Bo's row %q does not say STOP", got)
	}
	webtest.Type(t, ctx, "#optout-number", extra)
	do("add", chromedp.Click(chromedp.CSS("#optout-save")))
	row := `#optouts-body tr[data-number="` + extra + `"]`
	wait("added", `!!document.querySelector(`+webtest.JS(row)+`)`)
	b.axeClean(t, "opt-outs")
	webtest.SaveScreenshot(t, ctx, "board-opt-outs.png", webtest.DesktopWidth, webtest.DesktopHeight)
	do("lift", chromedp.Click(chromedp.CSS(row+` button.optout-lift`)))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="lift"]`)))
	wait("lifted", `!document.querySelector(`+webtest.JS(row)+`)`)
	var list struct{ Suppressions []struct{ Number string } }
	getJSON(t, srv.URL()+"/v1/suppressions", key, &list)
	if len(list.Suppressions) != 1 || list.Suppressions[0].Number != bo {
		t.Errorf("suppressions after lift: %+v", list.Suppressions)
	}

	// From a roster row too.
	do("open the group", chromedp.Navigate(srv.URL()+"/#/groups/"+id))
	wait("the roster link", `!!document.querySelector('#roster-body tr.recipient[data-number="`+bo+`"] a.person-link')`)
	do("open Bo's history", chromedp.Click(chromedp.CSS(`#roster-body tr.recipient[data-number="`+bo+`"] a.person-link`)))
	wait("Bo's history says opted out", `location.hash === "#/people/`+url.QueryEscape(bo)+`" && /Opted out/.test(document.querySelector("#person-status").textContent)`)
}
