package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/crewcast/crewcast/web/webtest"
)

// axePath is axe-core's browser bundle, installed from the npm registry by
// `npm ci` at the repository root (package.json pins the version; CI's
// .ci/run installs it).
const axePath = "../node_modules/axe-core/axe.min.js"

// axeSource reads axe-core. Without it the test fails and says how to
// install it, unless CREWCAST_SKIP_BROWSER=1 knowingly skips browser
// checks — the same rule as a missing Chromium: a silently skipped
// accessibility check would hide a gap.
func axeSource(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(axePath)
	if err != nil {
		if os.Getenv(webtest.SkipEnv) == "1" {
			t.Skipf("axe-core not installed (%v); skipped because %s=1", err, webtest.SkipEnv)
		}
		if errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("axe-core is not installed (%s missing): run `npm ci` in the repository root "+
				"(CI's .ci/run does), or set %s=1 to skip browser tests.", axePath, webtest.SkipEnv)
		}
		t.Fatalf("read axe-core: %v", err)
	}
	return string(b)
}

type axeNode struct {
	Target         json.RawMessage `json:"target"`
	FailureSummary string          `json:"failureSummary"`
}

type axeViolation struct {
	ID     string    `json:"id"`
	Impact string    `json:"impact"`
	Help   string    `json:"help"`
	Nodes  []axeNode `json:"nodes"`
}

// runAxe injects axe-core (once per document) and checks the page as it
// is now against WCAG 2.0 and 2.1, levels A and AA. It returns the
// serious and critical violations and logs the others.
func runAxe(t *testing.T, ctx context.Context, src, where string) []axeViolation {
	t.Helper()
	if !webtest.Eval[bool](t, ctx, `typeof window.axe === "object"`) {
		// Runtime.evaluate is not subject to the page's CSP: the board's
		// policy stays as strict as in production.
		webtest.Eval[bool](t, ctx, src+"\n;true")
	}
	raw := webtest.Eval[string](t, ctx, `axe.run(document, {
  runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
  resultTypes: ["violations"],
}).then(r => JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
  nodes: v.nodes.map(n => ({target: n.target, failureSummary: n.failureSummary}))}))))`, chromedp.EvalAwaitPromise)
	var all []axeViolation
	if err := json.Unmarshal([]byte(raw), &all); err != nil {
		t.Fatalf("%s: decode axe result: %v", where, err)
	}
	var bad []axeViolation
	for _, v := range all {
		if v.Impact == "serious" || v.Impact == "critical" {
			bad = append(bad, v)
		} else {
			t.Logf("%s: axe %s (%s, not failing): %s, %d nodes", where, v.ID, v.Impact, v.Help, len(v.Nodes))
		}
	}
	return bad
}

// describeViolations lists rule ids and the nodes each one names.
func describeViolations(vs []axeViolation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "\n  %s (%s): %s", v.ID, v.Impact, v.Help)
		for i, n := range v.Nodes {
			if i == 8 {
				fmt.Fprintf(&b, "\n    … and %d more nodes", len(v.Nodes)-i)
				break
			}
			fmt.Fprintf(&b, "\n    %s: %s", n.Target, strings.ReplaceAll(n.FailureSummary, "\n", " "))
		}
	}
	return b.String()
}

// addGroup stores a group in the fake API (as the seed does).
func (f *fakeAPI) addGroup(g *fakeGroup) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.add(g)
}

// mutate changes a group as the service would (a receipt, a reply),
// recounts it and tells the board's streams.
func (f *fakeAPI) mutate(id string, change func(g *fakeGroup)) {
	f.mu.Lock()
	g := f.groups[id]
	change(g)
	g.UpdatedAt = time.Now()
	recount(g)
	f.mu.Unlock()
	f.publish(id)
}

