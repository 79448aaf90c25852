package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/web/webtest"
)

// TestBoardPeopleAndAudit is issue 17's proof, in real Chromium against
// the real server: an admin (signed in with the admin key) creates a
// dispatcher on the users page and an API key on the keys page; the
// dispatcher signs in with email and the one-time password, sees their own
// name, sends a message, is refused the users page (hidden in the UI, 403
// in the API); the admin's audit page shows both people's actions and
// filters them.
func TestBoardPeopleAndAudit(t *testing.T) {
	t.Parallel() // its own server, database and Chromium
	srv, key := startServer(t, "e2e", server.Config{ProviderTimeout: 2 * time.Second, Settings: group.Settings{CheckAfter: time.Minute}})

	b := openTab(t)
	ctx, wait, do, text := b.ctx, b.wait, b.do, b.text
	signOut := func() {
		t.Helper()
		do("sign out", chromedp.Click(chromedp.CSS("#signout")))
		wait("the sign-in page", `location.hash === "#/signin" && !!document.querySelector("#user-signin-form")`)
	}

	// The admin signs in with the key; the admin pages are in the nav.
	do("open the board", chromedp.Navigate(srv.URL()+"/"))
	wait("the sign-in page", `!!document.querySelector("#user-signin-form") && !!document.querySelector("#signin-form")`)
	if got := webtest.Eval[string](t, ctx, `document.activeElement.id`); got != "email" {
		t.Errorf("focus starts on %q, want the email field", got)
	}
	_, signinShot := webtest.SaveScreenshot(t, ctx, "people-signin.png", webtest.DesktopWidth, webtest.DesktopHeight)
	webtest.Type(t, ctx, "#key", key)
	do("sign in with the key", chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("admin links shown", `!document.querySelector('[data-nav="users"]').hidden && !document.querySelector('[data-nav="audit"]').hidden`)

	// Users page: an empty submit marks the field, then a real one.
	do("open users", chromedp.Click(chromedp.CSS(`[data-nav="users"]`)))
	wait("the users page", `!!document.querySelector("#user-form")`)
	do("submit empty", chromedp.Click(chromedp.CSS("#user-submit")))
	wait("the email error", `document.querySelector("#user-email").getAttribute("aria-invalid") === "true"`)
	if d := webtest.Eval[string](t, ctx, `document.querySelector("#user-email").getAttribute("aria-describedby")`); !strings.Contains(d, "user-email-error") {
		t.Errorf("email field describedby %q does not name its error", d)
	}
	if got := text("#user-email-error"); got == "" {
		t.Error("no email error text")
	}
	webtest.Type(t, ctx, "#user-email", "dana@example.com")
	webtest.Type(t, ctx, "#user-name", "Dana Dispatcher")
	webtest.Fill(t, ctx, "#user-role", "dispatcher")
	do("add the user", chromedp.Click(chromedp.CSS("#user-submit")))
	wait("the one-time password", `!document.querySelector("#one-time").hidden && document.querySelector("#one-time-password").textContent.length >= 12`)
	otp := text("#one-time-password")
	wait("the user listed", `!!document.querySelector('#user-rows tr[data-email="dana@example.com"]')`)
	if webtest.Eval[bool](t, ctx, `document.querySelector("#user-email").hasAttribute("aria-invalid")`) {
		t.Error("the email field stayed invalid after a good submit")
	}
	_, usersShot := webtest.SaveScreenshot(t, ctx, "people-users.png", webtest.DesktopWidth, webtest.DesktopHeight)

	// Keys page: create, see it listed with its scope and no use yet.
	do("open keys", chromedp.Click(chromedp.CSS(`[data-nav="keys"]`)))
	wait("the keys page", `!!document.querySelector("#key-form")`)
	webtest.Type(t, ctx, "#key-name", "night script")
	webtest.Fill(t, ctx, "#key-scope", "read")
	do("create the key", chromedp.Click(chromedp.CSS("#key-submit")))
	wait("the new key shown once", `(document.querySelector("#new-key-value") || {}).textContent?.startsWith("cc_")`)
	wait("the key listed", `[...document.querySelectorAll("#key-rows tr")].some(r => r.textContent.includes("night script") && r.textContent.includes("Never") && r.textContent.includes("read"))`)
	do("revoke it", chromedp.Click(chromedp.CSS(`#key-rows button[aria-label="Revoke night script"]`)))
	wait("the revoke dialog", `document.querySelector("#confirm-dialog").open`)
	do("confirm revoke", chromedp.Click(chromedp.CSS(`#confirm-dialog [data-choice="revoke"]`)))
	wait("the key revoked", `[...document.querySelectorAll("#key-rows tr")].some(r => r.textContent.includes("night script") && r.textContent.includes("Revoked"))`)
	signOut()

	// The dispatcher: a wrong password first, then the one-time one.
	webtest.Type(t, ctx, "#email", "dana@example.com")
	webtest.Type(t, ctx, "#password", "not the password")
	do("sign in wrong", chromedp.Click(chromedp.CSS("#user-signin-submit")))
	wait("the uniform error", `!document.querySelector("#user-signin-error").hidden`)
	if got := text("#user-signin-error"); got != "Wrong email or password." {
		t.Errorf("sign-in error %q", got)
	}
	webtest.Type(t, ctx, "#password", otp)
	do("sign in as Dana", chromedp.Click(chromedp.CSS("#user-signin-submit")))
	// The one-time password is one-time: Dana must choose her own first.
	wait("the new-password form", `location.hash === "#/account" && !!document.querySelector("#password-form") && !!document.querySelector("#must-change")`)
	if got := webtest.Eval[string](t, ctx, `document.activeElement.id`); got != "current-password" {
		t.Errorf("focus on the new-password form is on %q, want the one-time password field", got)
	}
	status := webtest.Eval[float64](t, ctx, `fetch("/v1/groups", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise)
	if status != 403 {
		t.Errorf("GET /v1/groups before choosing a password: %v, want 403", status)
	}
	do("try the board anyway", chromedp.Navigate(srv.URL()+"/#/groups"))
	wait("sent back to the form", `location.hash === "#/account" && !!document.querySelector("#must-change")`)
	webtest.Type(t, ctx, "#current-password", otp)
	webtest.Type(t, ctx, "#new-password", "short")
	do("a too short password", chromedp.Click(chromedp.CSS("#password-submit")))
	wait("the length error", `document.querySelector("#new-password").getAttribute("aria-invalid") === "true" && document.querySelector("#new-password-error").textContent !== ""`)
	const danaPW = "Dana's own long password"
	webtest.Type(t, ctx, "#new-password", danaPW)
	webtest.Type(t, ctx, "#confirm-password", danaPW)
	do("set the password", chromedp.Click(chromedp.CSS("#password-submit")))
	wait("signed in as Dana", `location.hash === "#/groups" && document.querySelector("#who").textContent === "Dana Dispatcher" && !!document.querySelector("#group-list")`)

	// The Account page changes the password again.
	do("open the account page", chromedp.Click(chromedp.CSS("#who")))
	wait("the account page", `location.hash === "#/account" && !!document.querySelector("#password-form") && !document.querySelector("#must-change")`)
	if got := text("#account-identity"); !strings.Contains(got, "dana@example.com") || !strings.Contains(got, "dispatcher") {
		t.Errorf("account identity %q", got)
	}
	const danaPW2 = "Dana's second long password"
	webtest.Type(t, ctx, "#current-password", "not my password at all")
	webtest.Type(t, ctx, "#new-password", danaPW2)
	webtest.Type(t, ctx, "#confirm-password", danaPW2)
	do("change with a wrong current password", chromedp.Click(chromedp.CSS("#password-submit")))
	wait("the current-password error", `document.querySelector("#current-password").getAttribute("aria-invalid") === "true"`)
	webtest.Type(t, ctx, "#current-password", danaPW)
	do("change the password", chromedp.Click(chromedp.CSS("#password-submit")))
	wait("the change done", `document.querySelector("#current-password").value === "" && !document.querySelector("#current-password").hasAttribute("aria-invalid")`)
	if status := signInStatus(t, srv.URL(), "dana@example.com", danaPW2); status != 200 {
		t.Errorf("sign in with the password changed on the account page: %d, want 200", status)
	}
	if status := signInStatus(t, srv.URL(), "dana@example.com", danaPW); status != 401 {
		t.Errorf("sign in with the old password: %d, want 401", status)
	}
	if webtest.Eval[bool](t, ctx, `['users','keys','audit'].some(n => !document.querySelector('[data-nav="'+n+'"]').hidden)`) {
		t.Error("a dispatcher sees admin links")
	}
	do("open the form", chromedp.Click(chromedp.CSS("#nav-new")))
	wait("the create form", `!!document.querySelector("#create-form")`)
	webtest.Type(t, ctx, "#from", "+15550100000")
	webtest.Fill(t, ctx, "#to", "+15550100301\n+15550100302")
	webtest.Fill(t, ctx, "#text", "Crew call 6am. Reply YES.")
	do("send", chromedp.Click(chromedp.CSS("#submit")))
	wait("the new group page", `location.hash.startsWith("#/groups/grp_")`)
	groupID := strings.TrimPrefix(webtest.Eval[string](t, ctx, `location.hash`), "#/groups/")

	do("open users as Dana", chromedp.Navigate(srv.URL()+"/#/users"))
	wait("not allowed", `document.querySelector("main h1").textContent === "Not allowed"`)
	if n := webtest.Eval[float64](t, ctx, `document.querySelectorAll("#user-form").length`); n != 0 {
		t.Error("the users form is shown to a dispatcher")
	}
	status = webtest.Eval[float64](t, ctx, `fetch("/v1/users", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise)
	if status != 403 {
		t.Errorf("GET /v1/users as a dispatcher: %v, want 403", status)
	}
	signOut()

	// The admin's audit page shows both.
	webtest.Type(t, ctx, "#key", key)
	do("sign in with the key again", chromedp.Click(chromedp.CSS("#signin-submit")))
	wait("signed in", `!document.querySelector('[data-nav="audit"]').hidden`)
	do("open audit", chromedp.Click(chromedp.CSS(`[data-nav="audit"]`)))
	row := func(action, who string) string {
		return fmt.Sprintf(`[...document.querySelectorAll('#audit-rows tr[data-action=%q]')].some(r => r.textContent.includes(%s))`, action, webtest.JS(who))
	}
	wait("Dana's send", row("group.sent", "Dana Dispatcher"))
	wait("Dana's sign-in", row("session.signed_in", "Dana Dispatcher"))
	wait("the failed sign-in", row("session.sign_in_failed", "dana@example.com"))
	wait("the admin's user creation", row("user.created", "Setup key added the user dana@example.com (dispatcher)"))
	wait("the key revocation", row("key.revoked", "Setup key"))
	if !webtest.Eval[bool](t, ctx, `!!document.querySelector('#audit-rows tr[data-action="group.sent"] a[href="#/groups/`+groupID+`"]')`) {
		t.Error("the send's row does not name the group")
	}
	webtest.Fill(t, ctx, "#audit-action", "group.sent")
	do("filter", chromedp.Click(chromedp.CSS("#audit-filter")))
	wait("only sends", `document.querySelectorAll("#audit-rows tr").length === 1 && !!document.querySelector('#audit-rows tr[data-action="group.sent"]')`)
	if href := webtest.Eval[string](t, ctx, `document.querySelector("#audit-csv").getAttribute("href")`); !strings.Contains(href, "action=group.sent") || !strings.Contains(href, "format=csv") {
		t.Errorf("CSV link %q does not carry the filter", href)
	}
	_, auditShot := webtest.SaveScreenshot(t, ctx, "people-audit.png", webtest.DesktopWidth, webtest.DesktopHeight)
	t.Logf("screenshots: %s %s %s", signinShot, usersShot, auditShot)
}

// signInStatus tries a password sign-in outside the browser and returns
// the status.
func signInStatus(t *testing.T, base, email, pw string) int {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"email": email, "password": pw})
	resp, err := http.Post(base+"/v1/session", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
