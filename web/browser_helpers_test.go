package web_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// startServer starts the real server in demo mode on a fresh SQLite file,
// with a new admin key named keyName and retention left to the test. cfg
// carries what a test varies (simulator faults, timeouts, settings); the
// address, database, provider, admin key and retention interval are set
// here. Call it before opening the browser: its cleanup then runs after
// the browser closed.
func startServer(t *testing.T, keyName string, cfg server.Config) (*server.Server, string) {
	t.Helper()
	key, _, err := apikey.Generate(rand.Reader, keyName, []apikey.Scope{apikey.ScopeAdmin}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = filepath.Join(t.TempDir(), "crewcast.db")
	cfg.Provider = server.ProviderDemo
	cfg.AdminKey = key
	cfg.RetentionInterval = -1
	srv, err := server.New(cfg)
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
	return srv, key
}

// createVia POSTs v as JSON to url with the bearer key, wants 201 Created
// and returns the created resource's "id".
func createVia(t *testing.T, url, key string, v any) string {
	t.Helper()
	body, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
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
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ ID string }
	if err := json.Unmarshal(raw, &out); err != nil || res.StatusCode != http.StatusCreated || out.ID == "" {
		t.Fatalf("POST %s: %d %v: %s", url, res.StatusCode, err, raw)
	}
	return out.ID
}

// tab is a headless Chromium tab for one (sub)test; its methods fail that
// test with the page's text when a step does not happen.
type tab struct {
	t   testing.TB
	ctx context.Context
}

func openTab(t testing.TB) *tab { return &tab{t: t, ctx: webtest.NewBrowser(t)} }

// wait polls the JS expression expr until it is true.
func (b *tab) wait(what, expr string) { b.t.Helper(); webtest.WaitFor(b.t, b.ctx, what, expr) }

// do runs chromedp actions.
func (b *tab) do(what string, a ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	webtest.Do(b.t, b.ctx, what, a...)
}

// text is the text content of the first element matching sel, "" if none.
func (b *tab) text(sel string) string {
	b.t.Helper()
	return webtest.Eval[string](b.t, b.ctx, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, webtest.JS(sel)))
}

// signIn opens url signed out, signs in with key on the key form and
// waits until the sign-in page is gone.
func (b *tab) signIn(url, key string) {
	b.t.Helper()
	b.do("open the board", chromedp.Navigate(url))
	b.wait("the sign-in form", `!!document.querySelector("#signin-form")`)
	webtest.Type(b.t, b.ctx, "#key", key)
	b.do("sign in", chromedp.Click(chromedp.CSS("#signin-submit")))
	b.wait("signed in", `location.hash !== "#/signin" && !document.querySelector("#signin-form")`)
}

// dispatcherPassword is the password of the dispatcher user tests create.
const dispatcherPassword = "correct horse battery staple"

// signInDispatcher creates a dispatcher user with the admin key (through
// the API) and signs in as that user on the board's email form, so a test
// drives the board as a dispatcher would, not with the admin key.
func (b *tab) signInDispatcher(baseURL, adminKey, email, name string) {
	b.t.Helper()
	t, ok := b.t.(*testing.T)
	if !ok {
		b.t.Fatal("signInDispatcher needs a *testing.T")
	}
	createVia(t, baseURL+"/v1/users", adminKey, map[string]any{"email": email, "name": name, "role": "dispatcher", "password": dispatcherPassword})
	b.do("open the board", chromedp.Navigate(baseURL+"/"))
	b.wait("the user sign-in form", `!!document.querySelector("#user-signin-form")`)
	webtest.Type(b.t, b.ctx, "#email", email)
	webtest.Type(b.t, b.ctx, "#password", dispatcherPassword)
	b.do("sign in as "+name, chromedp.Click(chromedp.CSS("#user-signin-submit")))
	b.wait("signed in as "+name, `location.hash !== "#/signin" && document.querySelector("#who").textContent === `+webtest.JS(name))
}

// axeClean fails the test when the page as it is now has serious or
// critical accessibility violations.
func (b *tab) axeClean(t *testing.T, where string) {
	t.Helper()
	if vs := runAxe(t, b.ctx, axeSource(t), where); len(vs) > 0 {
		t.Errorf("%s: %d serious or critical WCAG 2.1 A/AA violations:%s", where, len(vs), describeViolations(vs))
	}
}

// getJSON GETs url with the bearer key, wants 200 and decodes into out.
func getJSON(t *testing.T, url, key string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d: %s", url, res.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, raw)
	}
}