// richGroup has every state the board draws: a reply that is neither
// yes nor no, a yes and a no, a permanent and a retryable failure with
// their explanations, unconfirmed, unknown, in flight and opted out.
func richGroup(id string) *fakeGroup {
	at := time.Now().Add(-10 * time.Minute)
	return &fakeGroup{ID: id, Mode: "individual", From: "+15550100000", CreatedAt: at, UpdatedAt: at.Add(time.Minute),
		Text: "Crew call: site B, 7:00 tomorrow.\nReply YES if you can make it, NO if not.",
		Recipients: []fakeRecipient{
			{Number: "+15550500001", Name: "Ana Ruiz (foreman)", Status: "delivered", Attempts: 1, SentAt: ptr(at), DeliveredAt: ptr(at.Add(time.Second)),
				ReplyText: "YES", Ack: "yes", RepliedAt: ptr(at.Add(time.Minute))},
			{Number: "+15550500002", Name: "Ben Okafor", Status: "delivered", Attempts: 1, SentAt: ptr(at), DeliveredAt: ptr(at.Add(time.Second)),
				ReplyText: "NO", Ack: "no", RepliedAt: ptr(at.Add(time.Minute))},
			{Number: "+15550500003", Name: "Chen Li", Status: "failed", Attempts: 1, SentAt: ptr(at), FailedAt: ptr(at.Add(time.Second)),
				ErrorCode: "30006", ErrorClass: "recipient"},
			{Number: "+15550500004", Name: "Dana Kowalski", Status: "failed", Attempts: 1, SentAt: ptr(at), FailedAt: ptr(at.Add(time.Second)),
				ErrorCode: "30003", ErrorClass: "carrier"},
			{Number: "+15550500005", Name: "Eli Haddad", Status: "unknown", Attempts: 1, SentAt: ptr(at)},
			{Number: "+15550500006", Status: "unconfirmed", Attempts: 1, ErrorClass: "uncertain"},
			{Number: "+15550500007", Name: "Fatima Noor", Status: "delivered", Attempts: 1, SentAt: ptr(at), DeliveredAt: ptr(at.Add(time.Second)),
				ReplyText: "running late", RepliedAt: ptr(at.Add(time.Minute))},
			{Number: "+15550500008", Status: "sent", Attempts: 1, SentAt: ptr(at)},
			{Number: "+15550500009", Status: "opted_out"},
		}}
}

