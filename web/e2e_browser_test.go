package web_test

import (
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

// TestBoardEndToEndDemo drives the real server in demo mode — SQLite, the
// in-process simulator, signed Telnyx webhooks through our own endpoint —
// from a real headless Chromium: sign in, create a group through the form,
// watch the counters reach final states without reloading, and resolve the
// unconfirmed recipient through the confirmation dialog.
func TestBoardEndToEndDemo(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	crew := []string{"+15550100201", "+15550100202", "+15550100203", "+15550100204", "+15550100205"}
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{20, 200}
	faults.Script = map[string]string{
		crew[0]: "deliver",
		crew[1]: "reply:YES",
		crew[2]: "fail:40008",
		crew[3]: "accept_timeout:silent",
		crew[4]: "unknown",
	}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})

	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do

	b.signIn(srv.URL()+"/", key)

	do("open the form", chromedp.Click(chromedp.CSS("#nav-new")))
	wait("the create form", `!!document.querySelector("#create-form")`)
	webtest.Type(t, ctx, "#from", "+15550100000")
	webtest.Fill(t, ctx, "#to", strings.Join(crew, "\n"))
	webtest.Fill(t, ctx, "#text", "Crew call 6am at the north gate. Reply YES to confirm.")
	do("create the group", chromedp.Click(chromedp.CSS("#submit")))
	wait("the new group page", `location.hash.startsWith("#/groups/grp_") && document.querySelectorAll("#roster-body tr.recipient").length === 5`)
	webtest.Eval[bool](t, ctx, `window.__sameDocument = true`)

	// Final states arrive over SSE: delivered (2: one plain, one that
	// replied), failed, unknown, unconfirmed (the ambiguous send), replied.
	for name, want := range map[string]string{"delivered": "2", "failed": "1", "unknown": "1", "unconfirmed": "1", "ack_yes": "1", "ack_no": "0",
		"replied": "0", "no_reply": "4", "in_progress": "0"} {
		wait("counter "+name+" = "+want, counter(name)+" === "+webtest.JS(want))
	}
	if !webtest.Eval[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded; live updates must not reload")
	}
	if got := webtest.Eval[string](t, ctx, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, webtest.JS(row(crew[1])+" .reply-text"))); got != "YES" {
		t.Errorf("reply shown as %q", got)
	}

	do("open the resolve dialog", chromedp.Click(chromedp.CSS(row(crew[3])+" button.resolve")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#confirm-dialog").textContent`); !strings.Contains(got, "Check the handset") {
		t.Errorf("dialog does not ask to check the handset first: %q", got)
	}
	do("confirm delivered", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delivered"]`)))
	wait("the recipient delivered", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.status === "delivered"`, webtest.JS(row(crew[3]))))
	wait("delivered counter 3", counter("delivered")+` === "3"`)
	wait("unconfirmed counter 0", counter("unconfirmed")+` === "0"`)
	wait("group complete", `!!document.querySelector('.group-head [data-group-status="complete"]')`)
	_, shot := webtest.SaveScreenshot(t, ctx, "board-e2e-demo.png", webtest.DesktopWidth, webtest.DesktopHeight)
	t.Logf("screenshot: %s", shot)

	// The simulator's ledger: every recipient sent to exactly once — the
	// resolution records what the operator learned; it sends nothing.
	if dups := srv.Sim().Duplicates(); len(dups) != 0 {
		t.Fatalf("duplicate sends: %+v", dups)
	}
	if n := len(srv.Sim().Ledger()); n != 5 {
		t.Fatalf("ledger has %d sends, want 5", n)
	}
}
