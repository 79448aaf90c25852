package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardContactConsent (issue 32 item 3): the contacts page shows each
// contact's consent state, and opening it shows the history the import's
// consent column wrote; an import that tries to opt a suppressed number
// back in says it kept the opt-out.
func TestBoardContactConsent(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo := "+15550100311", "+15550100312"
	srv, key := startServer(t, "consent", server.Config{})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signIn(srv.URL()+"/", key)

	do("open contacts", chromedp.Click(chromedp.CSS("#nav-contacts")))
	wait("the import form", `!!document.querySelector("#import-form")`)
	webtest.Fill(t, ctx, "#import-csv", "number,name,consent\n"+ada+",Ada,opted_in\n"+bo+",Bo,opted_out\n")
	do("import", chromedp.Click(chromedp.CSS("#import-submit")))
	wait("two contacts listed", `document.querySelectorAll("#contacts-body tr.contact").length === 2`)
	state := func(number string) string {
		return `(document.querySelector('#contacts-body tr.contact[data-number="` + number + `"] .contact-consent summary') || {}).textContent || ""`
	}
	wait("Ada opted in", state(ada)+`.startsWith("Opted in")`)
	wait("Bo opted out", state(bo)+`.startsWith("Opted out")`)

	do("open Ada's consent history", chromedp.Click(chromedp.CSS(`#contacts-body tr.contact[data-number="`+ada+`"] .contact-consent summary`)))
	wait("Ada's history", `!!document.querySelector('#contacts-body tr.contact[data-number="`+ada+`"] li.consent-entry')`)
	if got := text(`#contacts-body tr.contact[data-number="` + ada + `"] .consent-history`); !strings.Contains(got, "Opted in (import") {
		t.Fatalf("Ada's consent history = %q", got)
	}

	webtest.Fill(t, ctx, "#import-csv", "number,consent\n"+bo+",opted_in\n")
	do("re-import", chromedp.Click(chromedp.CSS("#import-submit")))
	wait("the kept opt-out reported", `!!document.querySelector("#import-consent-kept")`)
	if got := text("#import-consent-kept"); !strings.Contains(got, "still opted out") {
		t.Fatalf("import report = %q", got)
	}
	wait("Bo still opted out", state(bo)+`.startsWith("Opted out")`)
}
