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

// TestBoardTitleRendersTemplate is issue 28 item 5, as a dispatcher: a
// group sent from a template is titled with the message as people read
// it, each variable shown as a placeholder ("Hi ‹first name›, crew call
// at ‹site›"), on the list card, the group page and the tab title, not
// with the template source ("Hi {{first_name}}, …"). (Two people get
// different texts, so the group's text is the template.)
func TestBoardTitleRendersTemplate(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000",
		"recipients": []map[string]any{{"number": "+15550100501", "name": "Ada Lovelace"}, {"number": "+15550100502", "name": "Bo Diddley"}},
		"text":       "Hi {{first_name}}, crew call 7am at {{ fields.site | default \"the depot\" }}.\nBring boots."})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	const want = "Hi ‹first name›, crew call 7am at ‹site›."
	link := `#group-list li[data-group-id="` + id + `"] .card-link`
	wait("the card", `!!document.querySelector(`+webtest.JS(link)+`)`)
	if got := text(link); got != want {
		t.Errorf("card title %q, want %q", got, want)
	}
	do("open it", chromedp.Click(chromedp.CSS(link)))
	wait("the group page", `!!document.querySelector("#group-title")`)
	if got := text("#group-title"); got != want {
		t.Errorf("group title %q, want %q", got, want)
	}
	if got := webtest.Eval[string](t, ctx, `document.title`); strings.Contains(got, "{{") || !strings.HasPrefix(got, "Hi ‹first name›") {
		t.Errorf("tab title %q", got)
	}
	// The template itself is still shown, for what each person got.
	if got := text("#message-text"); !strings.Contains(got, "{{first_name}}") {
		t.Errorf("message text %q does not show the template", got)
	}
}
