package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardCallout drives a callout that fills (docs/design.md §15, issue
// 29 item 4) on the real server in demo mode from headless Chromium,
// signed in as a dispatcher: the board says "N of M filled", the wave
// each person was texted in or waits for, who is selected or on standby
// and when the next wave goes; the dispatcher starts the next wave now, releases a
// selected person (the earliest standby takes the place) and selects one
// by hand, and the board follows each change without a reload. The audit
// log names the dispatcher for each hand on the callout, on the API and on
// the audit page. axe stays clean on the way.
func TestBoardCallout(t *testing.T) {
	const from = "+15550100000"
	people := []struct{ number, name string }{
		{"+15550100401", "Ana Ruiz"}, {"+15550100402", "Ben Okafor"}, {"+15550100403", "Chen Li"},
		{"+15550100404", "Dana Kowalski"}, {"+15550100405", "Eli Haddad"}, {"+15550100406", "Fatima Noor"},
		{"+15550100407", "Gus Petersen"},
	}
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{20, 120}
	srv, key := startServer(t, "callout", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second,
		Settings: group.Settings{CheckAfter: time.Minute}})
	base := srv.URL()
	var recipients []map[string]string
	for _, p := range people {
		recipients = append(recipients, map[string]string{"number": p.number, "name": p.name})
	}
	// Need 2, waves of 3 an hour apart: only the dispatcher's button
	// sends wave 2 within the test.
	gid := createVia(t, base+"/v1/groups", key, map[string]any{"from": from, "recipients": recipients, "mode": "individual",
		"text":      "Callout: north gate by 7.",
		"responses": []map[string]string{{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "Can't", "ack": "no"}},
		"quorum":    map[string]any{"response": "1", "count": 2},
		"waves":     map[string]any{"size": 3, "every": "1h"}, "confirmed_text": "You're on: north gate by 7."})

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(base, key, "dana@example.com", "Dana Dispatcher")
	do("open the callout", chromedp.Navigate(base+"/#/groups/"+gid))
	wait("the roster", `document.querySelectorAll("#roster-body tr.recipient").length === 7`)
	webtest.Eval[bool](t, ctx, `window.__sameDocument = true`)

	rowOf := func(i int) string { return row(people[i].number) }
	has := func(i int, sel string) string {
		return fmt.Sprintf(`!!document.querySelector(%s)`, webtest.JS(rowOf(i)+" "+sel))
	}
	chips := func(i int) string {
		return webtest.Eval[string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll(%s)].map((c) => c.textContent).join("|")`,
			webtest.JS(rowOf(i)+" .chips .chip")))
	}
	answer := func(i int, reply string) {
		t.Helper()
		if _, err := srv.Sim().Inbound(context.Background(), people[i].number, from, reply); err != nil {
			t.Fatalf("%s answers %q: %v", people[i].name, reply, err)
		}
	}
	nextAt := func() string {
		var g struct {
			Waves struct {
				NextAt *string `json:"next_at"`
			} `json:"waves"`
		}
		getJSON(t, base+"/v1/groups/"+gid, key, &g)
		if g.Waves.NextAt == nil {
			return ""
		}
		return *g.Waves.NextAt
	}

	// Wave 1: the first three are texted and wait for an answer; the
	// others wait for a later wave; the next wave's time is shown.
	wait("0 of 2 filled, wave 1 sent", `(document.querySelector("#quorum") || {}).textContent?.startsWith("0 of 2 filled — wave 1 sent; next wave at ")`)
	for i := range 3 {
		wait(people[i].name+" in wave 1", has(i, `[data-flag="wave"]`)+` && document.querySelector(`+webtest.JS(rowOf(i))+`).dataset.status === "delivered"`)
	}
	for i := 3; i < 7; i++ {
		if got := webtest.Eval[string](t, ctx, `document.querySelector(`+webtest.JS(rowOf(i))+`).dataset.status`); got != "pending" {
			t.Errorf("%s before their wave: status %q, want pending", people[i].name, got)
		}
		want := "Pending|Waits for wave 2"
		if i == 6 {
			want = "Pending|Waits for wave 3"
		}
		if got := chips(i); got != want {
			t.Errorf("%s before their wave: chips %q, want %q", people[i].name, got, want)
		}
	}
	at1 := nextAt()
	if at1 == "" {
		t.Fatal("no next wave time after wave 1")
	}
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#quorum time").getAttribute("datetime")`); got != at1 {
		t.Errorf("next wave time on the board %q, want the group's next_at %q", got, at1)
	}
	if !webtest.Eval[bool](t, ctx, `!!document.querySelector("#next-wave")`) {
		t.Error("no Start next wave now button while a wave is due")
	}
	b.axeClean(t, "callout, wave 1 sent")
	webtest.SaveScreenshot(t, ctx, "board-callout-wave1.png", webtest.DesktopWidth, webtest.DesktopHeight)
	// On a phone the callout's line, chips and buttons fit the screen.
	webtest.SetViewport(t, ctx, 360, webtest.PhoneHeight)
	if bad := webtest.Eval[[]string](t, ctx, overflowJS); len(bad) > 0 {
		t.Errorf("the callout at 360 px sticks out of the screen:\n  %s", strings.Join(bad, "\n  "))
	}
	webtest.SaveScreenshot(t, ctx, "phone-360-callout.png", 360, webtest.PhoneHeight)
	webtest.SetViewport(t, ctx, webtest.DesktopWidth, webtest.DesktopHeight)

	// Ana says yes: selected. Ben declines.
	answer(0, "1")
	answer(1, "2")
	wait("1 of 2 filled", `document.querySelector("#quorum strong").textContent === "1 of 2 filled"`)
	wait("Ana selected", has(0, `[data-flag="selected"]`))
	if got := chips(0); !strings.Contains(got, "Selected") || !strings.Contains(got, "Wave 1") {
		t.Errorf("Ana's chips %q", got)
	}
	wait("Ben's answer", `(document.querySelector(`+webtest.JS(rowOf(1))+`) || {}).textContent?.includes("Can't")`)
	if webtest.Eval[bool](t, ctx, has(1, `[data-flag="selected"]`)+` || `+has(1, `[data-flag="standby"]`)) {
		t.Errorf("Ben declined but shows %q", chips(1))
	}

	// The dispatcher starts wave 2 now: Dana, Eli and Fatima are texted.
	do("start the next wave now", chromedp.Click(chromedp.CSS("#next-wave")))
	wait("wave 2 sent", `document.querySelector("#quorum").textContent.startsWith("1 of 2 filled — wave 2 sent; next wave at ")`)
	for i := 3; i < 6; i++ {
		wait(people[i].name+" in wave 2", fmt.Sprintf(`[...document.querySelectorAll(%s)].some((c) => c.textContent === "Wave 2")`, webtest.JS(rowOf(i)+" .chips .chip")))
	}
	if got := chips(6); got != "Pending|Waits for wave 3" {
		t.Errorf("Gus after wave 2: chips %q", got)
	}
	if at2 := nextAt(); at2 == "" || at2 == at1 {
		t.Errorf("next wave time after wave 2 = %q (was %q)", at2, at1)
	} else {
		wait("the new next wave time", `document.querySelector("#quorum time").getAttribute("datetime") === `+webtest.JS(at2))
	}

	// Dana's yes fills the quota: Gus is not needed, no wave is due.
	answer(3, "1")
	wait("2 of 2 filled", `document.querySelector("#quorum strong").textContent === "2 of 2 filled" && document.querySelector("#quorum").classList.contains("is-met")`)
	wait("Gus not needed", `document.querySelector(`+webtest.JS(rowOf(6))+`).dataset.status === "not_needed"`)
	wait("no next wave", `!document.querySelector("#next-wave") && !document.querySelector("#quorum time")`)
	if got := chips(6); got != "Not needed" {
		t.Errorf("Gus after the fill: chips %q", got)
	}
	if got := text("#quorum"); !strings.Contains(got, "1 person not needed") {
		t.Errorf("quorum line %q does not count the person not needed", got)
	}
	// Eli's yes after the fill: standby.
	answer(4, "1")
	wait("Eli on standby", has(4, `[data-flag="standby"]`))
	wait("1 on standby said", `document.querySelector("#quorum").textContent.includes("1 on standby")`)
	// A standby person can be selected or released by hand; a selected
	// one released; someone who did not say yes neither.
	for i, want := range map[int]string{0: "Release", 1: "", 2: "", 3: "Release", 4: "Select|Release", 5: "", 6: ""} {
		got := webtest.Eval[string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll(%s)].map((b) => b.firstChild.textContent).join("|")`,
			webtest.JS(rowOf(i)+" button.select, "+rowOf(i)+" button.release")))
		if got != want {
			t.Errorf("%s: buttons %q, want %q", people[i].name, got, want)
		}
	}
	b.axeClean(t, "callout, filled with one on standby")
	webtest.SaveScreenshot(t, ctx, "board-callout-filled.png", webtest.DesktopWidth, webtest.DesktopHeight)

	// Release Ana: Eli, the earliest standby, takes her place.
	do("release Ana", chromedp.Click(chromedp.CSS(rowOf(0)+" button.release")))
	wait("Eli selected", has(4, `[data-flag="selected"]`)+` && !`+has(4, `[data-flag="standby"]`))
	wait("Ana released", `!`+has(0, `[data-flag="selected"]`)+` && `+has(0, `button.select`))
	// The counts follow (a view may show the flags a moment before its
	// counts: they are two reads on the server; the next change event
	// brings both).
	wait("still 2 of 2 filled, nobody on standby", `document.querySelector("#quorum strong").textContent === "2 of 2 filled" && `+
		`!document.querySelector("#quorum").textContent.includes("standby")`)
	// Select Ana again by hand (beyond the count: the dispatcher's call).
	do("select Ana", chromedp.Click(chromedp.CSS(rowOf(0)+" button.select")))
	wait("Ana selected again", has(0, `[data-flag="selected"]`)+` && `+has(0, `button.release`))
	if !webtest.Eval[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded; the board must follow the callout live")
	}
	b.axeClean(t, "callout, after selecting and releasing by hand")

	var g struct {
		Counts struct {
			Selected  int `json:"selected"`
			Standby   int `json:"standby"`
			NotNeeded int `json:"not_needed"`
		} `json:"counts"`
		Recipients []struct {
			Number   string `json:"number"`
			Selected bool   `json:"selected"`
			Standby  bool   `json:"standby"`
		} `json:"recipients"`
	}
	getJSON(t, base+"/v1/groups/"+gid, key, &g)
	if g.Counts.Selected != 3 || g.Counts.Standby != 0 || g.Counts.NotNeeded != 1 {
		t.Errorf("counts %+v", g.Counts)
	}
	for i, r := range g.Recipients {
		if want := i == 0 || i == 3 || i == 4; r.Selected != want || r.Standby {
			t.Errorf("%s: selected %v standby %v, want selected %v", people[i].name, r.Selected, r.Standby, want)
		}
	}

	// Each hand on the callout is audited with who did it.
	for action, wantTarget := range map[string]string{"group.wave_started": gid, "recipient.released": gid + " #0 ", "recipient.selected": gid + " #0 "} {
		var log struct {
			Entries []struct {
				Actor  struct{ Type, Name string }
				Action string
				Target string
			}
		}
		getJSON(t, base+"/v1/audit?action="+action, key, &log)
		if len(log.Entries) != 1 || log.Entries[0].Actor.Type != "user" || log.Entries[0].Actor.Name != "Dana Dispatcher" ||
			!strings.HasPrefix(log.Entries[0].Target, wantTarget) {
			t.Errorf("audit %s: %+v", action, log.Entries)
		}
	}
	// The audit page says it in words, for an admin.
	do("sign out", chromedp.Click(chromedp.CSS("#signout")))
	b.signIn(base+"/", key)
	do("open the audit trail", chromedp.Navigate(base+"/#/audit"))
	entry := func(action string) string {
		return `(document.querySelector('#audit-rows tr[data-action="` + action + `"]') || {}).textContent || ""`
	}
	wait("the audit trail", `location.hash === "#/audit" && `+entry("group.wave_started")+` !== ""`)
	for action, want := range map[string]string{
		"group.wave_started": "Dana Dispatcher started the next wave of ",
		"recipient.released": "Dana Dispatcher released recipient …0401 of ",
		"recipient.selected": "Dana Dispatcher selected recipient …0401 of ",
	} {
		if got := webtest.Eval[string](t, ctx, entry(action)); !strings.Contains(got, want) {
			t.Errorf("audit page, %s: %q, want it to say %q", action, got, want)
		}
	}
	if dups := srv.Sim().Duplicates(); len(dups) != 0 {
		t.Fatalf("duplicate sends: %+v", dups)
	}
}
