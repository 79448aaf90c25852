package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/store"
)

// sessionCookie names the board's session cookie.
const sessionCookie = "crewcast_session"

type principalKey struct{}

// principalFrom returns the authenticated caller of a request.
func principalFrom(ctx context.Context) (apikey.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(apikey.Principal)
	return p, ok
}

// by names the caller for the audit trail (the key id, never the key).
func by(r *http.Request) string {
	p, _ := principalFrom(r.Context())
	return p.KeyID
}

// scopeFor maps a route's access to the scope it needs.
func scopeFor(ac access) apikey.Scope {
	switch ac {
	case needRead:
		return apikey.ScopeRead
	case needSend:
		return apikey.ScopeSend
	default:
		return apikey.ScopeAdmin
	}
}

// authorize authenticates the caller of a non-public route (bearer key, or
// session cookie plus cross-origin protection for state changes) and
// checks the route's scope. It returns the request carrying the principal.
func (a *api) authorize(r *http.Request, rt route) (*http.Request, error) {
	if rt.Access == public {
		return r, nil
	}
	p, u, err := a.authenticate(r)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusForbidden {
			a.metrics.AuthFailure("cross_origin")
		} else if errors.Is(err, apikey.ErrInvalidKey) || (errors.As(err, &ae) && ae.Status == http.StatusUnauthorized) {
			a.metrics.AuthFailure("unauthenticated")
		}
		return r, err
	}
	if need := scopeFor(rt.Access); !p.Has(need) {
		a.metrics.AuthFailure("forbidden")
		if u != nil {
			return r, newError(http.StatusForbidden, codeForbidden, "the "+u.Role+" role does not allow this")
		}
		return r, newError(http.StatusForbidden, codeForbidden, "this API key lacks the "+string(need)+" scope")
	}
	if u != nil && u.MustChangePassword && !allowedBeforePasswordChange(rt) {
		return r, newError(http.StatusForbidden, codePasswordChangeRequired,
			"choose a new password first (POST /v1/account/password)")
	}
	ctx := context.WithValue(r.Context(), principalKey{}, p)
	if u != nil {
		ctx = context.WithValue(ctx, userKey{}, *u)
	}
	return r.WithContext(store.WithAuditActor(ctx, actorOf(p, u, a.clientAddr(r)))), nil
}

// authenticate finds the caller: an Authorization: Bearer key wins over a
// session cookie.
func (a *api) authenticate(r *http.Request) (apikey.Principal, *store.User, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
			return apikey.Principal{}, nil, unauthorized("Authorization must be \"Bearer <key>\"")
		}
		p, err := a.checkKey(r, strings.TrimSpace(key)) // throttled per client (throttle.go)
		return p, nil, err
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return apikey.Principal{}, nil, unauthorized("an API key is required (Authorization: Bearer <key>)")
	}
	s, ok, err := a.sessions.get(r.Context(), c.Value)
	if err != nil {
		return apikey.Principal{}, nil, err
	}
	if !ok {
		return apikey.Principal{}, nil, unauthorized("session expired or unknown; sign in again")
	}
	// A cookie rides along with cross-site requests; state changes made
	// with one must come from our own origin.
	if err := a.csrf.Check(r); err != nil {
		return apikey.Principal{}, nil, newError(http.StatusForbidden, codeCrossOrigin, "cross-origin request refused")
	}
	if s.userID != "" {
		p, u, err := a.userPrincipal(r.Context(), s)
		if errors.Is(err, errSessionRevoked) {
			a.endSession(r, c.Value)
			return apikey.Principal{}, nil, unauthorized("session expired or unknown; sign in again")
		}
		return p, u, err
	}
	p, touchErr, err := a.auth.Check(r.Context(), s.prefix, s.keyID)
	a.touchFailed(r, touchErr)
	if errors.Is(err, apikey.ErrInvalidKey) {
		a.endSession(r, c.Value) // the key was revoked: end its session
	}
	return p, nil, err
}

// endSession deletes a session found dead; a failure is logged (the
// session is refused anyway, and purged later).
func (a *api) endSession(r *http.Request, id string) {
	if err := a.sessions.delete(r.Context(), id); err != nil {
		a.log.WarnContext(r.Context(), "ending a session failed", "err", err.Error())
	}
}

// endSessionsOf ends every session of a user on every node; a failure is
// logged: the raised session epoch refuses them anyway.
func (a *api) endSessionsOf(r *http.Request, owner string) {
	if err := a.sessions.deleteOwner(r.Context(), owner); err != nil {
		a.log.WarnContext(r.Context(), "ending a user's sessions failed", "err", err.Error())
	}
}

