package web_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
)

// TestAuditInWords: the audit trail says what happened in words ("Setup
// key sent 'Crew call 7am' to 2 people"), links the group to its board,
// names the bootstrap key "Setup key", keeps the raw action code in a
// tooltip, and leaves the CSV as it was (issue 33 item 5).
func TestAuditInWords(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "bootstrap", server.Config{})
	gid := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{"+15550100001", "+15550100002"}, "text": "Crew call 7am\nsite B"})
	b := openTab(t)
	b.signIn(srv.URL()+"/", key)
	b.do("open the audit trail", chromedp.Navigate(srv.URL()+"/#/audit"))
	row := func(action string) string {
		return `document.querySelector('#audit-rows tr[data-action="` + action + `"]')`
	}
	b.wait("the sign-in in words", `(`+row("session.signed_in")+`||{}).textContent?.includes("Setup key signed in")`)
	b.wait("the send in words", `(`+row("group.sent")+`||{}).textContent?.includes("Setup key sent “Crew call 7am” to 2 people")`)
	if href := b.text(`#audit-rows tr[data-action="group.sent"] a[href="#/groups/` + gid + `"]`); href == "" {
		t.Errorf("the group is not linked to its board #/groups/%s: %q", gid, b.text(`#audit-rows tr[data-action="group.sent"]`))
	}
	for _, code := range []string{"group.sent", "session.signed_in", "key.created"} {
		if b.text(`#audit-rows tr[data-action="`+code+`"] [title="`+code+`"]`) == "" {
			t.Errorf("%s: no element keeps the raw code in its title", code)
		}
	}
	if got := b.text(`#audit-rows tr[data-action="key.created"]`); !strings.Contains(got, "Server setup created the key Setup key") || strings.Contains(got, "CREWCAST_ADMIN_KEY system") {
		t.Errorf("the bootstrap key's creation reads %q", got)
	}
	if got := b.text("#audit-rows"); strings.Contains(got, "bootstrap") {
		t.Errorf("the audit page still says bootstrap: %q", got)
	}

	if got := b.text("#who"); got != "Setup key" {
		t.Errorf("the top bar names the signed-in key %q, want Setup key", got)
	}
	b.do("open keys", chromedp.Navigate(srv.URL()+"/#/keys"))
	b.wait("the setup key listed by its name", `[...document.querySelectorAll("#key-rows td")].some((td) => td.textContent === "Setup key")`)

	// The CSV keeps the raw codes and names.
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v1/audit?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	csv, _ := io.ReadAll(res.Body)
	for _, want := range []string{"group.sent", "session.signed_in", "CREWCAST_ADMIN_KEY", gid} {
		if !strings.Contains(string(csv), want) {
			t.Errorf("the CSV lacks %q:\n%s", want, csv)
		}
	}
}
