package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardScheduledGroup is issue 28 item 4, signed in as a dispatcher
// whose browser is in Chicago: a group with send_at says "Scheduled for
// <day> <time> <zone>" in the viewer's zone on the list and on its page,
// not "Sending"/"in progress", and can be canceled from the list card; a
// recipient held by quiet hours says "Held until <time>".
func TestBoardScheduledGroup(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	chicago, err := time.LoadLocation("America/Chicago")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
	later := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{"+15550100401", "+15550100402"},
		"text": "Crew call tomorrow", "send_at": at.UTC().Format(time.RFC3339)})
	// Quiet hours around now (the server's default zone is UTC): held.
	now := time.Now().UTC()
	qs, qe := now.Add(-time.Hour), now.Add(2*time.Hour).Truncate(time.Minute)
	held := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{"+15550100403"},
		"text": "Quiet call", "quiet_hours": fmt.Sprintf("%02d:%02d-%02d:%02d", qs.Hour(), qs.Minute(), qe.Hour(), qe.Minute())})

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	webtest.SetTimezone(t, ctx, "America/Chicago")
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	local := at.In(chicago)
	clock := fmt.Sprintf("%d:%02d", local.Hour(), local.Minute())
	wantSchedule := func(got, where string) {
		t.Helper()
		if !strings.HasPrefix(got, "Scheduled for "+local.Format("Mon")) || !strings.Contains(got, clock) ||
			!(strings.Contains(got, "CST") || strings.Contains(got, "CDT") || strings.Contains(got, "GMT-")) {
			t.Errorf("%s says %q, want Scheduled for %s … %s with the zone", where, got, local.Format("Mon"), clock)
		}
	}
	card := `#group-list li[data-group-id="` + later + `"]`
	wait("the scheduled card", `!!document.querySelector(`+webtest.JS(card+` .card-schedule`)+`)`)
	wantSchedule(text(card+` .card-schedule`), "the list card")
	if got := text(card + ` .chip-group`); got != "Scheduled" {
		t.Errorf("list chip %q, want Scheduled", got)
	}
	if got := text(card + ` .card-summary`); strings.Contains(got, "in progress") {
		t.Errorf("list summary %q still says in progress", got)
	}
	b.axeClean(t, "groups list with a scheduled group")
	webtest.SaveScreenshot(t, ctx, "board-scheduled.png", webtest.DesktopWidth, webtest.DesktopHeight)

	do("open it", chromedp.Click(chromedp.CSS(card+` .card-link`)))
	wait("the group page", `!!document.querySelector("#schedule") && document.querySelectorAll("#roster-body tr.recipient").length === 2`)
	wantSchedule(text("#schedule"), "the group page")
	if got := text("#group-title ~ .chip-group"); got != "Scheduled" {
		t.Errorf("group chip %q, want Scheduled", got)
	}
	if got := text("#summary"); strings.Contains(got, "in progress") {
		t.Errorf("group summary %q still says in progress", got)
	}
	wait("cancel offered", `!!document.querySelector("#cancel-group")`)
	b.axeClean(t, "a scheduled group")

	// Held by quiet hours: "Held until" the end of the window, in Chicago.
	do("open the held group", chromedp.Navigate(srv.URL()+"/#/groups/"+held))
	end := qe.In(chicago)
	wait("the held row", `[...document.querySelectorAll("#roster-body tr.recipient")].some(tr => /Held until/.test(tr.textContent))`)
	if got := text(`#roster-body tr.recipient .chip`); !strings.HasPrefix(got, "Held until") || !strings.Contains(got, fmt.Sprintf("%d:%02d", end.Hour(), end.Minute())) {
		t.Errorf("held recipient's status %q, want Held until %d:%02d", got, end.Hour(), end.Minute())
	}

	// Cancel from the list card, through the dialog; focus stays on the card.
	do("back to the list", chromedp.Navigate(srv.URL()+"/#/groups"))
	wait("the cancel button", `!!document.querySelector(`+webtest.JS(card+` button.card-cancel`)+`)`)
	do("cancel", chromedp.Click(chromedp.CSS(card+` button.card-cancel`)))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="cancel"]`)))
	wait("canceled", `(document.querySelector(`+webtest.JS(card+` .chip-group`)+`) || {}).textContent === "Canceled" && !document.querySelector(`+webtest.JS(card+` .card-schedule`)+`)`)
	wait("focus kept on the card", `!!document.activeElement.closest(`+webtest.JS(card)+`)`)
	var g struct{ Status string }
	getJSON(t, srv.URL()+"/v1/groups/"+later, key, &g)
	if g.Status != "canceled" {
		t.Errorf("group status %q after Cancel", g.Status)
	}
	for _, s := range srv.Sim().Ledger() {
		if s.To == "+15550100401" || s.To == "+15550100402" {
			t.Errorf("a scheduled, canceled group sent to %s", s.To)
		}
	}
}