// TestBoardAccessibility runs axe-core in the browser tests' headless
// Chromium over every board page and open dialog, at desktop and phone
// widths (390 and 360 px), in the light and the dark colour scheme: no serious or critical
// WCAG 2.1 A/AA violation may remain. At phone width it also checks that
// the roster, drawn as cards, still exposes a table with column headers.
func TestBoardAccessibility(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	src := axeSource(t)
	f := newFakeAPI(t)
	f.addGroup(richGroup("grp_rich"))
	f.asUser = true // the Account page shows its password form to users
	srv := newServer(t, f)
	// One browser per colour scheme: each has its own time budget.
	for _, scheme := range []string{"light", "dark"} {
		t.Run(scheme, func(t *testing.T) {
			b := openTab(t)
			ctx, wait, do := b.ctx, b.wait, b.do
			// Clicks through the DOM: this test sets pages up, and a pointer
			// click can land on the sticky top bar after a scroll.
			click := func(what, sel string) {
				t.Helper()
				if !webtest.Eval[bool](t, ctx, fmt.Sprintf(`(() => { const el = document.querySelector(%s); if (!el) return false; el.click(); return true })()`, webtest.JS(sel))) {
					t.Fatalf("%s: no element %s\npage text:\n%s", what, sel, webtest.PageText(ctx))
				}
			}

			checked := 0
			for _, width := range []int{webtest.DesktopWidth, webtest.PhoneWidth, 360} {
				height := webtest.DesktopHeight
				if width != webtest.DesktopWidth {
					height = webtest.PhoneHeight
				}
				p := struct {
					scheme        string
					width, height int
				}{scheme, width, height}
				webtest.SetColorScheme(t, ctx, p.scheme)
				webtest.SetViewport(t, ctx, p.width, p.height)
				check := func(page string) {
					t.Helper()
					where := fmt.Sprintf("%s at %d px, %s", page, p.width, p.scheme)
					if vs := runAxe(t, ctx, src, where); len(vs) > 0 {
						t.Errorf("%s: %d serious or critical WCAG 2.1 A/AA violations:%s", where, len(vs), describeViolations(vs))
					}
					checked++
				}

				// Signed out, with the bad-key message showing.
				if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
					t.Fatal(err)
				}
				// A new document: the board checks its session when it loads.
				do("leave the board", chromedp.Navigate("about:blank"))
				do("open the board signed out", chromedp.Navigate(srv.URL+"/#/groups"))
				wait("the sign-in form", `location.hash === "#/signin" && !!document.querySelector("#signin-form")`)
				webtest.Type(t, ctx, "#key", "cc_wrong")
				click("submit a wrong key", "#signin-submit")
				wait("the bad-key message", `!document.querySelector("#key-error").hidden`)
				if !webtest.Eval[bool](t, ctx, `document.querySelector("#key").getAttribute("aria-invalid") === "true" &&
				document.querySelector("#key").getAttribute("aria-describedby").split(" ").includes("key-error")`) {
					t.Error("the refused key field is not aria-invalid with its error in aria-describedby")
				}
				check("sign-in with an error")
				webtest.Type(t, ctx, "#key", fakeKey)
				click("sign in", "#signin-submit")
				wait("the group list", `document.querySelectorAll("#group-list .group-card").length === 4`)
				check("groups list")

				// The Account page, with a field error showing.
				do("open the account page", chromedp.Navigate(srv.URL+"/#/account"))
				wait("the account page", `!!document.querySelector("#password-form") && !!document.querySelector("#signout-everywhere")`)
				webtest.Type(t, ctx, "#current-password", "the current password")
				webtest.Type(t, ctx, "#new-password", "short")
				click("submit a short password", "#password-submit")
				wait("the length error", `document.querySelector("#new-password").getAttribute("aria-invalid") === "true"`)
				check("account page with an error")

				// A group with every recipient state, one history open and a
				// refused retry explained.
				do("open the rich group", chromedp.Navigate(srv.URL+"/#/groups/grp_rich"))
				wait("its roster", `document.querySelectorAll("#roster-body tr.recipient").length === 9`)
				click("open a history", row("+15550500001")+" button.history")
				wait("the history", `!!document.querySelector(".timeline-row .tl-item")`)
				click("retry a permanent failure", row("+15550500003")+" button.retry")
				wait("the refusal", `!document.querySelector("#notice").hidden`)
				check("group board")
				if p.width != webtest.DesktopWidth {
					checkRosterTable(t, ctx)
				}

				click("open the resolve dialog", row("+15550500006")+" button.resolve")
				wait("the dialog", `document.querySelector("#confirm-dialog").open`)
				check("resolve dialog")
				click("go back", `#confirm-dialog [data-choice="dismiss"]`)
				wait("the dialog closed", `!document.querySelector("#confirm-dialog").open`)
				click("open the cancel dialog", "#cancel-group")
				wait("the dialog", `document.querySelector("#confirm-dialog").open`)
				check("cancel dialog")
				click("keep sending", `#confirm-dialog [data-choice="dismiss"]`)
				wait("the dialog closed", `!document.querySelector("#confirm-dialog").open`)

				do("open the paused group", chromedp.Navigate(srv.URL+"/#/groups/grp_paused"))
				wait("the pause banner", `!!document.querySelector(".group-head .banner-warn")`)
				check("paused group")
				do("open a missing group", chromedp.Navigate(srv.URL+"/#/groups/grp_missing"))
				wait("not found", `document.querySelector("h1") && document.querySelector("h1").textContent === "Group not found"`)
				check("missing group")

				// The form with the form's own errors, line notes and a server
				// error all showing.
				do("open the form", chromedp.Navigate(srv.URL+"/#/new"))
				wait("the form", `!!document.querySelector("#create-form")`)
				webtest.Type(t, ctx, "#from", "5550100000")
				webtest.Fill(t, ctx, "#to", "+15550100001\nnot a number\n+15550100001")
				click("submit without text", "#submit")
				wait("the field errors", `document.querySelector("#from-error").textContent !== "" && document.querySelector("#text-error").textContent !== ""`)
				// Each error is text tied to its field; nothing in the form speaks
				// by itself as the user types.
				for _, field := range []string{"from", "text"} {
					if !webtest.Eval[bool](t, ctx, fmt.Sprintf(`(() => { const f = document.getElementById(%[1]q), e = document.getElementById(%[1]q + "-error");
					return f.getAttribute("aria-invalid") === "true" && f.getAttribute("aria-describedby").split(" ").includes(e.id) && e.textContent.trim() !== "" })()`, field)) {
						t.Errorf("#%s in error is not aria-invalid with a text message in aria-describedby", field)
					}
				}
				if n := webtest.Eval[int](t, ctx, `document.querySelectorAll('#create-form [aria-live], #create-form [role="status"]').length`); n != 0 {
					t.Errorf("%d live regions in the form; hints and errors must not speak on every keystroke", n)
				}
				check("new-message form with errors")
				webtest.Type(t, ctx, "#from", "+15550100000")
				webtest.Fill(t, ctx, "#text", "Crew call")
				click("submit to the server", "#submit")
				wait("the server's line error", `document.querySelector("#to-error").textContent.includes("Line 2")`)
				check("new-message form with server errors")
			}
			if checked != 30 {
				t.Errorf("checked %d page states, want 30", checked)
			}
		})
	}
}

