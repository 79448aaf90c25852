package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// createUserOTP creates a user with a generated one-time password through
// the API and returns its id and that password.
func (e *env) createUserOTP(email, name, role string) (id, pw string) {
	e.t.Helper()
	r, b := e.do("POST", "/v1/users", fmt.Sprintf(`{"email":%q,"name":%q,"role":%q}`, email, name, role), "admin", nil)
	if r.StatusCode != 201 {
		e.t.Fatalf("create user %s: %d %s", email, r.StatusCode, b)
	}
	u := decode[userJSON](e.t, b)
	if u.Password == "" {
		e.t.Fatalf("created user %+v: no one-time password", u)
	}
	return u.ID, u.Password
}

// userWithPassword creates a user with a chosen password (no change
// needed, nothing audited but the creation) and returns its id and pw.
func (e *env) userWithPassword(email, name, role, pw string) (string, string) {
	e.t.Helper()
	r, b := e.do("POST", "/v1/users", fmt.Sprintf(`{"email":%q,"name":%q,"role":%q,"password":%q}`, email, name, role, pw), "admin", nil)
	if r.StatusCode != 201 {
		e.t.Fatalf("create user %s: %d %s", email, r.StatusCode, b)
	}
	return decode[userJSON](e.t, b).ID, pw
}

// changePassword changes the password of c's user from current to a new
// one and returns the new one.
func (e *env) changePassword(c *http.Cookie, current string) string {
	e.t.Helper()
	next := current + "-chosen"
	r, b := e.withCookie(c, "POST", "/v1/account/password", fmt.Sprintf(`{"current":%q,"new":%q}`, current, next), nil)
	if r.StatusCode != 204 {
		e.t.Fatalf("change password: %d %s", r.StatusCode, b)
	}
	return next
}

