package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// The API keys page says when a key expires.
func TestBoardKeysShowExpiry(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "expiry", server.Config{})
	exp := time.Now().Add(30 * 24 * time.Hour).UTC().Format(time.RFC3339)
	id := createVia(t, srv.URL()+"/v1/keys", key, map[string]any{"scopes": []string{"read"}, "name": "contractor", "expires_at": exp})
	b := openTab(t)
	b.do("open the board", chromedp.Navigate(srv.URL()+"/"))
	b.wait("the sign-in page", `!!document.querySelector("#signin-form")`)
	webtest.Type(t, b.ctx, "#key", key)
	b.do("sign in with the key", chromedp.Click(chromedp.CSS("#signin-submit")))
	b.wait("admin links shown", `!document.querySelector('[data-nav="keys"]').hidden`)
	b.do("open keys", chromedp.Click(chromedp.CSS(`[data-nav="keys"]`)))
	b.wait("the key listed with its expiry", `(document.querySelector('#key-rows tr[data-key-id="`+id+`"]') || {}).textContent?.includes("Active, expires")`)
}
