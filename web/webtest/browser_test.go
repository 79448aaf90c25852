package webtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

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