func mustChange(t *testing.T, b []byte) bool {
	t.Helper()
	var v struct {
		Must *bool `json:"must_change_password"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v.Must != nil && *v.Must
}

// A one-time password signs in, but only to choose a new one: every other
// route answers 403 password_change_required until then.
func TestOneTimePasswordMustBeChanged(t *testing.T) {
	e := newEnv(t, cheapUsers)
	id, otp := e.createUserOTP("olga@example.com", "Olga", "dispatcher")
	c, r, b := e.signIn("olga@example.com", otp, nil)
	if c == nil || r.StatusCode != 200 || !mustChange(t, b) {
		t.Fatalf("sign in with the one-time password: %d %s, want 200 with must_change_password", r.StatusCode, b)
	}
	for _, rq := range [][3]string{{"GET", "/v1/groups", ""}, {"POST", "/v1/groups", createBody}, {"GET", "/v1/contacts", ""}} {
		r, b := e.withCookie(c, rq[0], rq[1], rq[2], nil)
		if r.StatusCode != 403 || errorOf(t, b).Code != "password_change_required" {
			t.Errorf("%s %s before the change: %d %s, want 403 password_change_required", rq[0], rq[1], r.StatusCode, b)
		}
	}
	// The board may still ask who is signed in (to show the form).
	if r, b := e.withCookie(c, "GET", "/v1/session", "", nil); r.StatusCode != 200 || !mustChange(t, b) {
		t.Errorf("GET /v1/session before the change: %d %s", r.StatusCode, b)
	}
	// Same rules as user creation; the current password must be right.
	for _, tc := range []struct{ body, field string }{
		{fmt.Sprintf(`{"current":%q,"new":"short"}`, otp), "new"},
		{`{"current":"not it at all","new":"a long enough password"}`, "current"},
		{fmt.Sprintf(`{"current":%q,"new":%q}`, otp, otp), "new"},
	} {
		r, b := e.withCookie(c, "POST", "/v1/account/password", tc.body, nil)
		if r.StatusCode != 400 || len(errorOf(t, b).Fields) == 0 || errorOf(t, b).Fields[0].Field != tc.field {
			t.Errorf("%s: %d %s, want 400 on %s", tc.body, r.StatusCode, b, tc.field)
		}
	}
	pw := e.changePassword(c, otp)
	if r, b := e.withCookie(c, "GET", "/v1/groups", "", nil); r.StatusCode != 200 {
		t.Fatalf("after the change: %d %s", r.StatusCode, b)
	}
	if r, b := e.withCookie(c, "GET", "/v1/session", "", nil); r.StatusCode != 200 || mustChange(t, b) {
		t.Errorf("GET /v1/session after the change: %d %s", r.StatusCode, b)
	}
	if c, _, _ := e.signIn("olga@example.com", otp, nil); c != nil {
		t.Error("the one-time password still signs in")
	}
	if c, r, b := e.signIn("olga@example.com", pw, nil); c == nil || mustChange(t, b) {
		t.Errorf("sign in with the chosen password: %d %s", r.StatusCode, b)
	}
	// Audited, without the password.
	rows, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{Action: auditUserPasswordChanged})
	if err != nil || len(rows) != 1 || rows[0].Actor.ID != id || rows[0].Target != id ||
		strings.Contains(rows[0].Target, pw) || strings.Contains(rows[0].Target, otp) {
		t.Errorf("audit of the change: %+v, %v", rows, err)
	}
	// A reset password is one-time again; signing out is allowed before
	// the change.
	if r, b := e.do("PATCH", "/v1/users/"+id, `{"reset_password":true}`, "admin", nil); r.StatusCode != 200 {
		t.Fatalf("reset: %d %s", r.StatusCode, b)
	}
	r, b = e.do("PATCH", "/v1/users/"+id, `{"password":"set by the admin here"}`, "admin", nil)
	if r.StatusCode != 200 {
		t.Fatalf("admin sets a password: %d %s", r.StatusCode, b)
	}
	c, r, b = e.signIn("olga@example.com", "set by the admin here", nil)
	if c == nil || !mustChange(t, b) {
		t.Fatalf("sign in with a reset password: %d %s, want must_change_password", r.StatusCode, b)
	}
	if r, b := e.withCookie(c, "DELETE", "/v1/session", "", nil); r.StatusCode != 204 {
		t.Errorf("sign out before the change: %d %s", r.StatusCode, b)
	}
}

// Changing one's password keeps the current session and ends the others
// on every node (they are in the store); an API key has no password.
func TestAccountPasswordChangeEndsOtherSessions(t *testing.T) {
	e := newEnv(t, cheapUsers)
	r, b := e.do("POST", "/v1/users", `{"email":"pia@example.com","name":"Pia","role":"viewer","password":"a chosen password 1"}`, "admin", nil)
	if r.StatusCode != 201 {
		t.Fatalf("create: %d %s", r.StatusCode, b)
	}
	a, c, b2 := e.signIn("pia@example.com", "a chosen password 1", nil)
	if a == nil || mustChange(t, b2) {
		t.Fatalf("a password chosen at creation must not need a change: %d %s", c.StatusCode, b2)
	}
	other := e.mustSignIn("pia@example.com", "a chosen password 1")
	e.changePassword(a, "a chosen password 1")
	if r, b := e.withCookie(a, "GET", "/v1/groups", "", nil); r.StatusCode != 200 {
		t.Errorf("the session that changed the password: %d %s", r.StatusCode, b)
	}
	if r, b := e.withCookie(other, "GET", "/v1/groups", "", nil); r.StatusCode != 401 {
		t.Errorf("another session after the change: %d %s, want 401", r.StatusCode, b)
	}
	if r, b := e.do("POST", "/v1/account/password", `{"current":"x","new":"a long enough password"}`, "admin", nil); r.StatusCode != 403 || errorOf(t, b).Code != "forbidden" {
		t.Errorf("an API key changing a password: %d %s, want 403 forbidden", r.StatusCode, b)
	}
}

// Signing out everywhere ends every session of the user, this one too.
func TestAccountSignOutEverywhere(t *testing.T) {
	e := newEnv(t, cheapUsers)
	_, pw := e.userWithPassword("sol@example.com", "Sol", "viewer", "sol's own password")
	a, b := e.mustSignIn("sol@example.com", pw), e.mustSignIn("sol@example.com", pw)
	r, body := e.withCookie(a, "DELETE", "/v1/account/sessions", "", nil)
	if r.StatusCode != 204 {
		t.Fatalf("sign out everywhere: %d %s", r.StatusCode, body)
	}
	for _, c := range []*http.Cookie{a, b} {
		if r, _ := e.withCookie(c, "GET", "/v1/groups", "", nil); r.StatusCode != 401 {
			t.Errorf("a session after signing out everywhere: %d, want 401", r.StatusCode)
		}
	}
	rows, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{Action: auditSignedOutEverywhere})
	if err != nil || len(rows) != 1 {
		t.Errorf("audit: %+v, %v", rows, err)
	}
}
