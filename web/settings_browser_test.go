package web_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestSettingsShowRetention: an admin opens the settings area, sees that
// retention has not run, runs a pass, and the line says when it ran and
// what it did (issue 20).
func TestSettingsShowRetention(t *testing.T) {
	key, _, err := apikey.Generate(rand.Reader, "e2e", []apikey.Scope{apikey.ScopeAdmin}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "crewcast.db"), Provider: server.ProviderDemo,
		AdminKey: key, RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	ctx := webtest.NewBrowser(t)
	wait := func(what, expr string) { t.Helper(); webtest.WaitFor(t, ctx, what, expr) }
	do := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); webtest.Do(t, ctx, what, a...) }
	do("open the board", chromedp.Navigate(srv.URL()+"/"))
	wait("the sign-in form", `!!document.querySelector("#signin-form")`)
	webtest.Type(t, ctx, "#key", key)
	do("sign in", chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("signed in", `location.hash !== "#/signin" && !document.querySelector("#signin-form")`)
	do("open settings", chromedp.Click(chromedp.CSS("#nav-settings")))
	wait("no pass yet", `(document.querySelector("#retention-line")||{}).textContent === "Retention has not run since the server started."`)
	do("run retention", chromedp.Click(chromedp.CSS("#retention-run")))
	wait("the pass reported", `/^Retention last ran .* \(on request\): 0 groups redacted, 0 groups hashed, 0 groups deleted, 0 webhooks purged, 0 unmatched replies redacted\.$/.test(document.querySelector("#retention-line").textContent)`)
}
