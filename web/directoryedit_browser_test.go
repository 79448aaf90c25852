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

// TestBoardEditsCrewsAndContacts is issue 28 item 3, as a dispatcher: a
// crew is renamed and its members changed where it is listed (the API's
// PATCH), and a contact is deleted from the contacts page through a
// confirmation; the API agrees with what the page shows.
func TestBoardEditsCrewsAndContacts(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada, bo, cy := "+15550100801", "+15550100802", "+15550100803"
	srv, key := startServer(t, "e2e", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	for n, name := range map[string]string{ada: "Ada Lovelace", bo: "Bo Diddley", cy: "Cy Young"} {
		createVia(t, srv.URL()+"/v1/contacts", key, map[string]any{"number": n, "name": name})
	}
	crewID := createVia(t, srv.URL()+"/v1/crews", key, map[string]any{"name": "Night", "members": []string{ada, bo}})
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")

	do("open crews", chromedp.Navigate(srv.URL()+"/#/crews"))
	row := `#crews-body tr.crew[data-name="Night"]`
	wait("the crew", `!!document.querySelector(`+webtest.JS(row+` button.crew-edit`)+`)`)
	do("edit it", chromedp.Click(chromedp.CSS(row+` button.crew-edit`)))
	wait("the form filled", `document.querySelector("#crew-form-title").textContent === "Edit Night" && document.querySelector("#crew-name").value === "Night" && document.querySelectorAll("#crew-members input.crew-pick:checked").length === 2`)
	if got := webtest.Eval[string](t, ctx, `document.activeElement.id`); got != "crew-name" {
		t.Errorf("focus after Edit on %q, want the name field", got)
	}
	b.axeClean(t, "crews, editing")
	webtest.Fill(t, ctx, "#crew-name", "Night shift")
	// Bo leaves, Cy joins.
	webtest.Eval[bool](t, ctx, `(() => { for (const l of document.querySelectorAll("#crew-members label")) { const i = l.querySelector("input");`+
		` if (l.textContent.includes("Bo Diddley")) i.checked = false; if (l.textContent.includes("Cy Young")) i.checked = true; } return true; })()`)
	do("save", chromedp.Click(chromedp.CSS("#crew-save")))
	wait("renamed", `!!document.querySelector('#crews-body tr.crew[data-name="Night shift"]') && !document.querySelector('#crews-body tr.crew[data-name="Night"]')`)
	wait("the form back to New", `document.querySelector("#crew-form-title").textContent === "New crew"`)
	var k struct {
		Name    string
		Members []string
	}
	getJSON(t, srv.URL()+"/v1/crews/"+crewID, key, &k)
	if k.Name != "Night shift" || len(k.Members) != 2 {
		t.Fatalf("crew after the edit: %+v", k)
	}
	if got := b.text(`#crews-body tr.crew[data-name="Night shift"]`); !contains(got, "Ada Lovelace", "Cy Young") || contains(got, "Bo Diddley") {
		t.Errorf("crew row %q", got)
	}

	// Delete a contact where it is listed.
	do("open contacts", chromedp.Navigate(srv.URL()+"/#/contacts"))
	crow := `#contacts-body tr.contact[data-number="` + bo + `"]`
	wait("Bo listed", `!!document.querySelector(`+webtest.JS(crow+` button.delete-contact`)+`)`)
	do("delete Bo", chromedp.Click(chromedp.CSS(crow+` button.delete-contact`)))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delete"]`)))
	wait("Bo gone", `!document.querySelector(`+webtest.JS(crow)+`) && document.querySelectorAll("#contacts-body tr.contact").length === 2`)
	var cs struct{ Contacts []struct{ Number string } }
	getJSON(t, srv.URL()+"/v1/contacts", key, &cs)
	if len(cs.Contacts) != 2 {
		t.Errorf("contacts after delete: %+v", cs.Contacts)
	}
	b.axeClean(t, "contacts after a delete")
}

// contains reports whether s contains every one of subs.
func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
