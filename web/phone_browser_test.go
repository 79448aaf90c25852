package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// phoneWidths are the narrow screens every page must fit (issue 33).
var phoneWidths = []int{360, webtest.PhoneWidth}

// overflowJS lists what sticks out of the viewport: the document's scroll
// width when it exceeds the window, and every visible element whose right
// edge passes it (with its tag, id and classes, to find it). Content that
// an ancestor inside the screen clips (overflow other than visible, like
// the visually hidden column headers) does not stick out.
const overflowJS = `(() => {
  const vw = window.innerWidth, bad = [];
  const clipped = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible" && p.getBoundingClientRect().right <= vw + 0.5) return true;
    }
    return false;
  };
  if (document.documentElement.scrollWidth > vw) bad.push("document scrollWidth " + document.documentElement.scrollWidth + " > " + vw);
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest(".sr-only, dialog:not([open])")) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > vw + 0.5 && !clipped(el)) bad.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\s+/).join(".") : "") + " right " + Math.round(r.right));
    if (bad.length > 12) break;
  }
  return bad;
})()`

// unreachableJS lists the menu entries a signed-in admin cannot reach:
// hidden by CSS (not by the hidden attribute, which says the entry does not
// apply) or outside the screen. A menu button, when there is one, is opened
// first.
const unreachableJS = `(() => {
  const toggle = document.querySelector("#nav-toggle");
  if (toggle && toggle.offsetParent !== null && toggle.getAttribute("aria-expanded") !== "true") toggle.click();
  const out = [];
  for (const a of document.querySelectorAll("#nav [data-nav]")) {
    if (a.hidden) continue;
    const r = a.getBoundingClientRect(), s = getComputedStyle(a);
    if (r.width === 0 || r.height === 0 || s.visibility === "hidden" || r.right > window.innerWidth || r.left < 0) out.push(a.dataset.nav);
  }
  if (toggle && toggle.getAttribute("aria-expanded") === "true") toggle.click();
  return out;
})()`

// unlabelledJS lists the values of tables drawn as stacked cards (their
// cells no longer table cells) that show no label of their own: each such
// cell with text must say which column it is (a ::before label). The
// group's roster, whose cards have their own layout, is left to
// TestBoardAccessibility's table check.
const unlabelledJS = `(() => {
  const out = [];
  for (const td of document.querySelectorAll("main table tbody td")) {
    if (td.closest("#roster-body") || td.colSpan > 1 || td.offsetParent === null) continue;
    if (getComputedStyle(td).display === "table-cell") continue;
    const text = [...td.childNodes].filter((n) => !(n.nodeType === 1 && n.matches("button, .button"))).map((n) => n.textContent).join("").trim();
    if (!text) continue;
    const c = getComputedStyle(td, "::before").content;
    if (!c || c === "none" || c === "normal" || c === '""') out.push((td.closest("table").id || td.closest("table").className) + ": " + text.slice(0, 40));
    if (out.length > 8) break;
  }
  return out;
})()`

