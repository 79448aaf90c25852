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
	t.Parallel() // its own server, database and Chromium
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
	wait("the test's status and error class only", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Test failed: HTTP 410 (http_status)."`, webtest.JS(card(goneID)+" .test-result")))
	do("reload the page", chromedp.Reload())
	wait("the gone endpoint disabled", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.health === "disabled" && document.querySelector(%s).textContent.includes("410")`,
		webtest.JS(card(goneID)), webtest.JS(card(goneID))))
	webtest.SaveScreenshot(t, ctx, "board-webhooks.png", webtest.DesktopWidth, webtest.DesktopHeight)
	do("enable it again", chromedp.Click(chromedp.CSS(card(goneID)+" button.enable")))
	wait("healthy again", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.health === "healthy"`, webtest.JS(card(goneID))))
}

// TestBoardWebhookEndpointsManage drives everything the API has for an
// endpoint from the board as the admin: add one pointing at a local
// server (its secret shown once, with a copy button), edit its events,
// send a test and see its HTTP status, list its attempts, disable it and
// delete it through the confirmation dialog; and runs axe on the page.
func TestBoardWebhookEndpointsManage(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	srv, key := startServer(t, "admin", server.Config{WebhookAllowPrivate: true})
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	b.signIn(srv.URL()+"/", key)
	wait("the Webhooks link for an admin", `!document.querySelector("#nav-webhooks").hidden`)
	do("open the endpoints", chromedp.Click(chromedp.CSS("#nav-webhooks")))
	wait("the add form and no endpoints", `!!document.querySelector("#wh-form") && document.body.textContent.includes("No endpoints yet.")`)
	b.axeClean(t, "webhooks, empty")

	webtest.Type(t, ctx, "#wh-url", hook.URL+"/hooks")
	do("choose single events", chromedp.Click(chromedp.CSS(`#wh-events input[data-event="*"]`)))
	do("pick group.completed", chromedp.Click(chromedp.CSS(`#wh-events input[data-event="group.completed"]`)))
	webtest.Type(t, ctx, "#wh-description", "ops listener")
	do("add the endpoint", chromedp.Click(chromedp.CSS("#wh-submit")))
	wait("its secret shown once with a copy button", `!document.querySelector("#new-endpoint").hidden && /whsec_\S+/.test(document.querySelector("#new-endpoint").textContent) && !!document.querySelector("#new-endpoint button.copy")`)
	wait("the endpoint listed", `document.querySelectorAll("li.endpoint").length === 1`)
	id := webtest.Eval[string](t, ctx, `document.querySelector("li.endpoint").dataset.endpointId`)
	var got struct {
		Events      []string
		Description string
	}
	getJSON(t, srv.URL()+"/v1/webhook-endpoints/"+id, key, &got)
	if len(got.Events) != 1 || got.Events[0] != "group.completed" || got.Description != "ops listener" {
		t.Fatalf("created endpoint = %+v, want events [group.completed] and the description", got)
	}
	card := fmt.Sprintf(`li.endpoint[data-endpoint-id=%q]`, id)
	b.axeClean(t, "webhooks, a new secret")

	do("reload the page", chromedp.Reload())
	wait("the endpoint again, its secret gone", fmt.Sprintf(`!!document.querySelector(%s) && !/whsec_/.test(document.body.textContent)`, webtest.JS(card)))

	do("edit it", chromedp.Click(chromedp.CSS(card+" button.edit")))
	wait("the edit form", fmt.Sprintf(`!!document.querySelector(%s)`, webtest.JS(card+` .endpoint-edit input[data-event="recipient.replied"]`)))
	b.axeClean(t, "webhooks, editing")
	do("add recipient.replied", chromedp.Click(chromedp.CSS(card+` .endpoint-edit input[data-event="recipient.replied"]`)))
	do("save", chromedp.Click(chromedp.CSS(card+` .endpoint-edit button[type="submit"]`)))
	wait("the new events shown", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent?.includes("group.completed, recipient.replied")`, webtest.JS(card+" .endpoint-events")))
	wait("focus back on Edit", fmt.Sprintf(`document.activeElement === document.querySelector(%s)`, webtest.JS(card+" button.edit")))
	getJSON(t, srv.URL()+"/v1/webhook-endpoints/"+id, key, &got)
	if len(got.Events) != 2 {
		t.Fatalf("edited events = %v, want group.completed and recipient.replied", got.Events)
	}

	do("send a test", chromedp.Click(chromedp.CSS(card+" button.send-test")))
	wait("the test's HTTP status", fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === "Test delivered: HTTP 204."`, webtest.JS(card+" .test-result")))
	wait("its attempt listed", fmt.Sprintf(`[...document.querySelectorAll(%s)].some(r => r.dataset.result === "ok" && r.textContent.includes("endpoint.test") && r.textContent.includes("204"))`,
		webtest.JS(card+" tr.attempt")))
	b.axeClean(t, "webhooks, after a test")

	do("rotate its secret", chromedp.Click(chromedp.CSS(card+" button.rotate")))
	wait("the rotate dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm the rotation", chromedp.Click(chromedp.CSS(`#confirm-choices button[data-choice="rotate"]`)))
	wait("the new secret shown once with a copy button", fmt.Sprintf(`!document.querySelector(%s).hidden && /whsec_\S+/.test(document.querySelector(%s).textContent) && !!document.querySelector(%s)`,
		webtest.JS(card+" .endpoint-secret"), webtest.JS(card+" .endpoint-secret"), webtest.JS(card+" .endpoint-secret button.copy")))
	var rotated struct {
		RotatingUntil *string `json:"rotating_until"`
	}
	getJSON(t, srv.URL()+"/v1/webhook-endpoints/"+id, key, &rotated)
	if rotated.RotatingUntil == nil || *rotated.RotatingUntil == "" {
		t.Fatal("after Rotate the endpoint has no rotating_until")
	}

	webtest.Eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%s).value = "2020-01-01T00:00"`, webtest.JS(card+" .endpoint-recover input")))
	do("recover", chromedp.Click(chromedp.CSS(card+" button.recover")))
	wait("the events queued again", `/\d+ events? queued again\./.test(document.querySelector("#toast").textContent)`)

	do("disable it", chromedp.Click(chromedp.CSS(card+" button.disable")))
	wait("disabled", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.health === "disabled" && !!document.querySelector(%s)`, webtest.JS(card), webtest.JS(card+" button.enable")))

	wait("focus on Enable again", fmt.Sprintf(`document.activeElement === document.querySelector(%s)`, webtest.JS(card+" button.enable")))

	do("delete it", chromedp.Click(chromedp.CSS(card+" button.delete")))
	wait("the confirmation dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-choices button[data-choice="delete"]`)))
	wait("the endpoint gone", `document.querySelectorAll("li.endpoint").length === 0 && document.body.textContent.includes("No endpoints yet.") && document.activeElement !== document.body`)
	var list struct{ Endpoints []any }
	getJSON(t, srv.URL()+"/v1/webhook-endpoints", key, &list)
	if len(list.Endpoints) != 0 {
		t.Fatalf("after delete the API still lists %d endpoints", len(list.Endpoints))
	}
}
