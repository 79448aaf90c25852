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

// TestBoardTemplates is issue 28 item 2 in real Chromium against the real
// server, signed in as a dispatcher: the #/templates page lists, creates
// (a server field error lands on its field), edits and deletes saved
// templates, and "Use this template" opens the New message form filled
// with its text and responses. axe stays clean on the page.
func TestBoardTemplates(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	do("open templates", chromedp.Click(chromedp.CSS("#nav-templates")))
	wait("the templates page", `location.hash === "#/templates" && !!document.querySelector("#template-form") && !!document.querySelector("#templates-list p")`)
	if got := text("#templates-list"); !strings.Contains(got, "No templates yet") {
		t.Errorf("empty list says %q", got)
	}
	b.axeClean(t, "templates, empty")

	// An unknown variable: the server's message lands on the text field.
	webtest.Fill(t, ctx, "#template-name", "Crew call")
	webtest.Fill(t, ctx, "#template-text", "Hi {{nope}}")
	do("save a bad one", chromedp.Click(chromedp.CSS("#template-save")))
	wait("the text error", `document.querySelector("#template-text").getAttribute("aria-invalid") === "true" && document.activeElement.id === "template-text"`)
	if got := text("#template-text-error"); !strings.Contains(got, "nope") {
		t.Errorf("text error %q does not name the variable", got)
	}
	webtest.Fill(t, ctx, "#template-text", "Hi {{first_name}}, crew call 7am at the north gate?")
	webtest.Fill(t, ctx, "#template-responses", "1=Coming\n2=Cannot")
	do("save", chromedp.Click(chromedp.CSS("#template-save")))
	sel := `#templates-body tr.template[data-name="Crew call"]`
	wait("the template listed", `!!document.querySelector(`+webtest.JS(sel)+`)`)
	if got := text(sel); !strings.Contains(got, "1 Coming · 2 Cannot") || !strings.Contains(got, "crew call 7am") {
		t.Errorf("row %q", got)
	}
	if webtest.Eval[bool](t, ctx, `document.querySelector("#template-text").hasAttribute("aria-invalid")`) {
		t.Error("the text field stayed invalid after a good save")
	}
	b.axeClean(t, "templates, one listed")
	webtest.SaveScreenshot(t, ctx, "board-templates.png", webtest.DesktopWidth, webtest.DesktopHeight)

	// Edit: the form fills, saves with PATCH, the row shows the change.
	do("edit", chromedp.Click(chromedp.CSS(sel+` button.template-edit`)))
	wait("the edit form", `document.querySelector("#template-form-title").textContent === "Edit Crew call" && document.querySelector("#template-text").value.startsWith("Hi {{first_name}}")`)
	if got := webtest.Eval[string](t, ctx, `document.activeElement.id`); got != "template-name" {
		t.Errorf("focus after Edit on %q, want the name field", got)
	}
	b.axeClean(t, "templates, editing")
	webtest.Fill(t, ctx, "#template-text", "Hi {{first_name}}, crew call 6am at the north gate?")
	do("save the edit", chromedp.Click(chromedp.CSS("#template-save")))
	wait("the edit listed", `document.querySelector(`+webtest.JS(sel)+`).textContent.includes("crew call 6am")`)
	wait("the form back to New", `document.querySelector("#template-form-title").textContent === "New template"`)
	var list struct {
		Templates []struct{ ID, Name, Text string } `json:"templates"`
	}
	getJSON(t, srv.URL()+"/v1/templates", key, &list)
	if len(list.Templates) != 1 || !strings.Contains(list.Templates[0].Text, "6am") {
		t.Fatalf("templates after the edit: %+v", list.Templates)
	}
	id := list.Templates[0].ID

	// Use this template: the New message form, filled.
	do("use it", chromedp.Click(chromedp.CSS(sel+` a.template-use`)))
	wait("the filled form", `location.hash === "#/new?template=`+id+`" && document.querySelector("#template")?.value === "`+id+`" && (document.querySelector("#text")?.value || "").includes("crew call 6am") && document.querySelector("#responses")?.value === "1=Coming\n2=Cannot"`)

	// Delete through the confirmation dialog.
	do("back to templates", chromedp.Navigate(srv.URL()+"/#/templates"))
	wait("listed again", `!!document.querySelector(`+webtest.JS(sel)+`)`)
	do("delete", chromedp.Click(chromedp.CSS(sel+` button.template-delete`)))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delete"]`)))
	wait("gone", `!document.querySelector(`+webtest.JS(sel)+`) && (document.querySelector("#templates-list").textContent || "").includes("No templates yet")`)
	getJSON(t, srv.URL()+"/v1/templates", key, &list)
	if len(list.Templates) != 0 {
		t.Fatalf("templates after delete: %+v", list.Templates)
	}
}
