package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardDatesAndCopy: in a viewer's zone (Chicago) and locale (en-US)
// every admin page shows dates in one format with the zone named, and a
// new key's secret has a copy button that puts it on the clipboard and
// says "Copied" (issue 33 item 7).
func TestBoardDatesAndCopy(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "dates", server.Config{})
	exp := time.Date(2031, 1, 15, 18, 30, 0, 0, time.UTC).Format(time.RFC3339)
	createVia(t, srv.URL()+"/v1/keys", key, map[string]any{"scopes": []string{"read"}, "name": "contractor", "expires_at": exp})
	b := openTab(t)
	cdpCall(t, b.ctx, "zone", emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/Chicago"})
	cdpCall(t, b.ctx, "locale", emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en_US"})
	b.signIn(srv.URL()+"/", key)
	fails := webtest.Eval[[]string](t, b.ctx, `(async () => {
  const f = await import("/static/format.js");
  const fails = [];
  const eq = (name, got, want) => { if (got !== want) fails.push(name + ": got " + JSON.stringify(got) + ", want " + JSON.stringify(want)); };
  eq("fmtDate", f.fmtDate("2031-01-15T18:30:00Z"), "Jan 15, 2031, 12:30 PM CST");
  eq("fmtDate summer", f.fmtDate("2031-07-15T18:30:00Z"), "Jul 15, 2031, 1:30 PM CDT");
  eq("fmtFull is fmtDate", f.fmtFull("2031-01-15T18:30:00Z"), "Jan 15, 2031, 12:30 PM CST");
  eq("no time", f.fmtDate(""), "");
  return fails;
})()`, chromedp.EvalAwaitPromise)
	for _, f := range fails {
		t.Error(f)
	}
	b.do("open keys", chromedp.Navigate(srv.URL()+"/#/keys"))
	b.wait("the expiry in the viewer's zone", `[...document.querySelectorAll("#key-rows td")].some((td) => td.textContent === "Active, expires Jan 15, 2031, 12:30 PM CST")`)
	b.do("open the audit trail", chromedp.Navigate(srv.URL()+"/#/audit"))
	b.wait("audit times name the zone", `(() => { const ts = [...document.querySelectorAll("#audit-rows time")]; return ts.length > 0 && ts.every((t) => / C[SD]T$/.test(t.textContent)) })()`)

	// The one-time secret: copy it.
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		cdpCall(t, b.ctx, name, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name}, Setting: browser.PermissionSettingGranted, Origin: srv.URL()})
	}
	b.do("open keys", chromedp.Navigate(srv.URL()+"/#/keys"))
	b.wait("the key form", `!!document.querySelector("#key-form")`)
	webtest.Type(t, b.ctx, "#key-name", "script")
	b.do("create a key", chromedp.Click(chromedp.CSS("#key-submit")))
	b.wait("the secret shown", `!document.querySelector("#new-key").hidden && !!document.querySelector("#new-key-value")`)
	b.do("copy it", chromedp.Click(chromedp.CSS("#new-key button.copy"), chromedp.NodeVisible))
	b.wait("Copied announced", `[...document.querySelectorAll('[role="status"], [aria-live]')].some((el) => el.textContent.includes("Copied"))`)
	same := webtest.Eval[bool](t, b.ctx, `navigator.clipboard.readText().then((s) => s === document.querySelector("#new-key-value").textContent && s.startsWith("cc_"))`, chromedp.EvalAwaitPromise)
	if !same {
		t.Error("the clipboard does not hold the new key")
	}
}

// cdpCall sends one DevTools command and fails the test if it fails.
func cdpCall[P any](t *testing.T, ctx context.Context, what string, cmd cdp.Command[P, cdp.Empty], params P) {
	t.Helper()
	if _, err := chromedp.Call(ctx, cmd, params); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", what, err))
	}
}
