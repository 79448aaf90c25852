package web_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardRosterSearch is issue 28 item 8 (the board part), as a
// dispatcher: on a board of 210 people, a search by name or number narrows
// the roster, combines with the status/answer filter, and the matching row
// still updates live while the search is on.
func TestBoardRosterSearch(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	ada := "+15550102000"
	faults := sim.DefaultFaults()
	faults.DelayMS = [2]int{10, 50}
	faults.Script = map[string]string{ada: "reply:YES"}
	srv, key := startServer(t, "e2e", server.Config{DemoFaults: &faults, ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	recips := []map[string]any{{"number": ada, "name": "Ada Lovelace"}}
	for i := 1; i < 210; i++ {
		recips = append(recips, map[string]any{"number": fmt.Sprintf("+1555010%04d", 2000+i), "name": fmt.Sprintf("Person %d", i)})
	}
	id := createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "recipients": recips, "text": "Crew call 7am. Reply YES"})
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signInDispatcher(srv.URL(), key, "dana@example.com", "Dana Dispatcher")
	do("open the group", chromedp.Navigate(srv.URL()+"/#/groups/"+id))
	rows := `document.querySelectorAll("#roster-body tr.recipient").length`
	wait("210 rows", rows+` === 210`)
	webtest.Eval[bool](t, ctx, `window.__same = true`)

	webtest.Type(t, ctx, "#roster-search", "lovelace")
	wait("one row by name", rows+` === 1 && !!document.querySelector('`+row(ada)+`')`)
	wait("Ada's YES arrives live", `/Acknowledged/.test(document.querySelector('`+row(ada)+`').textContent)`)
	webtest.Fill(t, ctx, "#roster-search", "0102005")
	wait("one row by number digits", rows+` === 1 && !!document.querySelector('tr.recipient[data-number="+15550102005"]')`)
	webtest.Fill(t, ctx, "#roster-search", "person 1")
	wait("Person 1, 10–19, 100–199", rows+` === 111`)
	b.axeClean(t, "a searched roster")
	webtest.Fill(t, ctx, "#roster-search", "")
	wait("all back", rows+` === 210`)
	if !webtest.Eval[bool](t, ctx, `window.__same === true`) {
		t.Fatal("the page reloaded; search must keep live updates")
	}
}
