package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardContactEmail (issue 31 item 4): the contact form takes an email,
// the list shows it, and editing the contact shows it back.
func TestBoardContactEmail(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada := "+15550100321"
	srv, key := startServer(t, "contactemail", server.Config{})
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signIn(srv.URL()+"/", key)

	do("open contacts", chromedp.Click(chromedp.CSS("#nav-contacts")))
	wait("the contact form", `!!document.querySelector("#contact-form #c-email")`)
	webtest.Fill(t, ctx, "#c-number", ada)
	webtest.Fill(t, ctx, "#c-name", "Ada")
	webtest.Fill(t, ctx, "#c-email", "not an address")
	do("save a bad email", chromedp.Click(chromedp.CSS("#contact-save")))
	wait("the email error", `document.querySelector("#c-email").getAttribute("aria-invalid") === "true" && document.querySelector("#c-email-error").textContent !== ""`)
	webtest.Fill(t, ctx, "#c-email", "ada@example.org")
	do("save", chromedp.Click(chromedp.CSS("#contact-save")))
	row := `document.querySelector('#contacts-body tr.contact[data-number="` + ada + `"] .contact-email')`
	wait("the email listed", `(`+row+` || {}).textContent === "ada@example.org"`)
	do("edit", chromedp.Click(chromedp.CSS(`#contacts-body tr.contact[data-number="`+ada+`"] .edit-contact`)))
	wait("the email in the form", `document.querySelector("#c-email").value === "ada@example.org"`)
}