// checkRosterTable asserts, from Chromium's accessibility tree, that the
// roster is still a table with its column headers when CSS draws it as
// cards (a display change must not strip table semantics).
func checkRosterTable(t *testing.T, ctx context.Context) {
	t.Helper()
	res, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("accessibility tree: %v", err)
	}
	roles := map[string]int{}
	var headers []string
	for _, n := range res.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		var role string
		_ = json.Unmarshal(n.Role.Value, &role)
		roles[role]++
		if role == "columnheader" && n.Name != nil {
			var name string
			_ = json.Unmarshal(n.Name.Value, &name)
			headers = append(headers, name)
		}
	}
	if roles["table"] == 0 || roles["row"] < 10 || roles["cell"] == 0 {
		t.Errorf("at phone width the roster is not exposed as a table: roles %v", roles)
	}
	for _, want := range []string{"Recipient", "Status", "Reply", "Last update"} {
		found := false
		for _, h := range headers {
			// CSS capitalizes the headers; the names are the words.
			found = found || strings.EqualFold(h, want)
		}
		if !found {
			t.Errorf("at phone width column header %q is not exposed (headers: %q)", want, headers)
		}
	}
}

// newServer serves the fake API and stops it after the browser closed.
func newServer(t *testing.T, f *fakeAPI) *httptest.Server {
	srv := httptest.NewServer(f.handler())
	// Registered before the browser, so it runs after the browser closed.
	t.Cleanup(func() {
		f.close()
		srv.Close()
	})
	return srv
}

// liveLog starts recording every text the board's announcement regions
// say, in order, as window.__said = {summary: [...], events: [...]}.
const liveLog = `(() => {
  window.__said = {summary: [], events: []};
  for (const [name, id] of [["summary", "announce-summary"], ["events", "announce-events"]]) {
    const el = document.getElementById(id);
    if (!el) return false;
    new MutationObserver(() => {
      const text = el.textContent.trim();
      if (text) window.__said[name].push(text);
    }).observe(el, {childList: true, characterData: true, subtree: true});
  }
  return true;
})()`

