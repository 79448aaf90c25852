package web_test

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/web/webtest"
)

var update = flag.Bool("update", false, "rewrite testdata/board.png and testdata/board-phone.png")

// xssReply is the reply the fake recipient sends: if the board ever parsed
// reply text as HTML, an <img> would appear and its onerror would open an
// alert, which the browser watchdog reports.
const xssReply = "YES <img src=x onerror=alert(1)>"

var created = []string{"+15550100001", "+15550100002", "+15550100003", "+15550100004", "+15550100005"}

// row is a CSS selector for a recipient's row in the roster.
func row(number string) string { return fmt.Sprintf(`tr.recipient[data-number=%q]`, number) }

// counter is a JS expression for a counter tile's value.
func counter(name string) string {
	return fmt.Sprintf(`(document.querySelector('[data-counter=%q] .tile-value') || {}).textContent`, name)
}

// TestBoardInBrowser drives the board in headless Chromium against the
// fake API: sign-in, list, create (with a server field error first), live
// progress over SSE without a reload, a reply shown as text, history, a
// refused retry, resolving an unconfirmed recipient through the dialog,
// canceling a group, phone layout and sign-out.
func TestBoardInBrowser(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	f := newFakeAPI(t)
	srv := httptest.NewServer(f.handler())
	// Registered before the browser, so it runs after the browser closed.
	t.Cleanup(func() {
		f.close()
		srv.Close()
	})
	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text

	// Signed out: any route lands on the sign-in form.
	do("open the board", chromedp.Navigate(srv.URL+"/#/groups/grp_seed"))
	wait("the sign-in form", `location.hash === "#/signin" && !!document.querySelector("#signin-form")`)
	do("submit a wrong key", chromedp.SendKeys(chromedp.CSS("#key"), "cc_wrong"), chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("the bad-key message", `!document.querySelector("#key-error").hidden`)
	_, signinShot := webtest.SaveScreenshot(t, ctx, "board-signin.png", webtest.DesktopWidth, webtest.DesktopHeight)
	if got := text("#key-error"); !strings.Contains(got, "not accepted") {
		t.Errorf("bad key message = %q", got)
	}
	webtest.Type(t, ctx, "#key", fakeKey)
	do("submit the right key", chromedp.Click(chromedp.CSS("#signin-submit")))
	// Sign-in returns to the page first asked for.
	wait("the seeded group page after sign-in", `location.hash === "#/groups/grp_seed" && !!document.querySelector("#roster-body tr.recipient")`)
	if webtest.Eval[bool](t, ctx, `document.cookie.includes("crewcast_session")`) {
		t.Error("session cookie is readable from JS; it must be HttpOnly")
	}

	// The list shows both groups with counters and a progress bar.
	do("open the list", chromedp.Navigate(srv.URL+"/#/groups"))
	wait("the seeded groups listed", `document.querySelectorAll("#group-list .group-card").length === 3`)
	if got := text(`[data-group-id="grp_old"] .summary-main`); got != "10 of 12 delivered · 1 failed · 1 not sent" {
		t.Errorf("grp_old summary = %q", got)
	}
	// A complete group with a failed recipient is not a green "Complete".
	if got := text(`[data-group-id="grp_old"] [data-group-status]`); got != "Complete — 1 needs attention" {
		t.Errorf("grp_old status chip = %q", got)
	}
	if got := webtest.Eval[string](t, ctx, `document.querySelector('[data-group-id="grp_seed"] [role=progressbar]').getAttribute("aria-valuenow")`); got != "2" {
		t.Errorf("grp_seed progressbar aria-valuenow = %q, want 2 (two final recipients)", got)
	}
	wait("the list stream to connect", `document.querySelector(".live-badge").dataset.state === "live"`)
	_, listShot := webtest.SaveScreenshot(t, ctx, "board-list.png", webtest.DesktopWidth, webtest.DesktopHeight)

	// Create: a number the server rejects is reported next to the field,
	// naming the line the user typed it on (blank lines don't count).
	do("open the form", chromedp.Click(chromedp.CSS("#nav-new")))
	wait("the create form", `!!document.querySelector("#create-form")`)
	// A From number without its country code is explained in words, not
	// just an orange border, as soon as the field is left.
	webtest.Type(t, ctx, "#from", "5550100000")
	webtest.Type(t, ctx, "#to", created[0]+"\n\n12345\n"+created[2]+"\n"+created[0])
	wait("the From explanation", `document.querySelector("#from-error").textContent === "Use international format: +15550100000"`)
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#from").getAttribute("aria-invalid")`); got != "true" {
		t.Errorf("#from aria-invalid = %q", got)
	}
	do("submit with the local From", chromedp.Click(chromedp.CSS("#submit")))
	if got := webtest.Eval[string](t, ctx, `location.hash`); got != "#/new" {
		t.Errorf("a From in local format was submitted; hash = %q", got)
	}
	webtest.Fill(t, ctx, "#from", "+15550100000")
	wait("the From explanation gone", `document.querySelector("#from-error").textContent === "" && !document.querySelector("#from").hasAttribute("aria-invalid")`)
	webtest.Fill(t, ctx, "#text", "Crew call 6am at the north gate. Reply YES to confirm.")
	wait("the client-side hint for line 3", `document.querySelector("#to-hint").textContent.includes("Line 3")`)
	// Four lines: one malformed, one repeated. Two people get the message.
	if got := text("#submit"); got != "Send to 2 recipients" {
		t.Errorf("submit button = %q, want it to count only the recipients that will be sent", got)
	}
	do("submit", chromedp.Click(chromedp.CSS("#submit")))
	wait("the server's field error next to the recipients", `document.querySelector("#to-error").textContent.length > 0`)
	if got, want := text("#to-error"), `Line 3: "12345" is not a possible phone number`; got != want {
		t.Errorf("#to-error = %q, want %q", got, want)
	}
	_, createShot := webtest.SaveScreenshot(t, ctx, "board-create.png", webtest.DesktopWidth, webtest.DesktopHeight)
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#to").getAttribute("aria-invalid")`); got != "true" {
		t.Errorf("#to aria-invalid = %q", got)
	}
	if got := webtest.Eval[string](t, ctx, `location.hash`); got != "#/new" {
		t.Errorf("after a refused create, hash = %q", got)
	}
	webtest.Fill(t, ctx, "#to", strings.Join(created, "\n"))
	do("submit the fixed form", chromedp.Click(chromedp.CSS("#submit")))
	var id string
	select {
	case id = <-f.created:
	case <-time.After(webtest.WaitTimeout):
		t.Fatalf("the form did not create a group; page:\n%s", webtest.PageText(ctx))
	}

	// The new group's page: all pending until the fake starts sending.
	wait("the new group page", fmt.Sprintf(`location.hash === %s && document.querySelectorAll("#roster-body tr.recipient[data-status=pending]").length === 5`,
		webtest.JS("#/groups/"+id)))
	wait("the group stream to connect", `document.querySelector(".live-badge").dataset.state === "live"`)
	// The stream resumes from the journal position the page loaded,
	// instead of replaying the whole journal.
	if uris := f.streamURIs(); !strings.HasPrefix(uris[len(uris)-1], "/v1/groups/"+id+"/stream?after=") {
		t.Errorf("group stream opened as %q, want ?after=<seq>", uris[len(uris)-1])
	}
	webtest.Eval[bool](t, ctx, `window.__sameDocument = true`)
	getsBefore := f.getCount(id)
	f.start(id)

	// Counters reach their final values from SSE-driven refetches alone.
	// Yes, No, other replies and no reply are separate tiles: a NO is
	// never added to the YESes.
	for name, want := range map[string]string{"delivered": "3", "failed": "1", "unconfirmed": "1", "ack_yes": "1", "ack_no": "0",
		"replied": "0", "no_reply": "4", "in_progress": "0"} {
		wait("counter "+name+" = "+want, counter(name)+" === "+webtest.JS(want))
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll('[data-counter="acknowledged"]').length`); n != 0 {
		t.Error("the board still shows one Acknowledged tile adding yes and no")
	}
	wait("group status complete", `!!document.querySelector('.group-head [data-group-status="complete"]')`)
	if got := text(".group-head [data-group-status]"); got != "Complete — 2 need attention" {
		t.Errorf("group status label = %q, want it to say two recipients need attention", got)
	}
	if got := text("#attention"); !strings.Contains(got, "2 recipients need attention (1 failed, 1 unconfirmed)") {
		t.Errorf("attention banner = %q", got)
	}
	if !webtest.Eval[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded; live updates must not reload")
	}
	if got := f.getCount(id) - getsBefore; got < 2 {
		t.Errorf("group refetched %d times during the progression, want ≥ 2 (driven by SSE)", got)
	}
	if got := text(row(created[0]) + " .chip[data-status]"); got != "Delivered" {
		t.Errorf("%s chip = %q", created[0], got)
	}
	// The error is explained in words, with the provider's page.
	if got := text(row(created[2]) + " .error-line .error-detail"); !strings.Contains(got, "landline") {
		t.Errorf("%s error explanation = %q", created[2], got)
	}
	if got := webtest.Eval[string](t, ctx, fmt.Sprintf(`document.querySelector(%s).getAttribute("href")`, webtest.JS(row(created[2])+" .error-link"))); got != "https://www.twilio.com/docs/api/errors/30006" {
		t.Errorf("%s error link = %q", created[2], got)
	}

	// The reply is text, not markup.
	if got := text(row(created[1]) + " .reply-text"); got != xssReply {
		t.Errorf("reply shown as %q, want %q", got, xssReply)
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll('img[src="x"], main img').length`); n != 0 {
		t.Errorf("%d img elements from the reply text", n)
	}
	if got := text(row(created[1]) + ` [data-flag]`); got != "Acknowledged" {
		t.Errorf("reply flag = %q", got)
	}

	// History comes from the journal, reply included, as text.
	do("open the history", chromedp.Click(chromedp.CSS(row(created[1])+" button.history")))
	wait("the reply in the history", `!!document.querySelector('.timeline-row .tl-item[data-type="reply.received"]')`)
	if got := text(`.timeline-row .tl-item[data-type="reply.received"] .tl-detail`); !strings.Contains(got, xssReply) {
		t.Errorf("history reply detail = %q", got)
	}
	if got := text(`.timeline-row .tl-item[data-type="vendor.note"] .tl-title`); got != "vendor.note" {
		t.Errorf("unknown event type shown as %q", got)
	}
	if got := text(`.timeline-row .tl-item[data-type="send.outcomes"] .tl-title`); got != "Provider accepted the message" {
		t.Errorf("send.outcomes shown as %q", got)
	}

	// A refused retry (409) shows the server's reason.
	do("retry the failed recipient", chromedp.Click(chromedp.CSS(row(created[2])+" button.retry")))
	wait("the refusal", `!document.querySelector("#notice").hidden`)
	if got := text("#notice"); !strings.Contains(got, "error 30006 is a permanent failure for this recipient") {
		t.Errorf("notice = %q", got)
	}

	// Resolve the unconfirmed recipient through the confirmation dialog.
	do("open the resolve dialog", chromedp.Click(chromedp.CSS(row(created[3])+" button.resolve")))
	wait("the dialog", `document.querySelector("#confirm-dialog").open`)
	if got := text("#confirm-dialog"); !strings.Contains(got, "Check the handset or the provider's inbox first") ||
		!strings.Contains(got, "Not delivered") {
		t.Errorf("dialog text = %q", got)
	}
	_, dialogShot := webtest.SaveScreenshot(t, ctx, "board-resolve-dialog.png", webtest.DesktopWidth, webtest.DesktopHeight)
	do("choose delivered", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="delivered"]`)))
	wait("the dialog to close", `!document.querySelector("#confirm-dialog").open`)
	wait("the recipient delivered", fmt.Sprintf(`(document.querySelector(%s) || {dataset: {}}).dataset.status === "delivered"`, webtest.JS(row(created[3]))))
	wait("delivered counter 4", counter("delivered")+` === "4"`)
	wait("unconfirmed counter 0", counter("unconfirmed")+` === "0"`)
	wait("one left needing attention", `document.querySelector(".group-head [data-group-status]").textContent === "Complete — 1 needs attention"`)

	png, deskShot := webtest.SaveScreenshot(t, ctx, "board.png", webtest.DesktopWidth, webtest.DesktopHeight)
	webtest.SetViewport(t, ctx, webtest.PhoneWidth, webtest.PhoneHeight)
	phonePNG, phoneShot := webtest.SaveScreenshot(t, ctx, "board-phone.png", webtest.PhoneWidth, webtest.PhoneHeight)
	if webtest.Eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Errorf("phone layout scrolls sideways: scrollWidth %v", webtest.Eval[float64](t, ctx, `document.documentElement.scrollWidth`))
	}
	webtest.SetColorScheme(t, ctx, "dark")
	_, darkShot := webtest.SaveScreenshot(t, ctx, "board-phone-dark.png", webtest.PhoneWidth, webtest.PhoneHeight)
	webtest.SetColorScheme(t, ctx, "")
	do("open the list on the phone", chromedp.Navigate(srv.URL+"/#/groups"))
	wait("four groups listed", `document.querySelectorAll("#group-list .group-card").length === 4`)
	_, phoneListShot := webtest.SaveScreenshot(t, ctx, "board-list-phone.png", webtest.PhoneWidth, webtest.PhoneHeight)
	webtest.SetViewport(t, ctx, webtest.DesktopWidth, webtest.DesktopHeight)

	// Cancel a group that is still awaiting receipts.
	do("open the seeded group", chromedp.Navigate(srv.URL+"/#/groups/grp_seed"))
	wait("the cancel button", `!!document.querySelector("#cancel-group")`)
	if got := webtest.Eval[string](t, ctx, `document.querySelector("#export-csv").getAttribute("href")`); got != "/v1/reports/deliveries?group_id=grp_seed&format=csv" {
		t.Errorf("CSV link = %q", got)
	}
	do("cancel it", chromedp.Click(chromedp.CSS("#cancel-group")))
	wait("the cancel dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="cancel"]`)))
	wait("the group canceled", `!!document.querySelector('.group-head [data-group-status="canceled"]') && !document.querySelector("#cancel-group")`)

	// Resume a paused group after reading why it paused.
	do("open the paused group", chromedp.Navigate(srv.URL+"/#/groups/grp_paused"))
	wait("the pause banner", `!!document.querySelector(".group-head .banner-warn")`)
	if got := text(".group-head .banner-warn"); !strings.Contains(got, "not enabled for messaging (error 40310)") {
		t.Errorf("pause banner = %q", got)
	}
	do("resume", chromedp.Click(chromedp.CSS("#resume-group")))
	wait("the resume dialog", `document.querySelector("#confirm-dialog").open`)
	if got := text("#confirm-body"); !strings.Contains(got, "error 40310") {
		t.Errorf("resume dialog = %q; it should repeat the pause reason", got)
	}
	do("confirm the resume", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="resume"]`)))
	wait("the group sending again", `!!document.querySelector('.group-head [data-group-status="sending"]') && !document.querySelector("#resume-group")`)

	// Sign out ends the session on the server too.
	do("sign out", chromedp.Click(chromedp.CSS("#signout")))
	wait("the sign-in form", `location.hash === "#/signin" && !!document.querySelector("#signin-form")`)
	if got := webtest.Eval[int](t, ctx, `fetch("/v1/session").then(r => r.status)`, chromedp.EvalAwaitPromise); got != 401 {
		t.Errorf("GET /v1/session after sign-out = %d, want 401", got)
	}

	// A read-only key sees everything but is offered no actions.
	webtest.Type(t, ctx, "#key", readKey)
	do("sign in read-only", chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("the list", `location.hash === "#/groups" && document.querySelectorAll("#group-list .group-card").length === 4`)
	if webtest.Eval[bool](t, ctx, `!document.querySelector("#nav-new").hidden`) {
		t.Error("read-only session offered New message")
	}
	do("open the created group read-only", chromedp.Navigate(srv.URL+"/#/groups/"+id))
	wait("its roster", `document.querySelectorAll("#roster-body tr.recipient").length === 5`)
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("button.retry, button.resolve, #cancel-group").length`); n != 0 {
		t.Errorf("read-only session offered %d action buttons", n)
	}
	do("open the sending group read-only", chromedp.Navigate(srv.URL+"/#/groups/grp_paused"))
	wait("its roster", `document.querySelectorAll("#roster-body tr.recipient").length === 3`)
	if webtest.Eval[bool](t, ctx, `!!document.querySelector("#cancel-group")`) {
		t.Error("read-only session offered Cancel group")
	}

	// A session that ends while the page is open (TTL, restart) leads
	// back to sign-in through the stream's failed reconnect, and signing
	// in again returns to the same page.
	wait("the stream to connect", `document.querySelector(".live-badge").dataset.state === "live"`)
	f.expireSessions()
	wait("sign-in after the session ended", `location.hash === "#/signin" && !!document.querySelector("#signin-form")`)
	if got := text("#toast"); !strings.Contains(got, "session ended") {
		t.Errorf("toast = %q, want a session-ended notice", got)
	}
	webtest.Type(t, ctx, "#key", fakeKey)
	do("sign in again", chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("back on the same group", `location.hash === "#/groups/grp_paused" && !!document.querySelector("#cancel-group")`)

	checkHelpers(t, ctx)

	t.Logf("screenshots: %s", strings.Join([]string{signinShot, listShot, createShot, dialogShot, deskShot, phoneShot, darkShot, phoneListShot}, " "))
	if *update {
		for name, b := range map[string][]byte{"board.png": png, "board-phone.png": phonePNG} {
			if err := os.WriteFile(filepath.Join("testdata", name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkHelpers runs the board's pure helpers in the page (the same module
// instances the app uses) against a table of cases.
func checkHelpers(t *testing.T, ctx context.Context) {
	t.Helper()
	fails := webtest.Eval[[]string](t, ctx, `(async () => {
  const f = await import("/static/format.js");
  const c = await import("/static/create.js");
  const g = await import("/static/groups.js");
  const fails = [];
  const eq = (name, got, want) => {
    if (JSON.stringify(got) !== JSON.stringify(want)) fails.push(name + ": got " + JSON.stringify(got) + ", want " + JSON.stringify(want));
  };
  eq("160 GSM-7 chars", f.segments("a".repeat(160)), {encoding: "GSM-7", count: 1});
  eq("161 GSM-7 chars", f.segments("a".repeat(161)), {encoding: "GSM-7", count: 2});
  eq("306 GSM-7 chars", f.segments("a".repeat(306)), {encoding: "GSM-7", count: 2});
  eq("extension chars count twice", f.segments("€".repeat(81)), {encoding: "GSM-7", count: 2});
  eq("70 UCS-2 chars", f.segments("ł".repeat(70)), {encoding: "UCS-2", count: 1});
  eq("71 UCS-2 chars", f.segments("ł".repeat(71)), {encoding: "UCS-2", count: 2});
  // The same cases as group.TestSegments: the form and the server agree.
  eq("1600 emoji", f.segments("😀".repeat(1600)), {encoding: "UCS-2", count: 49});
  eq("surrogate pair never split", f.segments("👍".repeat(67)), {encoding: "UCS-2", count: 3});
  eq("escape never split", f.segments("a".repeat(152) + "{" + "a".repeat(10)), {encoding: "GSM-7", count: 2});
  eq("1530 GSM-7 is ten", f.segments("x".repeat(1530)), {encoding: "GSM-7", count: 10});
  eq("too long explained", c.textProblem("😀".repeat(1600)).startsWith("Too long: 49 SMS segments"), true);
  eq("ten segments fine", c.textProblem("x".repeat(1530)), "");
  eq("recipients: spacing stripped, blank lines skipped, lines kept",
    c.parseRecipients(" +1 (555) 010-0001 \n\n+15550100002\n"), {numbers: ["+15550100001", "+15550100002"], raw: ["+1 (555) 010-0001", "+15550100002"], lines: [1, 3]});
  eq("sendable: malformed and repeated lines not counted", c.sendable(["+15550100001", "notanumber", "+15550100001", "+15550100002"]), 2);
  eq("from without country code", c.fromProblem("5550100000"), "Use international format: +15550100000");
  eq("from with 1", c.fromProblem("1 555 010 0000"), "Use international format: +15550100000");
  eq("from fine", c.fromProblem("+15550100000"), "");
  const t = f.tally({pending: 1, sending: 1, sent: 2, delivered: 3, failed: 1, unconfirmed: 1, unknown: 1, opted_out: 1, canceled: 1,
    replied: 4, acknowledged: 3, ack_yes: 2, ack_no: 1, no_reply: 6});
  eq("tally", [t.total, t.final, t.inFlight, t.attention, t.stopped, t.needAttention], [12, 8, 4, 2, 2, 3]);
  eq("tally replies", [t.ackYes, t.ackNo, t.repliedOther, t.noReply], [2, 1, 1, 6]);
  eq("complete with problems", f.groupStatusInfo("complete", {delivered: 3, failed: 1, unknown: 1}), {label: "Complete — 2 need attention", tone: "warn"});
  eq("complete and clean", f.groupStatusInfo("complete", {delivered: 3, opted_out: 1}).label, "Complete");
  eq("summary", f.summaryLine(t), "3 of 12 delivered · 1 failed · 1 unconfirmed · 1 unknown · 4 in progress · 2 not sent");
  eq("tally of nothing", f.tally(undefined).total, 0);
  eq("Go zero time is no time", f.parseTime("0001-01-01T00:00:00Z"), null);
  eq("null time", f.parseTime(null), null);
  eq("unknown event type", f.describeEvent({type: "x.y", data: {a: 1}}, 0), {title: "x.y", detail: '{"a":1}'});
  eq("base64 event data", f.describeEvent({type: "recipient.resolved", data: btoa(JSON.stringify({outcome: "delivered", by: "key_1"}))}, 0),
    {title: "Operator confirmed delivered", detail: "by key_1"});
  eq("the recipient's own outcome", f.describeEvent({type: "send.outcomes", data: {outcomes: [
    {i: [0], result: "accepted", message_id: "m0"}, {i: [1], result: "failed", code: "21610", class: "recipient"}]}}, 1),
    {title: "Provider rejected the message", detail: "error 21610 · permanent for this recipient"});
  eq("null data", f.describeEvent({type: "group.canceled", data: null}, 0), {title: "Group canceled", detail: ""});
  eq("first line", g.firstLine("Line one\nline two"), "Line one");
  eq("long first line", g.firstLine("x".repeat(100)).length, 90);
  return fails;
})()`, chromedp.EvalAwaitPromise)
	for _, f := range fails {
		t.Error(f)
	}
}
