// Package webtest runs browser tests against crewcast's board in a real
// headless Chromium, driven by chromedp. It is test support: import it only
// from _test.go files.
//
// NewBrowser finds Chromium (CREWCAST_CHROMIUM, else chromium,
// chromium-browser, google-chrome on PATH), starts it headless with a fresh
// profile and the network-quiet flags, and closes it when the test ends. If
// Chromium is missing the test fails, unless CREWCAST_SKIP_BROWSER=1 is set:
// CI installs Chromium, and a silently skipped browser test would hide a gap.
//
// While the browser runs it watches the page: an uncaught JavaScript
// exception, a Content-Security-Policy violation or a JavaScript dialog
// (alert, confirm, prompt; it is dismissed) fails the test at cleanup. A
// board that throws, or an injected script that runs, is a bug even when the
// assertions pass.
//
// A context from NewBrowser belongs to one test goroutine; chromedp runs one
// action at a time per tab.
package webtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Timeout bounds one browser's whole life (start, every action, shutdown),
// so a hung page fails the test instead of hanging CI. The test's own
// deadline, when sooner, wins.
const Timeout = 90 * time.Second

// WaitTimeout is how long WaitFor polls before it fails the test.
const WaitTimeout = 10 * time.Second

// Desktop and phone viewports the board is checked at.
const (
	DesktopWidth  = 1280
	DesktopHeight = 860
	PhoneWidth    = 390
	PhoneHeight   = 844
)

// SkipEnv, set to "1", turns a missing Chromium into a skip instead of a failure.
const SkipEnv = "CREWCAST_SKIP_BROWSER"

// ScreenshotDirEnv names the directory SaveScreenshot writes to; by default
// it writes to the test's temporary directory.
const ScreenshotDirEnv = "CREWCAST_SCREENSHOT_DIR"

// FindChromium returns the path of the Chromium (or Chrome) executable.
func FindChromium() (string, error) {
	if p := os.Getenv("CREWCAST_CHROMIUM"); p != "" {
		return exec.LookPath(p)
	}
	var firstErr error
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		p, err := exec.LookPath(name)
		if err == nil {
			return p, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return "", firstErr
}

// NewBrowser starts a fresh headless Chromium for t and returns a chromedp
// context whose tab is open and ready. The browser is closed, and the page
// problems it saw are reported, when t ends.
func NewBrowser(t testing.TB) context.Context {
	t.Helper()
	return newBrowser(t, func(problem string) { t.Errorf("browser: %s", problem) })
}

// newBrowser is NewBrowser with the problem report injected, so the
// watchdog itself can be tested.
func newBrowser(t testing.TB, report func(string)) context.Context {
	t.Helper()
	path, err := FindChromium()
	if err != nil {
		if os.Getenv(SkipEnv) == "1" {
			t.Skipf("chromium not found (%v); skipped because %s=1", err, SkipEnv)
		}
		t.Fatalf("chromium not found: %v. Install it (Debian: apt-get install chromium) "+
			"or set %s=1 to skip browser tests.", err, SkipEnv)
	}

	budget := Timeout
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dl.Deadline(); ok {
			// Leave time for cleanup and the test's own report.
			if left := time.Until(d) - 5*time.Second; left < budget {
				budget = max(left, time.Second)
			}
		}
	}
	root, cancelRoot := context.WithTimeout(context.Background(), budget)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI containers
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(DesktopWidth, DesktopHeight),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)

	// The first action starts the browser and opens the tab.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(DesktopWidth, DesktopHeight)); err != nil {
		cancelCtx()
		cancelAlloc()
		cancelRoot()
		t.Fatalf("start chromium %s: %v", path, err)
	}

	var (
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
	)
	note := func(s string) {
		mu.Lock()
		problems = append(problems, s)
		mu.Unlock()
	}
	console := chromedp.Console(ctx)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	// flushMarker is logged at cleanup; seeing it proves every console
	// message before it has been examined (one ordered subscription).
	flushMarker := fmt.Sprintf("webtest-flush-%d", time.Now().UnixNano())
	flushed := make(chan struct{})
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			switch {
			case m.Type == chromedp.ConsoleDebug && m.Text == flushMarker:
				close(flushed)
			case m.IsException():
				note(fmt.Sprintf("uncaught exception at %s:%d: %s", m.URL, m.Line+1, m.Text))
			case strings.Contains(m.Text, "Content Security Policy"):
				note("CSP violation: " + m.Text)
			}
		}
	})
	wg.Go(func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			note(fmt.Sprintf("JavaScript %s dialog opened: %q", ev.Type, ev.Message))
			// Dismiss it, or the page stays blocked and every later action
			// times out. Errors here only mean the tab is already gone.
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	})

	t.Cleanup(func() {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void]("console.debug("+JS(flushMarker)+")")); err == nil {
			select {
			case <-flushed:
			case <-time.After(5 * time.Second):
				t.Logf("browser: console watchdog did not catch up; late page problems may be missed")
			}
		}
		// Close the browser gracefully, then stop the allocator; both wait
		// for the process to exit, so the profile dir can be removed.
		if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) &&
			!errors.Is(err, context.DeadlineExceeded) {
			t.Logf("close chromium: %v", err)
		}
		cancelCtx()
		cancelAlloc()
		cancelRoot()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			report(p)
		}
	})
	return ctx
}