// TestBoardFitsPhone opens every page of the board signed in as an admin,
// at 360 and 390 px: nothing may scroll sideways or stick out of the
// screen, stacked table rows label each value, and every menu entry must
// be reachable; at 360 px axe-core finds no serious or critical WCAG
// violation on any page (TestBoardAccessibility covers the group pages'
// states in both colour schemes).
func TestBoardFitsPhone(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	src := axeSource(t)
	srv, key := startServer(t, "phone", server.Config{})
	base := srv.URL()
	contact := createVia(t, base+"/v1/contacts", key, map[string]any{"number": "+15550100001", "name": "Ana Ruiz with a rather long name", "tags": []string{"riggers", "night-shift"}})
	createVia(t, base+"/v1/crews", key, map[string]any{"name": "Riggers, night shift, site B", "description": "Everyone who rigs at night on site B", "members": []string{contact}})
	gid := createVia(t, base+"/v1/groups", key, map[string]any{"from": "+15550100000", "to": []string{"+15550100001", "+15550100002"},
		"text":      "Crew call: site B, 7:00 tomorrow. Reply 1 if you are coming, 2 if not.",
		"responses": []map[string]any{{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "Can't make it", "ack": "no"}}})
	createVia(t, base+"/v1/keys", key, map[string]any{"scopes": []string{"read"}, "name": "contractor", "expires_at": time.Now().Add(72 * time.Hour).UTC().Format(time.RFC3339)})
	createVia(t, base+"/v1/webhook-endpoints", key, map[string]any{"url": "https://hooks.example.com/crewcast/deliveries", "events": []string{"*"}, "description": "ops"})
	createVia(t, base+"/v1/templates", key, map[string]any{"name": "Crew call, site B, the long version", "text": "Hi {{first_name}}, crew call at site B, 7:00 tomorrow.",
		"responses": []map[string]any{{"key": "1", "label": "Coming", "ack": "yes"}}})
	addSender(t, base, key, map[string]any{"number": "+15550100000", "provider": "telnyx", "pool": "dispatch, the night shift on site B",
		"registration": map[string]any{"kind": "toll_free", "campaign_id": "TF-verification-0001", "status": "approved"}})

	b := openTab(t)
	b.signIn(base+"/", key)
	pages := []struct{ hash, ready string }{
		{"#/groups", `document.querySelectorAll("#group-list .group-card").length > 0`},
		{"#/groups/" + gid, `document.querySelectorAll("#roster-body tr.recipient").length === 2`},
		{"#/new", `!!document.querySelector("#create-form")`},
		{"#/contacts", `document.body.textContent.includes("Ana Ruiz with a rather long name")`},
		{"#/crews", `document.body.textContent.includes("Riggers, night shift, site B")`},
		{"#/users", `!!document.querySelector("main h1") && !document.body.textContent.includes("Loading")`},
		{"#/keys", `document.querySelectorAll("#key-rows tr[data-key-id]").length >= 2`},
		{"#/audit", `document.querySelectorAll("#audit-rows tr[data-action]").length > 0`},
		{"#/senders", `document.querySelectorAll("#sender-rows tr[data-number]").length === 1`},
		{"#/settings", `!document.querySelector("#retention-line").textContent.startsWith("Loading")`},
		{"#/webhooks", `document.body.textContent.includes("hooks.example.com")`},
		{"#/templates", `document.querySelectorAll("#templates-body tr").length > 0`},
		{"#/replies", `!!document.querySelector("#replies-list") && !document.querySelector("#replies-list").textContent.includes("Loading")`},
		{"#/opt-outs", `!!document.querySelector("#optouts-list") && !document.querySelector("#optouts-list").textContent.includes("Loading")`},
		{"#/account", `!!document.querySelector("#account-identity")`},
		{"#/people/%2B15550100001", `!!document.querySelector("#person-status") && !document.querySelector("#person-status").textContent.startsWith("Loading")`},
	}
	for _, w := range phoneWidths {
		webtest.SetViewport(t, b.ctx, w, webtest.PhoneHeight)
		for _, p := range pages {
			b.do("open "+p.hash, chromedp.Navigate(base+"/"+p.hash))
			b.wait(p.hash+" drawn", p.ready)
			if bad := webtest.Eval[[]string](t, b.ctx, overflowJS); len(bad) > 0 {
				t.Errorf("%s at %d px sticks out of the screen:\n  %s", p.hash, w, strings.Join(bad, "\n  "))
			}
			if bad := webtest.Eval[[]string](t, b.ctx, unlabelledJS); len(bad) > 0 {
				t.Errorf("%s at %d px: stacked values without a label:\n  %s", p.hash, w, strings.Join(bad, "\n  "))
			}
			if miss := webtest.Eval[[]string](t, b.ctx, unreachableJS); len(miss) > 0 {
				t.Errorf("%s at %d px: menu entries not reachable: %v", p.hash, w, miss)
			}
			if w == 360 {
				where := fmt.Sprintf("%s at %d px", p.hash, w)
				if vs := runAxe(t, b.ctx, src, where); len(vs) > 0 {
					t.Errorf("%s: %d serious or critical WCAG 2.1 A/AA violations:%s", where, len(vs), describeViolations(vs))
				}
			}
			if name := shotPages[p.hash]; w == 360 && name != "" {
				webtest.SaveScreenshot(t, b.ctx, fmt.Sprintf("phone-360-%s.png", name), w, webtest.PhoneHeight)
			}
		}
	}
}

// shotPages are the pages TestBoardFitsPhone photographs at 360 px.
var shotPages = map[string]string{"#/audit": "audit", "#/senders": "senders", "#/settings": "settings", "#/keys": "keys", "#/contacts": "contacts"}
