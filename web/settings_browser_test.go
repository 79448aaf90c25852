package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
)

// TestSettingsShowRetention: an admin opens the settings area, sees that
// retention has not run, runs a pass, and the line says when it ran and
// what it did (issue 20).
func TestSettingsShowRetention(t *testing.T) {
	srv, key := startServer(t, "e2e", server.Config{})
	b := openTab(t)
	wait, do := b.wait, b.do
	b.signIn(srv.URL()+"/", key)
	do("open settings", chromedp.Click(chromedp.CSS("#nav-settings")))
	wait("no pass yet", `(document.querySelector("#retention-line")||{}).textContent === "Retention has not run since the server started."`)
	do("run retention", chromedp.Click(chromedp.CSS("#retention-run")))
	wait("the pass reported", `/^Retention last ran .* \(on request\): 0 groups redacted, 0 groups hashed, 0 groups deleted, 0 webhooks purged, 0 unmatched replies redacted\.$/.test(document.querySelector("#retention-line").textContent)`)
}
