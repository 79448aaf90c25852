package web_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardKeepsNewerStateThanActionAnswer: an action's answer is the
// group as the action left it; when the group moved on before that answer
// arrived (the stream told the board and the board drew the newer state
// first, as when a release is followed at once by the standby's
// promotion), the board keeps the newer state instead of going back to
// the older one (the answer's seq is below the one shown).
func TestBoardKeepsNewerStateThanActionAnswer(t *testing.T) {
	f := newFakeAPI(t)
	const gid, unsure, other = "grp_stale", "+15550500001", "+15550500002"
	at := time.Now().Add(-10 * time.Minute)
	f.mu.Lock()
	f.add(&fakeGroup{ID: gid, Mode: "individual", From: "+15550100000", CreatedAt: at, UpdatedAt: at, Text: "Gate at 7.",
		Recipients: []fakeRecipient{
			{Number: unsure, Status: "unknown", Attempts: 1, SentAt: ptr(at)},
			{Number: other, Status: "sent", Attempts: 1, SentAt: ptr(at)},
		}})
	f.mu.Unlock()
	release := make(chan struct{})
	f.beforeAnswer = func(id, number string) {
		// The group moves on: the other recipient is delivered.
		f.mu.Lock()
		g := f.groups[id]
		now := time.Now()
		g.Recipients[1].Status, g.Recipients[1].DeliveredAt, g.UpdatedAt = "delivered", ptr(now), now
		f.event(id, other, "recipient.delivered", now, map[string]any{})
		recount(g)
		f.mu.Unlock()
		f.publish(id)
		select { // until the board drew it
		case <-release:
		case <-time.After(webtest.WaitTimeout):
		}
	}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(func() {
		f.close()
		srv.Close()
	})
	b := openTab(t)
	b.signIn(srv.URL+"/#/groups/"+gid, fakeKey)
	b.do("open the group", chromedp.Navigate(srv.URL+"/#/groups/"+gid))
	b.wait("the roster", `document.querySelectorAll("#roster-body tr.recipient").length === 2`)
	b.wait("the stream", `document.querySelector(".live-badge").dataset.state === "live"`)
	status := func(n string) string {
		return `(document.querySelector(` + webtest.JS(row(n)) + `) || {dataset: {}}).dataset.status`
	}
	b.do("open the resolve dialog", chromedp.Click(chromedp.CSS(row(unsure)+" button.resolve")))
	b.wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	b.do("confirm delivered", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delivered"]`)))
	b.wait("the newer state drawn", status(other)+` === "delivered" && `+status(unsure)+` === "delivered"`)
	close(release)
	b.wait("the action's toast", `document.body.textContent.includes(`+webtest.JS(unsure+" marked delivered.")+`)`)
	if got := webtest.Eval[string](t, b.ctx, status(other)); got != "delivered" {
		t.Fatalf("after the older answer the board shows %s as %q: it went back to the state the action left", other, got)
	}
}
