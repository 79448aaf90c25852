package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

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
	srv, key := startServer(t, "e2e", server.Config{WebhookAllowPrivate: true})
	create := func(url string) string {
		t.Helper()
		return createVia(t, srv.URL()+"/v1/webhook-endpoints", key, map[string]any{"url": url, "events": []string{"*"}, "description": "ops"})
	}
	okID, goneID := create(okSrv.URL+"/hooks"), create(goneSrv.URL+"/hooks")
	card := func(id string) string { return fmt.Sprintf(`li.endpoint[data-endpoint-id=%q]`, id) }

	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signIn(srv.URL()+"/", key)
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
