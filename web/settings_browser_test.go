package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestSettingsShowRetention: an admin opens the settings area, sees that
// retention has not run, runs a pass, and the line says when it ran and
// what it did (issue 20).
func TestSettingsShowRetention(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{})
	b := openTab(t)
	wait, do := b.wait, b.do
	b.signIn(srv.URL()+"/", key)
	do("open settings", chromedp.Click(chromedp.CSS("#nav-settings")))
	wait("no pass yet", `(document.querySelector("#retention-line")||{}).textContent === "Retention has not run since the server started."`)
	do("run retention", chromedp.Click(chromedp.CSS("#retention-run")))
	wait("the pass reported", `/^Retention last ran .* \(on request\): 0 groups redacted, 0 groups hashed, 0 groups deleted, 0 webhooks purged, 0 unmatched replies redacted\.$/.test(document.querySelector("#retention-line").textContent)`)
}

// TestSettingsInWords: the settings page says its durations in words, what
// each retention policy does, whether a hash key is set, the default
// quiet hours, the store and the server's version and providers (issue 33 item 6).
func TestSettingsInWords(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "settings", server.Config{QuietHours: "21:00-07:00", DefaultTimezone: "America/Chicago"})
	b := openTab(t)
	b.signIn(srv.URL()+"/", key)
	fails := webtest.Eval[[]string](t, b.ctx, `(async () => {
  const s = await import("/static/settings.js");
  const fails = [];
  const eq = (name, got, want) => { if (got !== want) fails.push(name + ": got " + JSON.stringify(got) + ", want " + JSON.stringify(want)); };
  eq("every hour", s.everyText("1h0m0s"), "every hour");
  eq("every 30 minutes", s.everyText("30m0s"), "every 30 minutes");
  eq("every 2 hours 30 minutes", s.everyText("2h30m0s"), "every 2 hours 30 minutes");
  eq("every 6 hours", s.everyText("6h0m0s"), "every 6 hours");
  eq("every day", s.everyText("24h0m0s"), "every day");
  eq("30 days", s.afterText(720), "after 30 days");
  eq("a day", s.afterText(24), "after 1 day");
  eq("36 hours", s.afterText(36), "after 36 hours");
  eq("never", s.afterText(-1), "never");
  eq("schedule", s.scheduleLine({interval: "1h0m0s"}), "Runs every hour.");
  return fails;
})()`, chromedp.EvalAwaitPromise)
	for _, f := range fails {
		t.Error(f)
	}
	b.do("open settings", chromedp.Navigate(srv.URL()+"/#/settings"))
	b.wait("the policies, one line each", `document.querySelectorAll("#retention-policy li").length === 5`)
	for _, want := range []string{
		"Message and reply texts are emptied after 30 days.",
		"Phone numbers are replaced by a keyed hash and names dropped after 90 days.",
		"Groups are deleted with their history after 365 days.",
		"Processed webhooks are purged after 7 days.",
	} {
		if !strings.Contains(b.text("#retention-policy"), want) {
			t.Errorf("the policy list lacks %q: %q", want, b.text("#retention-policy"))
		}
	}
	b.wait("the hash key state", `(document.querySelector("#hash-key")||{}).textContent === "A hash key is set: numbers can be hashed."`)
	b.wait("the version", `/^crewcast \S+.* go1\.\d+/.test((document.querySelector("#server-version")||{}).textContent || "")`)
	b.wait("the store", `/^Store: sqlite, schema version \d+\.$/.test((document.querySelector("#server-store")||{}).textContent || "")`)
	b.wait("the quiet hours", `(document.querySelector("#quiet-hours")||{}).textContent === "New groups hold messages from 21:00 to 07:00 in each recipient's time zone (America/Chicago for numbers without one); a group can set its own or turn them off."`)
	b.wait("the providers", `(document.querySelector("#server-providers")||{}).textContent?.startsWith("Demo mode: sending is simulated (the simulator posts Telnyx and Twilio webhooks).")`)
}
