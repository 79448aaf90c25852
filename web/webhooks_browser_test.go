package web_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardWebhookEndpoints drives the admin page of outbound webhook
// endpoints in Chromium against the real server: health, the attempts log,
// "Send test" (a 204 endpoint logs an ok attempt; a 410 one is disabled)
// and "Enable again".
func TestBoardWebhookEndpoints(t *testing.T) {
	okSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(okSrv.Close)
	goneSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	t.Cleanup(goneSrv.Close)
	key, _, err := apikey.Generate(rand.Reader, "e2e", []apikey.Scope{apikey.ScopeAdmin}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Addr: "127.0.0.1:0", DB: filepath.Join(t.TempDir(), "crewcast.db"), Provider: server.ProviderDemo,
		AdminKey: key, RetentionInterval: -1, WebhookAllowPrivate: true,
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
	create := func(url string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"url": url, "events": []string{"*"}, "description": "ops"})
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v1/webhook-endpoints", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out struct{ ID string }
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusCreated {
			t.Fatalf("create endpoint: %d %v", res.StatusCode, err)
		}
		return out.ID
	}
	okID, goneID := create(okSrv.URL+"/hooks"), create(goneSrv.URL+"/hooks")
	card := func(id string) string { return fmt.Sprintf(`li.endpoint[data-endpoint-id=%q]`, id) }

	ctx := webtest.NewBrowser(t)
	wait := func(what, expr string) { t.Helper(); webtest.WaitFor(t, ctx, what, expr) }
	do := func(what string, a ...chromedp.Action[chromedp.Void]) { t.Helper(); webtest.Do(t, ctx, what, a...) }
	do("open the board", chromedp.Navigate(srv.URL()+"/"))
	wait("the sign-in form", `!!document.querySelector("#signin-form")`)
	webtest.Type(t, ctx, "#key", key)
	do("sign in", chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("signed in", `location.hash !== "#/signin" && !document.querySelector("#signin-form")`)
	wait("the Webhooks link for an admin", `!document.querySelector("#nav-webhooks").hidden`)
	do("open the endpoints", chromedp.Click(chromedp.CSS("#nav-webhooks")))
	wait("two healthy endpoints", fmt.Sprintf(`document.querySelectorAll('li.endpoint[data-health="healthy"]').length === 2 && !!document.querySelector(%s)`, webtest.JS(card(okID))))

	do("send a test to the working endpoint", chromedp.Click(chromedp.CSS(card(okID)+" button.send-test")))
	wait("its ok attempt with HTTP 204", fmt.Sprintf(`[...document.querySelectorAll(%s)].some(r => r.dataset.result === "ok" && r.textContent.includes("204") && r.textContent.includes("endpoint.test"))`,
		webtest.JS(card(okID)+" tr.attempt")))

	do("send a test to the gone endpoint", chromedp.Click(chromedp.CSS(card(goneID)+" button.send-test")))
	wait("its 410 attempt", fmt.Sprintf(`[...document.querySelectorAll(%s)].some(r => r.dataset.result === "http" && r.textContent.includes("410"))`,
		webtest.JS(card(goneID)+" tr.attempt")))
	do("reload the page", chromedp.Reload())
	wait("the gone endpoint disabled", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.health === "disabled" && document.querySelector(%s).textContent.includes("410")`,
		webtest.JS(card(goneID)), webtest.JS(card(goneID))))
	webtest.SaveScreenshot(t, ctx, "board-webhooks.png", webtest.DesktopWidth, webtest.DesktopHeight)
	do("enable it again", chromedp.Click(chromedp.CSS(card(goneID)+" button.enable")))
	wait("healthy again", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.health === "healthy"`, webtest.JS(card(goneID))))
}
