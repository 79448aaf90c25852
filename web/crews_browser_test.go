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

// TestBoardCrewsEndToEnd drives the real server in demo mode from headless
// Chromium through what a dispatcher does (issue 13): import contacts from
// CSV (a bad line is reported by number), make two overlapping crews,
// send to both with response options after a preview, and watch the tally
// per option update live. The simulator's ledger then holds one message
// per person, each with their own name.
func TestBoardCrewsEndToEnd(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo, cy := "+15550100301", "+15550100302", "+15550100303"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{20, 120}
	faults.Script = map[string]string{ada: "reply:1", bo: "reply:Cannot", cy: "reply:yes"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text

	b.signIn(srv.URL()+"/", key)

	// Import: three good lines, one bad number reported by its line.
	do("open contacts", chromedp.Click(chromedp.CSS("#nav-contacts")))
	wait("the import form", `!!document.querySelector("#import-form")`)
	webtest.Fill(t, ctx, "#import-csv", "number,name,tags,site\n"+ada+",Ada Lovelace,night,North\n"+bo+",Bo Diddley,night;day,\n"+cy+",Cy Young,day,South\nnot-a-number,Nobody,,\n")
	do("import", chromedp.Click(chromedp.CSS("#import-submit")))
	wait("the import report", `(document.querySelector("#import-summary") || {}).textContent === "Imported: 3 created, 0 updated, 0 unchanged."`)
	if got := text("#import-errors"); !strings.Contains(got, "Line 5:") {
		t.Fatalf("import errors = %q", got)
	}
	wait("three contacts listed", `document.querySelectorAll("#contacts-body tr.contact").length === 3`)
	webtest.Type(t, ctx, "#contact-search", "young")
	wait("search narrows to Cy", `document.querySelectorAll("#contacts-body tr.contact").length === 1`)

	// Two crews that share Bo.
	do("open crews", chromedp.Click(chromedp.CSS("#nav-crews")))
	wait("the crew form", `document.querySelectorAll("#crew-members input.crew-pick").length === 3`)
	mkCrew := func(name string, who ...string) {
		t.Helper()
		webtest.Fill(t, ctx, "#crew-name", name)
		for _, n := range who {
			webtest.Eval[bool](t, ctx, `(() => { const box = [...document.querySelectorAll("#crew-members label")]`+
				`.find((l) => l.textContent.includes(`+webtest.JS(n)+`)).querySelector("input"); box.checked = true; return true; })()`)
		}
		do("create crew "+name, chromedp.Click(chromedp.CSS("#crew-save")))
		wait("crew "+name+" listed", `!!document.querySelector('#crews-body tr.crew[data-name=`+webtest.JS(name)+`]')`)
	}
	mkCrew("Night", ada, bo)
	mkCrew("Day", bo, cy)

	// Send to both crews with response options, after a preview.
	do("open the form", chromedp.Click(chromedp.CSS("#nav-new")))
	wait("crews offered", `document.querySelectorAll("#crew-picks input.crew-choice").length === 2`)
	webtest.Type(t, ctx, "#from", "+15550100000")
	webtest.Eval[bool](t, ctx, `(() => { document.querySelectorAll("#crew-picks input.crew-choice").forEach((b) => b.click()); return true; })()`)
	webtest.Fill(t, ctx, "#text", "Hi {{first_name}}, crew call 6am at {{fields.site | default \"the depot\"}}.")
	webtest.Fill(t, ctx, "#responses", "1=Coming\n2=Cannot")
	do("preview", chromedp.Click(chromedp.CSS("#preview-button")))
	wait("the preview", `((document.querySelector("#preview-summary") || {}).textContent || "").startsWith("3 people will get this message")`)
	if got := text("#preview-samples"); !strings.Contains(got, "Hi Ada, crew call 6am at North.\nReply 1 Coming, 2 Cannot") {
		t.Fatalf("preview samples = %q", got)
	}
	if n := len(srv.Sim().Ledger()); n != 0 {
		t.Fatalf("the preview sent %d messages", n)
	}
	do("send", chromedp.Click(chromedp.CSS("#submit")))
	wait("the group page", `location.hash.startsWith("#/groups/grp_") && document.querySelectorAll("#roster-body tr.recipient").length === 3`)
	webtest.Eval[bool](t, ctx, `window.__sameDocument = true`)
	for name, want := range map[string]string{"response_1": "2", "response_2": "1", "no_reply": "0", "delivered": "3"} {
		wait("counter "+name+" = "+want, counter(name)+" === "+webtest.JS(want))
	}
	if !webtest.Eval[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded; the tally must update live")
	}
	if webtest.Eval[bool](t, ctx, `!!document.querySelector('[data-counter="ack_yes"]')`) {
		t.Error("a group with response options still shows the Yes tile")
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("#tally-bar .tally-seg").length`); n != 2 {
		t.Errorf("tally bar has %d segments, want 2", n)
	}
	if got := text(row(ada) + " .col-who"); !strings.HasPrefix(got, "Ada Lovelace") {
		t.Errorf("names first: %q", got)
	}
	if got := text(row(ada) + " .sent-text"); !strings.HasPrefix(got, "Hi Ada, crew call 6am at North.") {
		t.Errorf("Ada's own text shown as %q", got)
	}
	webtest.Eval[bool](t, ctx, `(() => { const s = document.querySelector("#roster-filter"); s.value = "answer:2"; s.dispatchEvent(new Event("change")); return true; })()`)
	wait("one row answered 2", `document.querySelectorAll("#roster-body tr.recipient").length === 1 && !!document.querySelector(`+webtest.JS(row(bo))+`)`)
	_, shot := webtest.SaveScreenshot(t, ctx, "board-crews.png", webtest.DesktopWidth, webtest.DesktopHeight)
	t.Logf("screenshot: %s", shot)

	// One message per person, though Bo is in both crews; each with their name.
	ledger := srv.Sim().Ledger()
	if len(ledger) != 3 {
		t.Fatalf("ledger has %d sends, want 3: %+v", len(ledger), ledger)
	}
	texts := map[string]string{}
	for _, s := range ledger {
		texts[s.To] = s.Text
	}
	for num, want := range map[string]string{ada: "Hi Ada, crew call 6am at North.", bo: "Hi Bo, crew call 6am at the depot.", cy: "Hi Cy, crew call 6am at South."} {
		if !strings.HasPrefix(texts[num], want+"\nReply 1 Coming, 2 Cannot") {
			t.Errorf("text to %s = %q", num, texts[num])
		}
	}
	if dups := srv.Sim().Duplicates(); len(dups) != 0 {
		t.Fatalf("duplicate sends: %+v", dups)
	}
}
