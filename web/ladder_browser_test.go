package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardFollowupLadder (issue 31 item 1): a template saved on the
// templates page holds a ladder; "Use this template" fills the New message
// form's ladder; a malformed line is caught by the form; the group is
// created with the steps, and the preview says when each goes.
func TestBoardFollowupLadder(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	do("open templates", chromedp.Click(chromedp.CSS("#nav-templates")))
	wait("the template form", `!!document.querySelector("#template-followup")`)
	webtest.Fill(t, ctx, "#template-name", "Ladder")
	webtest.Fill(t, ctx, "#template-text", "Crew call 7am?")
	webtest.Fill(t, ctx, "#template-followup", "10m pigeon")
	do("save a bad ladder", chromedp.Click(chromedp.CSS("#template-save")))
	wait("the ladder error", `document.querySelector("#template-followup").getAttribute("aria-invalid") === "true"`)
	webtest.Fill(t, ctx, "#template-followup", "10m sms\n30m sms Last call")
	do("save", chromedp.Click(chromedp.CSS("#template-save")))
	sel := `#templates-body tr.template[data-name="Ladder"]`
	wait("the template listed", `!!document.querySelector(`+webtest.JS(sel)+`)`)

	do("use it", chromedp.Click(chromedp.CSS(sel+` a.template-use`)))
	wait("the ladder filled", `(document.querySelector("#followup-steps") || {}).value === "10m sms\n30m sms Last call"`)
	webtest.Type(t, ctx, "#from", "+15550100000")
	webtest.Fill(t, ctx, "#to", "+15550100801")
	webtest.Fill(t, ctx, "#followup-steps", "10m sms\nsoon")
	do("send a bad ladder", chromedp.Click(chromedp.CSS("#submit")))
	wait("the form's ladder error", `document.querySelector("#followup-steps").getAttribute("aria-invalid") === "true" && document.querySelector("#followup-error").textContent.includes("Line 2")`)
	webtest.Fill(t, ctx, "#followup-steps", "10m sms\n30m sms Last call")
	do("preview", chromedp.Click(chromedp.CSS("#preview-button")))
	wait("the preview", `((document.querySelector("#preview-when") || {}).textContent || "").includes("follow-up sms at")`)
	if got := text("#preview-when"); !strings.Contains(got, ", then sms at") {
		t.Errorf("preview %q does not name both steps", got)
	}
	do("send", chromedp.Click(chromedp.CSS("#submit")))
	wait("the group page", `location.hash.startsWith("#/groups/grp_")`)
	id := strings.TrimPrefix(webtest.Eval[string](t, ctx, `location.hash`), "#/groups/")
	var g struct {
		Followup struct {
			Max   int
			Steps []struct{ After, Channel, Text string }
		}
	}
	getJSON(t, srv.URL()+"/v1/groups/"+id, key, &g)
	if g.Followup.Max != 2 || len(g.Followup.Steps) != 2 || g.Followup.Steps[1].After != "30m" || g.Followup.Steps[1].Text != "Last call" {
		t.Fatalf("group followup = %+v", g.Followup)
	}
}
