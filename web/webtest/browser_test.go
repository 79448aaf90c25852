package webtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recordTB captures Fatalf and Skipf, which end the calling goroutine as
// the real ones do.
type recordTB struct {
	testing.TB
	fatal, skip string
}

func (r *recordTB) Helper() {}

func (r *recordTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recordTB) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func runNewBrowser(tb *recordTB) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		newBrowser(tb, func(string) {})
	}()
	<-done
}

// TestMissingChromium: without a browser the test fails and says how to
// fix it, unless CREWCAST_SKIP_BROWSER=1 asks for a skip.
func TestMissingChromium(t *testing.T) {
	t.Setenv("CREWCAST_CHROMIUM", "/nonexistent/chromium")

	t.Setenv(SkipEnv, "")
	tb := &recordTB{TB: t}
	runNewBrowser(tb)
	if tb.skip != "" || !strings.Contains(tb.fatal, "chromium not found") || !strings.Contains(tb.fatal, SkipEnv+"=1") {
		t.Errorf("without %s: fatal %q, skip %q; want a failure naming the fix", SkipEnv, tb.fatal, tb.skip)
	}

	t.Setenv(SkipEnv, "1")
	tb = &recordTB{TB: t}
	runNewBrowser(tb)
	if tb.fatal != "" || !strings.Contains(tb.skip, "chromium not found") {
		t.Errorf("with %s=1: fatal %q, skip %q; want a skip", SkipEnv, tb.fatal, tb.skip)
	}
}

// TestWatchdogReportsPageProblems checks that the browser watchdog catches
// what it promises to: a CSP violation, an uncaught exception and a
// JavaScript dialog. Without this, a broken watchdog would let every
// browser test pass silently.
func TestWatchdogReportsPageProblems(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>t</title>` +
			`<script>window.inlineRan = true</script><script src="/bad.js"></script>`))
	})
	mux.HandleFunc("/bad.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write([]byte(`setTimeout(() => { throw new Error("boom") }, 0);
setTimeout(() => { alert("hello"); window.done = true; }, 20);`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var (
		mu  sync.Mutex
		got []string
	)
	t.Run("page", func(t *testing.T) {
		ctx := newBrowser(t, func(p string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		})
		Do(t, ctx, "navigate", chromedp.Navigate(srv.URL))
		WaitFor(t, ctx, "the script to finish after the alert", `window.done === true`)
		if Eval[bool](t, ctx, `window.inlineRan === true`) {
			t.Error("inline script ran despite the CSP")
		}
	})

	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(got, "\n")
	for _, want := range []string{"CSP violation", "uncaught exception", "boom", "alert dialog", "hello"} {
		if !strings.Contains(all, want) {
			t.Errorf("watchdog report lacks %q; got:\n%s", want, all)
		}
	}
}

func TestJS(t *testing.T) {
	if got, want := JS(`a"b</script>`), `"a\"b\u003c/script\u003e"`; got != want {
		t.Errorf("JS = %s, want %s", got, want)
	}
}