// TestBoardAnnouncesChanges checks what a screen reader hears on the group
// board: a count change updates the one polite summary; a refetch that
// changed no number says nothing; a new reply and a failure are announced
// as events, and a burst of them is coalesced instead of flooding.
func TestBoardAnnouncesChanges(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	f := newFakeAPI(t)
	g := richGroup("grp_live")
	for i := range g.Recipients[:4] {
		r := &g.Recipients[i]
		*r = fakeRecipient{Number: r.Number, Name: r.Name, Status: "sent", Attempts: 1, SentAt: r.SentAt}
	}
	g.Recipients = g.Recipients[:6]
	f.addGroup(g)
	srv := newServer(t, f)
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do
	said := func(name string) []string {
		t.Helper()
		return webtest.Eval[[]string](t, ctx, `window.__said.`+name)
	}

	b.signIn(srv.URL+"/#/groups/grp_live", fakeKey)
	wait("the roster", `document.querySelectorAll("#roster-body tr.recipient").length === 6`)
	wait("the stream", `document.querySelector(".live-badge").dataset.state === "live"`)
	if !webtest.Eval[bool](t, ctx, liveLog) {
		t.Fatal("the page has no #announce-summary and #announce-events live regions")
	}
	for _, id := range []string{"announce-summary", "announce-events", "toast"} {
		if !webtest.Eval[bool](t, ctx, fmt.Sprintf(`(() => { const el = document.getElementById(%q);
			return !!el && !el.hidden && getComputedStyle(el).display !== "none" && getComputedStyle(el).visibility !== "hidden" &&
				(el.getAttribute("aria-live") === "polite" || el.getAttribute("role") === "status") })()`, id)) {
			t.Errorf("#%s is not a polite live region present in the page while idle", id)
		}
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll('main [aria-live]:not([aria-live="off"]), main [role="status"]:not(.live-badge), main [role="alert"]').length`); n > 2 {
		t.Errorf("the board has %d live regions inside main; counts must be announced through the one summary", n)
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll('[aria-live="off"]').length`); n != 0 {
		t.Errorf("%d elements use aria-live=off", n)
	}
	// Short windows keep the test quick; the board's defaults are longer.
	webtest.Eval[bool](t, ctx, `import("/static/announce.js").then(m => { m.setTiming({summaryMs: 200, eventMs: 400}); return true })`, chromedp.EvalAwaitPromise)

	// A count change: one whole summary.
	f.mutate("grp_live", func(g *fakeGroup) {
		r := &g.Recipients[0]
		r.Status, r.DeliveredAt = "delivered", ptr(time.Now())
	})
	wait("the summary after a delivery", `window.__said.summary.includes("1 of 6 delivered, 1 unconfirmed, 1 unknown, 3 in progress")`)

	// A refetch that changed no number says nothing.
	before := f.getCount("grp_live")
	f.mutate("grp_live", func(g *fakeGroup) {})
	for f.getCount("grp_live") == before {
		time.Sleep(20 * time.Millisecond)
	}
	do("let any announcement fall due", chromedp.Sleep(time.Second))
	if got := said("summary"); len(got) != 1 {
		t.Errorf("summary announcements = %q; an unchanged count must not be announced again", got)
	}

	// A reply and a failure are events; the summary follows.
	f.mutate("grp_live", func(g *fakeGroup) {
		r := &g.Recipients[1]
		r.Status, r.DeliveredAt, r.ReplyText, r.Ack, r.RepliedAt = "delivered", ptr(time.Now()), "YES, on my way", "yes", ptr(time.Now())
	})
	wait("the reply announced", `window.__said.events.some(s => s.includes("Ben Okafor replied: YES, on my way"))`)
	f.mutate("grp_live", func(g *fakeGroup) {
		r := &g.Recipients[2]
		r.Status, r.ErrorCode, r.ErrorClass, r.FailedAt = "failed", "30006", "recipient", ptr(time.Now())
	})
	wait("the failure announced", `window.__said.events.some(s => s.includes("Chen Li") && s.includes("failed"))`)
	wait("the summary after both", `window.__said.summary.at(-1) === "2 of 6 delivered, 1 failed, 1 unconfirmed, 1 unknown, 1 in progress, 1 replied"`)

	// A burst of changes in quick succession is coalesced.
	n := len(said("events"))
	f.mutate("grp_live", func(g *fakeGroup) {
		r := &g.Recipients[3]
		r.Status, r.ErrorCode, r.ErrorClass, r.FailedAt = "failed", "30003", "carrier", ptr(time.Now())
	})
	for i := range 3 {
		f.mutate("grp_live", func(g *fakeGroup) {
			r := &g.Recipients[i]
			r.ReplyText, r.RepliedAt = fmt.Sprintf("reply %d", i), ptr(time.Now())
		})
	}
	wait("the burst announced", fmt.Sprintf(`window.__said.events.length > %d && window.__said.events.slice(%d).join(" ").includes("failed")`, n, n))
	do("let the rest fall due", chromedp.Sleep(time.Second))
	if got := said("events")[n:]; len(got) > 2 {
		t.Errorf("a burst of 4 changes made %d announcements %q; want them coalesced", len(got), got)
	}
}