// touchFailed reports a failed best-effort last-use write: counted and
// logged here, at the top, and not allowed to fail the request.
func (a *api) touchFailed(r *http.Request, err error) {
	if err == nil {
		return
	}
	a.metrics.KeyTouchFailed()
	a.log.WarnContext(r.Context(), "recording API key use failed", "err", err.Error())
}

// ---- session routes ----

type sessionJSON struct {
	KeyID     string     `json:"key_id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// A user's session (docs/design.md §14) also names the user; KeyID is "".
	UserID string `json:"user_id,omitempty"`
	Email  string `json:"email,omitempty"`
	Role   string `json:"role,omitempty"`
	// MustChangePassword: the user signed in with a one-time or reset
	// password; every route but the session's and the password change
	// answers 403 password_change_required until they choose a new one.
	MustChangePassword bool `json:"must_change_password,omitempty"`
}

func scopeNames(p apikey.Principal) []string {
	out := make([]string, len(p.Scopes))
	for i, s := range p.Scopes {
		out[i] = string(s)
	}
	return out
}

// secureCookies reports whether cookies must be marked Secure.
func (a *api) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(a.publicURL, "https://")
}

func (a *api) createSession(w http.ResponseWriter, r *http.Request) error {
	if err := a.csrf.Check(r); err != nil {
		return newError(http.StatusForbidden, codeCrossOrigin, "cross-origin request refused")
	}
	var body struct {
		Key      string `json:"key"`
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	if body.Key == "" && (body.Email != "" || body.Password != "") {
		return a.signInUser(w, r, body.Email, body.Password)
	}
	if body.Key == "" {
		return invalid("key", "required (or email and password)")
	}
	p, err := a.checkKey(r, body.Key) // throttled per client (throttle.go)
	if err != nil {
		if errors.Is(err, apikey.ErrInvalidKey) {
			a.metrics.AuthFailure("unauthenticated")
			a.audit(r, store.AuditActor{Type: store.ActorKey, IP: a.clientAddr(r)}, auditSignInFailed, "")
		}
		return err
	}
	id, expires, err := a.sessions.open(r.Context(), session{keyID: p.KeyID, prefix: p.Prefix, name: p.Name})
	if errors.Is(err, errTooManySessions) {
		e := newError(http.StatusServiceUnavailable, codeUnavailable, "too many open sessions; try again later or use an API key directly")
		e.Header = http.Header{"Retry-After": {"60"}}
		return e
	}
	if err != nil {
		return err
	}
	a.setSessionCookie(w, r, id, expires)
	a.audit(r, actorOf(p, nil, a.clientAddr(r)), auditSignedIn, "")
	exp := expires.UTC()
	writeJSON(w, http.StatusOK, sessionJSON{KeyID: p.KeyID, Name: p.Name, Scopes: scopeNames(p), ExpiresAt: &exp})
	return nil
}

// setSessionCookie sets the board's session cookie (docs/design.md §14:
// HttpOnly, Secure over TLS, SameSite=Lax).
func (a *api) setSessionCookie(w http.ResponseWriter, r *http.Request, id string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/", Expires: expires, MaxAge: int(a.cfg.SessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secureCookies(r),
	})
}

func (a *api) getSession(w http.ResponseWriter, r *http.Request) error {
	p, _ := principalFrom(r.Context())
	if u, ok := userFrom(r.Context()); ok {
		writeJSON(w, http.StatusOK, sessionJSON{Name: u.Name, Scopes: scopeNames(p), UserID: u.ID, Email: u.Email, Role: u.Role,
			MustChangePassword: u.MustChangePassword})
		return nil
	}
	writeJSON(w, http.StatusOK, sessionJSON{KeyID: p.KeyID, Name: p.Name, Scopes: scopeNames(p)})
	return nil
}

func (a *api) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if err := a.csrf.Check(r); err != nil {
		return newError(http.StatusForbidden, codeCrossOrigin, "cross-origin request refused")
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		s, ok, err := a.sessions.peek(r.Context(), c.Value)
		if err != nil {
			return err
		}
		if err := a.sessions.delete(r.Context(), c.Value); err != nil {
			return err // not signed out: the client must hear so
		}
		if ok {
			a.audit(r, a.sessionActor(r, s), auditSignedOut, "")
		}
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secureCookies(r),
	})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
