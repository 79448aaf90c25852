package web_test

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardSendFormHasEverything is issue 28 item 1, as a dispatcher in
// Chicago on the real server: from a saved template, to a crew, a contact
// picked by name and a tag, with a
// quorum, a follow-up, an escalation to another crew, send_at in 5 s typed
// in local time, quiet hours off, priority critical and a media URL. The
// preview says what happens when; the group is created with all of it,
// says "Scheduled", goes out at its time, the simulator's answers count
// and the CSV export names each person's chosen option.
func TestBoardSendFormHasEverything(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo, cy, dee, sue := "+15550100701", "+15550100702", "+15550100703", "+15550100704", "+15550100709"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{ada: "reply:1", bo: "reply:1", cy: "reply:1", dee: "reply:1"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	createVia(t, srv.URL()+"/v1/templates", key, map[string]any{"name": "Call", "text": "Crew call 7am: {{name}}?",
		"responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}}})
	createVia(t, srv.URL()+"/v1/crews", key, map[string]any{"name": "Night", "members": []string{ada, bo}})
	createVia(t, srv.URL()+"/v1/crews", key, map[string]any{"name": "Supervisors", "members": []string{sue}})
	createVia(t, srv.URL()+"/v1/contacts", key, map[string]any{"number": cy, "name": "Cy Young"})
	createVia(t, srv.URL()+"/v1/contacts", key, map[string]any{"number": dee, "name": "Dee Dee", "tags": []string{"day"}})

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	webtest.SetTimezone(t, ctx, "America/Chicago")
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")
	do("open the form", chromedp.Navigate(srv.URL()+"/#/new"))
	wait("the options", `document.querySelectorAll("#crew-picks input.crew-choice").length === 2 && document.querySelectorAll("#escalate-crews input").length === 2 && !document.querySelector("#template-field").hidden`)
	if got := text("#send-at-help"); !strings.Contains(got, "America/Chicago") {
		t.Errorf("send_at help %q does not name the viewer's zone", got)
	}
	b.axeClean(t, "the full New message form")

	webtest.Type(t, ctx, "#from", "+15550100000")
	webtest.Eval[bool](t, ctx, `(() => { const s = document.querySelector("#template"); s.value = [...s.options].find(o => o.textContent === "Call").value; s.dispatchEvent(new Event("change")); return true; })()`)
	wait("the template filled", `document.querySelector("#text").value === "Crew call 7am: {{name}}?" && document.querySelector("#responses").value === "1=Coming\n2=Cannot"`)
	clickLabel := func(scope, label string) {
		t.Helper()
		webtest.Eval[bool](t, ctx, `(() => { [...document.querySelectorAll(`+webtest.JS(scope+" label")+`)].find(l => l.textContent.startsWith(`+webtest.JS(label)+`)).querySelector("input").click(); return true; })()`)
	}
	clickLabel("#crew-picks", "Night")
	webtest.Type(t, ctx, "#contact-filter", "young")
	wait("the filter narrows to Cy", `[...document.querySelectorAll("#contact-picks label")].filter(l => !l.hidden).length === 1`)
	clickLabel("#contact-picks", "Cy Young")
	webtest.Fill(t, ctx, "#tags", "day")
	webtest.Fill(t, ctx, "#quorum-response", "1")
	webtest.Fill(t, ctx, "#quorum-count", "4")
	webtest.Fill(t, ctx, "#followup-after", "1h")
	webtest.Fill(t, ctx, "#followup-max", "1")
	webtest.Fill(t, ctx, "#escalate-after", "2h")
	clickLabel("#escalate-crews", "Supervisors")
	chicago, _ := time.LoadLocation("America/Chicago")
	at := time.Now().Add(6 * time.Second).Truncate(time.Second)
	webtest.Fill(t, ctx, "#send-at", at.In(chicago).Format("2006-01-02T15:04:05"))
	do("quiet hours off", chromedp.Click(chromedp.CSS("#quiet-off")))
	do("critical", chromedp.Click(chromedp.CSS("#priority-critical")))
	webtest.Fill(t, ctx, "#media-urls", "https://example.com/map.png")

	do("preview", chromedp.Click(chromedp.CSS("#preview-button")))
	wait("the preview", `((document.querySelector("#preview-when") || {}).textContent || "").length > 0`)
	when := text("#preview-when")
	rem, esc := at.Add(time.Hour).In(chicago), at.Add(2*time.Hour).In(chicago)
	for _, want := range []string{"4 at ", "reminder at " + rem.Format("15:04"), "to whoever has not answered", "escalate to Supervisors at " + esc.Format("15:04"), "quiet hours off", "critical"} {
		if !strings.Contains(when, want) {
			t.Errorf("preview %q lacks %q", when, want)
		}
	}
	b.axeClean(t, "the form with its preview")
	webtest.SaveScreenshot(t, ctx, "board-new-message.png", webtest.DesktopWidth, webtest.DesktopHeight)
	do("send", chromedp.Click(chromedp.CSS("#submit")))
	wait("scheduled", `location.hash.startsWith("#/groups/grp_") && /^Scheduled for/.test((document.querySelector("#schedule") || {}).textContent || "")`)
	id := strings.TrimPrefix(webtest.Eval[string](t, ctx, `location.hash`), "#/groups/")
	if n := len(srv.Sim().Ledger()); n != 0 {
		t.Fatalf("sent %d before send_at", n)
	}
	var g struct {
		SendAt     time.Time `json:"send_at"`
		Priority   string    `json:"priority"`
		QuietHours string    `json:"quiet_hours"`
		MediaURLs  []string  `json:"media_urls"`
		Quorum     struct {
			Response string
			Count    int
		}
		Followup struct {
			After string
			Max   int
		}
		Escalate struct {
			After string
			Crews []string
		}
	}
	getJSON(t, srv.URL()+"/v1/groups/"+id, key, &g)
	if !g.SendAt.Equal(at) || g.Priority != "critical" || g.QuietHours != "off" || g.Quorum.Response != "1" || g.Quorum.Count != 4 ||
		g.Followup.After != "1h" || g.Followup.Max != 1 || g.Escalate.After != "2h" || len(g.Escalate.Crews) != 1 || g.Escalate.Crews[0] != "Supervisors" {
		t.Errorf("group as created: %+v (send_at want %v)", g, at)
	}
	// It goes out at its time, and the simulator's answers count.
	time.Sleep(time.Until(at))
	wait("all four answered 1", counter("response_1")+` === "4"`)
	if got := text("#schedule"); got != "" {
		t.Errorf("still says %q after it went out", got)
	}
	// The export names the chosen option of each of the four.
	raw := webtest.Eval[string](t, ctx, `fetch(document.querySelector("#export-csv").href, {credentials: "same-origin"}).then(r => r.text())`, chromedp.EvalAwaitPromise)
	rows, err := csv.NewReader(strings.NewReader(raw)).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("csv %v: %q", err, raw)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		if r[col["response"]] != "1" || r[col["response_label"]] != "Coming" || r[col["selected"]] != "true" || r[col["channel"]] != "mms" {
			t.Errorf("csv row for %s: response %q %q selected %q channel %q", r[col["number"]], r[col["response"]], r[col["response_label"]], r[col["selected"]], r[col["channel"]])
		}
	}
	if dups := srv.Sim().Duplicates(); len(dups) != 0 {
		t.Fatalf("duplicate sends: %+v", dups)
	}
}