// activeIn is a JS expression: the focused element is a button inside the
// roster row of number (and, with class, has that class).
func activeIn(number, class string) string {
	return fmt.Sprintf(`(() => { const a = document.activeElement; const tr = a && a.closest("tr.recipient");
		return !!tr && tr.dataset.number === %s && a.tagName === "BUTTON" && (%s === "" || a.classList.contains(%s)) })()`,
		webtest.JS(number), webtest.JS(class), webtest.JS(class))
}

// focusSettles waits (up to a second) for expr to hold: focus moves after
// the dialog's queued close event, not at once.
func focusSettles(t *testing.T, ctx context.Context, expr string) bool {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Second)))
	return err == nil
}

func activeDescription(t *testing.T, ctx context.Context) string {
	return webtest.Eval[string](t, ctx, `(() => { const a = document.activeElement; if (!a) return "nothing";
		const tr = a.closest("tr"); return a.tagName + "." + a.className + (tr ? " in row " + tr.dataset.number : "") +
		" named " + JSON.stringify(a.textContent.slice(0, 80)) })()`)
}

// TestBoardKeepsFocus checks that focus stays where the keyboard user was
// when an action or a live update redraws a roster row: after Retry, after
// Resolve through the dialog, and while an SSE refresh rebuilds the row
// whose History button has focus. It also checks that each row's buttons
// say whom they act on.
func TestBoardKeepsFocus(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	f := newFakeAPI(t)
	f.addGroup(richGroup("grp_rich"))
	srv := newServer(t, f)
	b := openTab(t)
	ctx, wait, do := b.ctx, b.wait, b.do

	b.signIn(srv.URL+"/#/groups/grp_rich", fakeKey)
	wait("the roster", `document.querySelectorAll("#roster-body tr.recipient").length === 9`)

	// Buttons say whom they act on.
	names := webtest.Eval[[]string](t, ctx, `[...document.querySelectorAll("#roster-body tr.recipient button")].map(b => b.textContent.replace(/\s+/g, " ").trim())`)
	for _, want := range []string{"History for Ana Ruiz (foreman) +15550500001", "Retry Dana Kowalski +15550500004", "Resolve… Eli Haddad +15550500005",
		"History for +15550500009"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("no button named %q; roster buttons: %q", want, names)
		}
	}

	// Retry with the keyboard: the row is rebuilt, the Retry button is
	// gone, focus moves to the same row's History button.
	dana := "+15550500004"
	do("focus Retry", chromedp.Focus(chromedp.CSS(row(dana)+" button.retry")))
	do("press Enter", chromedp.KeyEvent(kb.Enter))
	wait("the retry applied", fmt.Sprintf(`document.querySelector(%s).dataset.status === "pending"`, webtest.JS(row(dana))))
	wait("the toast", `document.querySelector("#toast").textContent.includes("Retry requested")`)
	if !focusSettles(t, ctx, activeIn(dana, "history")) {
		t.Errorf("after Retry focus is on %s, want %s's History button", activeDescription(t, ctx), dana)
	}

	// Resolve through the dialog, by keyboard: focus returns to the row.
	unc := "+15550500006"
	do("focus Resolve", chromedp.Focus(chromedp.CSS(row(unc)+" button.resolve")))
	do("press Enter", chromedp.KeyEvent(kb.Enter))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	do("focus Delivered", chromedp.Focus(chromedp.CSS(`#confirm-dialog [data-choice="delivered"]`)))
	do("press Enter", chromedp.KeyEvent(kb.Enter))
	wait("the recipient delivered", fmt.Sprintf(`document.querySelector(%s).dataset.status === "delivered"`, webtest.JS(row(unc))))
	wait("the dialog closed", `!document.querySelector("#confirm-dialog").open`)
	if !focusSettles(t, ctx, activeIn(unc, "history")) {
		t.Errorf("after Resolve focus is on %s, want %s's History button", activeDescription(t, ctx), unc)
	}

	// Back out of the dialog: focus returns to the same Resolve button,
	// even though a live update rebuilt the row meanwhile.
	eli := "+15550500005"
	do("focus Resolve", chromedp.Focus(chromedp.CSS(row(eli)+" button.resolve")))
	do("press Enter", chromedp.KeyEvent(kb.Enter))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	webtest.Eval[bool](t, ctx, fmt.Sprintf(`window.__oldRow = document.querySelector(%s); true`, webtest.JS(row(eli))))
	f.mutate("grp_rich", func(g *fakeGroup) { g.Recipients[4].Attempts = 2 })
	wait("the row rebuilt", fmt.Sprintf(`document.querySelector(%s) !== window.__oldRow`, webtest.JS(row(eli))))
	do("press Escape", chromedp.KeyEvent(kb.Escape))
	wait("the dialog closed", `!document.querySelector("#confirm-dialog").open`)
	if !focusSettles(t, ctx, activeIn(eli, "resolve")) {
		t.Errorf("after backing out of the dialog focus is on %s, want %s's Resolve button", activeDescription(t, ctx), eli)
	}

	// A live update rebuilds the row whose History button has focus.
	ana := "+15550500001"
	do("focus History", chromedp.Focus(chromedp.CSS(row(ana)+" button.history")))
	webtest.Eval[bool](t, ctx, fmt.Sprintf(`window.__oldRow = document.querySelector(%s); true`, webtest.JS(row(ana))))
	f.mutate("grp_rich", func(g *fakeGroup) { g.Recipients[0].Attempts = 2 })
	wait("the row rebuilt", fmt.Sprintf(`document.querySelector(%s) !== window.__oldRow`, webtest.JS(row(ana))))
	if !focusSettles(t, ctx, activeIn(ana, "history")) {
		t.Errorf("after a live update focus is on %s, want %s's History button", activeDescription(t, ctx), ana)
	}

	// A dialog opened right after the previous one closed stays open: the
	// first one's queued close event must not close the second.
	stillOpen := webtest.Eval[bool](t, ctx, `(async () => {
  const ui = await import("/static/ui.js");
  const choices = [{value: null, label: "Back"}, {value: "x", label: "Go"}];
  const first = ui.ask({title: "First", body: [], choices});
  document.querySelector('#confirm-dialog [data-choice="dismiss"]').click();
  await first;
  ui.ask({title: "Second", body: [], choices});
  await new Promise((r) => setTimeout(r, 100));
  const open = document.querySelector("#confirm-dialog").open;
  document.querySelector('#confirm-dialog [data-choice="dismiss"]').click();
  return open;
})()`, chromedp.EvalAwaitPromise)
	if !stillOpen {
		t.Error("a dialog opened right after another closed was closed by the first one's close event")
	}

	// On the list, a live update keeps focus on the card link.
	do("open the list", chromedp.Navigate(srv.URL+"/#/groups"))
	wait("the list", `document.querySelectorAll("#group-list .group-card").length === 4`)
	if !webtest.Eval[bool](t, ctx, liveLog) {
		t.Fatal("no announcement regions")
	}
	do("focus a card", chromedp.Focus(chromedp.CSS(`[data-group-id="grp_rich"] a`)))
	if got := webtest.Eval[string](t, ctx, `document.activeElement.textContent`); got != "Crew call: site B, 7:00 tomorrow." {
		t.Errorf("card link reads %q, want the group's first line only", got)
	}
	f.mutate("grp_rich", func(g *fakeGroup) { g.Recipients[3].Status, g.Recipients[7].Status = "delivered", "delivered" })
	wait("the card updated", `document.querySelector('[data-group-id="grp_rich"] .summary-main').textContent.startsWith("6 of 9 delivered")`)
	if !focusSettles(t, ctx, `!!document.activeElement.closest('[data-group-id="grp_rich"]')`) {
		t.Errorf("after a live update on the list focus is on %s", activeDescription(t, ctx))
	}
	// The group finished: its new status is announced once, not the list.
	wait("the status change announced", `window.__said.events.some(s => s.startsWith("Complete — 2 need attention: Crew call"))`)
	if got := webtest.Eval[[]string](t, ctx, `window.__said.events`); len(got) != 1 {
		t.Errorf("list announcements = %q, want the one status change", got)
	}
}
