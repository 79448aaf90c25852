package httpapi

import (
	"errors"
	"net/http"

	"github.com/crewcast/crewcast/password"
	"github.com/crewcast/crewcast/store"
)

// A user's own account (docs/operations.md, "Accounts"): a one-time or
// reset password signs in only to choose a new one, and any signed-in
// user changes their own password here.

// allowedBeforePasswordChange names the routes a session whose user must
// change their password may still use: who is signed in (the board shows
// the form from it), signing out, and the change itself.
func allowedBeforePasswordChange(rt route) bool {
	switch {
	case rt.Pattern == "/v1/session":
		return rt.Method == http.MethodGet || rt.Method == http.MethodDelete
	case rt.Pattern == "/v1/account/password":
		return rt.Method == http.MethodPost
	case rt.Pattern == "/v1/account/sessions":
		return rt.Method == http.MethodDelete // signing out, everywhere
	}
	return false
}

// changeOwnPassword is POST /v1/account/password {"current","new"}: it
// checks the current password (throttled like a sign-in, so a stolen
// session cannot guess it quickly), sets the new one under the rules of
// user creation, and ends the user's other sessions everywhere; the
// current session stays signed in.
func (a *api) changeOwnPassword(w http.ResponseWriter, r *http.Request) error {
	self, ok := userFrom(r.Context())
	c, cerr := r.Cookie(sessionCookie)
	if !ok || cerr != nil {
		return newError(http.StatusForbidden, codeForbidden, "only a signed-in user has a password to change (an API key has none)")
	}
	var body struct {
		Current string `json:"current"`
		New     string `json:"new"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	if body.Current == "" {
		return invalid("current", "required")
	}
	if msg := password.Check(body.New); msg != "" {
		return invalid("new", msg)
	}
	if body.New == body.Current {
		return invalid("new", "must differ from the current password")
	}
	done, err := a.throttle.signIn(a.now(), self.Email, a.clientAddr(r))
	if err != nil {
		return err
	}
	failed := false
	defer func() { done(a.now(), failed) }()
	verr := a.hasher.Verify(r.Context(), self.PasswordHash, body.Current)
	if errors.Is(verr, password.ErrMismatch) {
		failed = true
		return invalid("current", "does not match your password")
	}
	if verr != nil {
		return verr
	}
	hash, err := a.hasher.Hash(r.Context(), body.New)
	if err != nil {
		return err
	}
	now := a.now().UTC()
	u := self
	u.PasswordHash, u.MustChangePassword, u.UpdatedAt = hash, false, now
	entry := store.AuditEntry{At: now, Actor: requestActor(r), Action: auditUserPasswordChanged, Target: u.ID}
	if err := a.store.ChangePassword(r.Context(), u, hashSessionID(c.Value), entry); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// signOutEverywhere is DELETE /v1/account/sessions: it ends every session
// of the signed-in user on every node, this one too, and clears the
// cookie.
func (a *api) signOutEverywhere(w http.ResponseWriter, r *http.Request) error {
	self, ok := userFrom(r.Context())
	if !ok {
		return newError(http.StatusForbidden, codeForbidden, "only a signed-in user has sessions to end (an API key has none)")
	}
	if err := a.sessions.deleteOwner(r.Context(), self.ID); err != nil {
		return err // not signed out: the client must hear so
	}
	a.audit(r, requestActor(r), auditSignedOutEverywhere, self.ID)
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secureCookies(r),
	})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
