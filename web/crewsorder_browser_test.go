package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardReordersCrew: a crew's member order is its callout priority
// list (issue 29 item 4, docs/design.md §15), and a dispatcher sets it on
// the crew's edit form: the members are listed in the crew's order; a
// member newly ticked joins at the end; the keyboard moves one with its
// up and down buttons (focus stays on the moved member, the change is
// said in a status line); the mouse drags one by its handle (real pointer
// input). Saving stores that order, the crew list shows it, and editing
// again starts from it. axe stays clean on the form.
func TestBoardReordersCrew(t *testing.T) {
	srv, key := startServer(t, "order", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})
	base := srv.URL()
	names := []string{"Ana Ruiz", "Ben Okafor", "Chen Li", "Dana Kowalski"}
	ids := map[string]string{}
	for i, n := range names {
		ids[n] = createVia(t, base+"/v1/contacts", key, map[string]any{"number": "+1555010090" + string(rune('1'+i)), "name": n})
	}
	crewID := createVia(t, base+"/v1/crews", key, map[string]any{"name": "Gate", "members": []string{ids["Ana Ruiz"], ids["Ben Okafor"], ids["Chen Li"]}})

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	b.signInDispatcher(base, key, "dana@example.com", "Dana Dispatcher")
	do("open crews", chromedp.Navigate(base+"/#/crews"))
	crewRow := `#crews-body tr.crew[data-name="Gate"]`
	wait("the crew", `!!document.querySelector(`+webtest.JS(crewRow+` button.crew-edit`)+`)`)
	do("edit it", chromedp.Click(chromedp.CSS(crewRow+` button.crew-edit`)))

	orderNow := func() string {
		return webtest.Eval[string](t, ctx, `[...document.querySelectorAll("#crew-order li.crew-order-item .crew-order-name")].map((n) => n.textContent).join(", ")`)
	}
	waitOrder := func(what, want string) {
		t.Helper()
		wait(what, `[...document.querySelectorAll("#crew-order li.crew-order-item .crew-order-name")].map((n) => n.textContent).join(", ") === `+webtest.JS(want))
	}
	item := func(name string) string {
		return `#crew-order li.crew-order-item[data-id="` + ids[name] + `"]`
	}
	waitOrder("the crew's order", "Ana Ruiz, Ben Okafor, Chen Li")
	if webtest.Eval[bool](t, ctx, `!document.querySelector(`+webtest.JS(item("Ana Ruiz")+" button.move-up")+`).disabled || !document.querySelector(`+
		webtest.JS(item("Chen Li")+" button.move-down")+`).disabled`) {
		t.Error("the first can move up or the last down")
	}

	// Ticking Dana (a real click) puts her at the end.
	do("tick Dana", chromedp.Click(chromedp.CSS(`#pick-`+ids["Dana Kowalski"])))
	waitOrder("Dana at the end", "Ana Ruiz, Ben Okafor, Chen Li, Dana Kowalski")
	b.axeClean(t, "crews, editing the order")

	// The keyboard: Dana up one, with Enter on her focused button.
	do("focus Move Dana up", chromedp.Focus(chromedp.CSS(item("Dana Kowalski")+" button.move-up")))
	do("press Enter", chromedp.KeyEvent("\r"))
	waitOrder("Dana third", "Ana Ruiz, Ben Okafor, Dana Kowalski, Chen Li")
	if got := webtest.Eval[string](t, ctx, `document.activeElement.textContent`); got != "↑Move Dana Kowalski up" {
		t.Errorf("focus after the move on %q, want Dana's up button", got)
	}
	if got := text("#crew-order-status"); got != "Dana Kowalski is now 3 of 4." {
		t.Errorf("status %q", got)
	}
	do("press Space", chromedp.KeyEvent(" "))
	waitOrder("Dana second", "Ana Ruiz, Dana Kowalski, Ben Okafor, Chen Li")

	// The mouse: drag Chen by his handle above Ana.
	handle := webtest.Eval[[]float64](t, ctx, `(() => { const el = document.querySelector(`+webtest.JS(item("Chen Li")+" .drag-handle")+`);`+
		` el.scrollIntoView({block: "center"}); const r = el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()`)
	top := webtest.Eval[[]float64](t, ctx, `(() => { const r = document.querySelector(`+webtest.JS(item("Ana Ruiz"))+`).getBoundingClientRect(); return [r.left + 10, r.top + 2]; })()`)
	held := func(p *input.DispatchMouseEventParams) { p.Button, p.Buttons = input.MouseButtonLeft, 1 }
	do("drag Chen to the top",
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, handle[0], handle[1], held, chromedp.ClickCount(1)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, handle[0], (handle[1]+top[1])/2, held),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, handle[0], top[1], held),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, handle[0], top[1], chromedp.ButtonLeft, chromedp.ClickCount(1)),
	)
	waitOrder("Chen first", "Chen Li, Ana Ruiz, Dana Kowalski, Ben Okafor")
	if got := text("#crew-order-status"); got != "Chen Li is now 1 of 4." {
		t.Errorf("status after the drag %q", got)
	}
	b.axeClean(t, "crews, after reordering")

	do("save", chromedp.Click(chromedp.CSS("#crew-save")))
	wait("the form back to New", `document.querySelector("#crew-form-title").textContent === "New crew"`)
	wait("the list in the new order", `(document.querySelector(`+webtest.JS(crewRow)+`) || {}).textContent?.includes("Chen Li, Ana Ruiz, Dana Kowalski, Ben Okafor")`)
	var k struct{ Members []string }
	getJSON(t, base+"/v1/crews/"+crewID, key, &k)
	want := []string{ids["Chen Li"], ids["Ana Ruiz"], ids["Dana Kowalski"], ids["Ben Okafor"]}
	if strings.Join(k.Members, ",") != strings.Join(want, ",") {
		t.Fatalf("stored members %v, want %v", k.Members, want)
	}

	// Editing again starts from the stored order; unticking takes one out.
	do("edit again", chromedp.Click(chromedp.CSS(crewRow+` button.crew-edit`)))
	waitOrder("the stored order", "Chen Li, Ana Ruiz, Dana Kowalski, Ben Okafor")
	do("untick Ana", chromedp.Click(chromedp.CSS(`#pick-`+ids["Ana Ruiz"])))
	waitOrder("Ana out", "Chen Li, Dana Kowalski, Ben Okafor")
	if got := orderNow(); got != "Chen Li, Dana Kowalski, Ben Okafor" {
		t.Errorf("order %q", got)
	}

	// On a phone the order list fits the screen.
	webtest.SetViewport(t, ctx, 360, webtest.PhoneHeight)
	webtest.Eval[bool](t, ctx, `(document.querySelector("#crew-order").scrollIntoView({block: "center"}), true)`)
	if bad := webtest.Eval[[]string](t, ctx, overflowJS); len(bad) > 0 {
		t.Errorf("the crew form at 360 px sticks out of the screen:\n  %s", strings.Join(bad, "\n  "))
	}
	webtest.SaveScreenshot(t, ctx, "phone-360-crew-order.png", 360, webtest.PhoneHeight)
}
