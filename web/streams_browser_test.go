package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// callAPI sends one JSON request with the bearer key and returns the status
// and body.
func callAPI(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// signInViewer creates a viewer through the API and signs them in on a new
// tab, on the live list; window.__opens counts the stream's connections
// (EventSource fires "open" on each, reconnects included).
func signInViewer(t *testing.T, srv *server.Server, key string) (*tab, string) {
	t.Helper()
	// A password chosen at creation: a one-time one would first send Vic
	// to the new-password form (users_browser_test.go covers that).
	const pw = "Vic's own long password"
	status, raw := callAPI(t, "POST", srv.URL()+"/v1/users", key, `{"email":"vic@example.com","name":"Vic Viewer","role":"viewer","password":"`+pw+`"}`)
	var u struct{ ID, Password string }
	if err := json.Unmarshal(raw, &u); err != nil || status != 201 {
		t.Fatalf("create user: %d %s", status, raw)
	}
	u.Password = pw
	b := openTab(t)
	b.do("open the board", chromedp.Navigate(srv.URL()+"/"))
	b.wait("the sign-in page", `!!document.querySelector("#user-signin-form")`)
	webtest.Eval[bool](t, b.ctx, `window.__opens = 0; { const ES = window.EventSource;
		window.EventSource = class extends ES { constructor(...a) { super(...a); this.addEventListener("open", () => window.__opens++); } }; } true`)
	b.do("sign in", chromedp.SendKeys(chromedp.CSS("#email"), "vic@example.com"), chromedp.SendKeys(chromedp.CSS("#password"), u.Password),
		chromedp.Click(chromedp.CSS("#user-signin-submit")))
	b.wait("the live list", `location.hash === "#/groups" && (document.querySelector(".live-badge") || {dataset: {}}).dataset.state === "live"`)
	return b, u.ID
}

// The board keeps following the live list across the reconnects a short
// stream lifetime forces.
func TestBoardStreamLifetime(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "streams", server.Config{StreamMaxLifetime: 700 * time.Millisecond})
	b, _ := signInViewer(t, srv, key)
	b.wait("two reconnects after the stream lifetime", `window.__opens >= 3`)
	createVia(t, srv.URL()+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{"+15550100001"}, "text": "After the reconnects"})
	b.wait("the new group on the list", `[...document.querySelectorAll("#group-list .group-card")].some(c => c.textContent.includes("After the reconnects"))`)
}

// A user disabled while watching the board (the stream's lifetime far
// off) is sent to the sign-in page once the stream's re-check ends it,
// with no other request made by the page.
func TestBoardStreamEndsWithAccess(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "streams", server.Config{})
	b, id := signInViewer(t, srv, key) // no groups: nothing on the stream makes the page fetch
	if status, raw := callAPI(t, "PATCH", srv.URL()+"/v1/users/"+id, key, `{"disabled":true}`); status != 200 {
		t.Fatalf("disable: %d %s", status, raw)
	}
	b.wait("the sign-in page after the user was disabled", `location.hash === "#/signin" && !!document.querySelector("#user-signin-form")`)
}