// JS quotes s as a JavaScript string literal, for building expressions.
func JS(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// WaitFor polls the JavaScript expression until it is truthy, failing t
// (with what and a glimpse of the page) after WaitTimeout.
func WaitFor(t testing.TB, ctx context.Context, what, expr string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(WaitTimeout)))
	if err != nil {
		t.Fatalf("waiting for %s: %v\n(expression: %s)\npage text:\n%s", what, err, expr, PageText(ctx))
	}
}

// Eval evaluates a JavaScript expression and decodes its result into T,
// failing t on error. Pass chromedp.EvalAwaitPromise to wait for a promise.
func Eval[T any](t testing.TB, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Do runs actions, failing t with what on error.
func Do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v\npage text:\n%s", what, err, PageText(ctx))
	}
}

// Type replaces the value of the input or textarea matched by the CSS
// selector: it clears the field (firing an input event, as a user's
// select-all and delete would) and then types text key by key.
func Type(t testing.TB, ctx context.Context, sel, text string) {
	t.Helper()
	setValue(t, ctx, "type into", sel, "")
	if text != "" {
		Do(t, ctx, "type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
	}
}

// Fill sets the value of the input or textarea matched by the CSS selector
// at once and fires an input event: faster than Type for long text whose
// keystrokes the test does not care about.
func Fill(t testing.TB, ctx context.Context, sel, value string) {
	t.Helper()
	setValue(t, ctx, "fill", sel, value)
}

// setValue focuses the field matched by sel, sets its value and fires an
// input event; what names the action in the failure.
func setValue(t testing.TB, ctx context.Context, what, sel, value string) {
	t.Helper()
	set := fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false;
		el.focus(); el.value = %s; el.dispatchEvent(new Event("input", {bubbles: true})); return true })()`, JS(sel), JS(value))
	if !Eval[bool](t, ctx, set) {
		t.Fatalf("%s %s: no such element\npage text:\n%s", what, sel, PageText(ctx))
	}
}

// PageText returns the visible text of the page (truncated), for failure
// messages; an error is returned as text.
func PageText(ctx context.Context) string {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(page text unavailable: " + err.Error() + ")"
	}
	if len(s) > 3000 {
		s = s[:3000] + "…"
	}
	return s
}

// SetViewport sets the page's viewport (CSS pixels, device scale 1).
func SetViewport(t testing.TB, ctx context.Context, width, height int) {
	t.Helper()
	Do(t, ctx, "set viewport", chromedp.EmulateViewport(int64(width), int64(height)))
}

// SetColorScheme emulates prefers-color-scheme ("light" or "dark"; ""
// restores the default).
func SetColorScheme(t testing.TB, ctx context.Context, scheme string) {
	t.Helper()
	params := emulation.SetEmulatedMediaParams{}
	if scheme != "" {
		params.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, params); err != nil {
		t.Fatalf("emulate color scheme %q: %v", scheme, err)
	}
}

// SaveScreenshot captures the whole page (not just the viewport) at the
// given width as a PNG, writes it to $CREWCAST_SCREENSHOT_DIR or the
// test's temporary directory as name, and returns the bytes and the path.
// The viewport is left at width × height afterwards.
func SaveScreenshot(t testing.TB, ctx context.Context, name string, width, height int) ([]byte, string) {
	t.Helper()
	full := Eval[float64](t, ctx, `Math.ceil(Math.max(document.documentElement.scrollHeight, document.body.scrollHeight))`)
	shotHeight := max(height, min(int(full), 6000))
	SetViewport(t, ctx, width, shotHeight)
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	SetViewport(t, ctx, width, height)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := os.Getenv(ScreenshotDirEnv)
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot dir: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatalf("write screenshot: %v", err)
	}
	t.Logf("screenshot: %s", path)
	return png, path
}

// SetTimezone emulates the browser's time zone (an IANA name such as
// "America/Chicago"), so a test can check times shown in the viewer's zone.
func SetTimezone(t testing.TB, ctx context.Context, zone string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
		t.Fatalf("emulate time zone %q: %v", zone, err)
	}
}
