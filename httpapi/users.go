package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"net/http"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/password"
	"github.com/crewcast/crewcast/store"
)

// Users, roles and sign-in by password (docs/design.md §14).
//
// A user's role maps onto the API key scopes, so every route's access
// check (routes.go) applies to people and machines alike: viewer → read,
// dispatcher → send, admin → admin. A user's session re-reads the user on
// every request, so disabling a user, resetting their password (both
// raise the user's session epoch) or changing their role takes effect at
// once on every node.

// roleScopes maps each role to the scope it acts with.
var roleScopes = map[string]apikey.Scope{
	store.RoleViewer:     apikey.ScopeRead,
	store.RoleDispatcher: apikey.ScopeSend,
	store.RoleAdmin:      apikey.ScopeAdmin,
}

// Audit actions recorded by the API (the group actions are the tracker's).
const (
	auditSignedIn            = "session.signed_in"
	auditSignInFailed        = "session.sign_in_failed"
	auditSignedOut           = "session.signed_out"
	auditSignedOutEverywhere = "session.signed_out_everywhere"
	auditUserCreated         = "user.created"
	auditUserUpdated         = "user.updated"
	auditUserPassword        = "user.password_reset"
	auditUserPasswordChanged = "user.password_changed"
	auditUserDisabled        = "user.disabled"
	auditUserEnabled         = "user.enabled"
	auditKeyCreated          = apikey.AuditKeyCreated
	auditKeyRevoked          = apikey.AuditKeyRevoked
	auditSuppressAdd         = "suppression.added"
	auditSuppressRemov       = "suppression.removed"
)

// Audit actions of directory writes (docs/design.md §14: contact, crew and
// template changes). Each entry is handed to the store call that makes
// the change and commits with it. The target is the row's id, "" for a
// create or an import (the new rows are in the answer, and names may be
// personal).
const (
	auditContactCreated   = "contact.created"
	auditContactUpdated   = "contact.updated"
	auditContactDeleted   = "contact.deleted"
	auditContactsImported = "contacts.imported"
	auditCrewCreated      = "crew.created"
	auditCrewUpdated      = "crew.updated"
	auditCrewDeleted      = "crew.deleted"
	auditTemplateCreated  = "template.created"
	auditTemplateUpdated  = "template.updated"
	auditTemplateDeleted  = "template.deleted"
)

// Audit actions of outbound webhook endpoint changes (docs/design.md §13, §14).
// The target is the endpoint's id (an update adds the names of the fields
// it changed, never their values); the signing secret never appears.
// Each entry commits with the change (store.Webhooks).
const (
	auditEndpointCreated   = "endpoint.created"
	auditEndpointUpdated   = "endpoint.updated"
	auditEndpointDisabled  = "endpoint.disabled"
	auditEndpointEnabled   = "endpoint.enabled"
	auditEndpointDeleted   = "endpoint.deleted"
	auditEndpointRotated   = "endpoint.rotated"
	auditEndpointRecovered = "endpoint.recovered"
	auditEndpointTested    = "endpoint.tested"
)

type userKey struct{}

// userFrom returns the signed-in user of a request made with a user's
// session (not with an API key).
func userFrom(ctx context.Context) (store.User, bool) {
	u, ok := ctx.Value(userKey{}).(store.User)
	return u, ok
}

// errSessionRevoked: the session's user was disabled, removed or had
// their password reset since it was opened.
var errSessionRevoked = errors.New("session revoked")

// userPrincipal checks a user's session against the stored user.
func (a *api) userPrincipal(ctx context.Context, s session) (apikey.Principal, *store.User, error) {
	u, err := a.store.UserByID(ctx, s.userID)
	if errors.Is(err, actor.ErrNotFound) {
		return apikey.Principal{}, nil, errSessionRevoked
	}
	if err != nil {
		return apikey.Principal{}, nil, err
	}
	if !u.DisabledAt.IsZero() || u.SessionEpoch != s.epoch {
		return apikey.Principal{}, nil, errSessionRevoked
	}
	p := apikey.Principal{KeyID: u.ID, Name: u.Name}
	if sc, ok := roleScopes[u.Role]; ok {
		p.Scopes = []apikey.Scope{sc}
	}
	return p, &u, nil
}

// actorOf names who acts for the audit trail.
func actorOf(p apikey.Principal, u *store.User, ip string) store.AuditActor {
	if u != nil {
		return store.AuditActor{Type: store.ActorUser, ID: u.ID, Name: u.Name, IP: ip}
	}
	return store.AuditActor{Type: store.ActorKey, ID: p.KeyID, Name: p.Name, IP: ip}
}

// sessionActor names the owner of a session.
func (a *api) sessionActor(r *http.Request, s session) store.AuditActor {
	if s.userID != "" {
		return store.AuditActor{Type: store.ActorUser, ID: s.userID, Name: s.name, IP: a.clientAddr(r)}
	}
	return store.AuditActor{Type: store.ActorKey, ID: s.keyID, Name: s.name, IP: a.clientAddr(r)}
}

// requestActor is the audit actor of an authorized request.
func requestActor(r *http.Request) store.AuditActor {
	who, _ := store.AuditActorFrom(r.Context())
	return who
}

// auditEntry is the entry of a change the request's actor makes now; the
// caller hands it to the store write that makes the change, which commits
// both or neither.
func (a *api) auditEntry(r *http.Request, action, target string) store.AuditEntry {
	return store.AuditEntry{At: a.now().UTC(), Actor: requestActor(r), Action: action, Target: target}
}

// audit appends one entry for an event that changes no stored state, so
// there is no store transaction the entry could join (a sign-in, a failed
// sign-in, a sign-out): it is written right after the event. Every
// durable change (keys, suppressions, users, contacts, crews, templates,
// erasures, retention passes, group commands) passes its entry to the
// store write that makes it instead. A failure is logged, not returned:
// the event happened and the client must hear so.
func (a *api) audit(r *http.Request, who store.AuditActor, action, target string) {
	e := store.AuditEntry{At: a.now().UTC(), Actor: who, Action: action, Target: target}
	if err := a.store.AppendAudit(r.Context(), e); err != nil {
		a.log.ErrorContext(r.Context(), "audit write failed", "action", action, "err", err.Error())
	}
}

// ---- sign-in ----

// normalizeEmail trims and lower-cases an email address.
func normalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// wrongCredentials is the one answer to every failed password sign-in:
// unknown email, wrong password and disabled user look the same.
func wrongCredentials() *apiError { return unauthorized("wrong email or password") }

func (a *api) signInUser(w http.ResponseWriter, r *http.Request, email, pw string) error {
	email = normalizeEmail(email)
	if email == "" {
		return invalid("email", "required")
	}
	if pw == "" {
		return invalid("password", "required")
	}
	ip := a.clientAddr(r)
	done, err := a.throttle.signIn(a.now(), email, ip)
	if err != nil {
		a.metrics.AuthFailure("throttled")
		return err
	}
	failed := false // only a wrong email or password counts, not a store error
	defer func() { done(a.now(), failed) }()
	u, err := a.store.UserByEmail(r.Context(), email)
	found := err == nil
	if err != nil && !errors.Is(err, actor.ErrNotFound) {
		return err
	}
	// An unknown email is verified against a dummy hash: it takes as long
	// as a wrong password, so timing does not tell which emails exist.
	verr := a.hasher.Verify(r.Context(), u.PasswordHash, pw)
	if verr != nil && !errors.Is(verr, password.ErrMismatch) {
		return verr
	}
	if verr != nil || !found || !u.DisabledAt.IsZero() {
		failed = true
		a.metrics.AuthFailure("unauthenticated")
		a.audit(r, store.AuditActor{Type: store.ActorUser, ID: u.ID, Name: u.Name, IP: ip}, auditSignInFailed, email)
		return wrongCredentials()
	}
	id, expires, err := a.sessions.open(r.Context(), session{userID: u.ID, epoch: u.SessionEpoch, name: u.Name})
	if errors.Is(err, errTooManySessions) {
		e := newError(http.StatusServiceUnavailable, codeUnavailable, "too many open sessions; try again later")
		e.Header = http.Header{"Retry-After": {"60"}}
		return e
	}
	if err != nil {
		return err
	}
	a.setSessionCookie(w, r, id, expires)
	a.audit(r, store.AuditActor{Type: store.ActorUser, ID: u.ID, Name: u.Name, IP: ip}, auditSignedIn, "")
	exp := expires.UTC()
	var scopes []string
	if sc, ok := roleScopes[u.Role]; ok {
		scopes = []string{string(sc)}
	}
	writeJSON(w, http.StatusOK, sessionJSON{Name: u.Name, Scopes: nonNil(scopes), ExpiresAt: &exp, UserID: u.ID, Email: u.Email, Role: u.Role,
		MustChangePassword: u.MustChangePassword})
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ---- /v1/users ----

// userJSON is a user as the API shows it: never a password or its hash.
type userJSON struct {
	ID         string     `json:"id"`
	Email      string     `json:"email"`
	Name       string     `json:"name"`
	Role       string     `json:"role"`
	CreatedAt  *time.Time `json:"created_at"`
	UpdatedAt  *time.Time `json:"updated_at"`
	DisabledAt *time.Time `json:"disabled_at"`
	// Password is the generated one-time password, shown only in the
	// answer that made it.
	Password string `json:"password,omitempty"`
}

func userOf(u store.User) userJSON {
	return userJSON{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, CreatedAt: tsOrNil(u.CreatedAt),
		UpdatedAt: tsOrNil(u.UpdatedAt), DisabledAt: tsOrNil(u.DisabledAt)}
}

type userListJSON struct {
	Users []userJSON `json:"users"`
}

func (a *api) listUsers(w http.ResponseWriter, r *http.Request) error {
	us, err := a.store.ListUsers(r.Context())
	if err != nil {
		return err
	}
	out := userListJSON{Users: make([]userJSON, len(us))}
	for i, u := range us {
		out.Users[i] = userOf(u)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

const maxUserName = 100

func checkEmail(email string) error {
	if email == "" {
		return invalid("email", "required")
	}
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		return invalid("email", "must be a plain email address (name@example.com)")
	}
	return nil
}

func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return invalid("name", "required")
	}
	if utf8.RuneCountInString(name) > maxUserName {
		return invalid("name", "at most 100 characters")
	}
	return nil
}

func checkRole(role string) error {
	if _, ok := roleScopes[role]; !ok {
		return invalid("role", `must be "viewer", "dispatcher" or "admin"`)
	}
	return nil
}

// newUserID returns a random user id.
func newUserID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "usr_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// passwordOrGenerated returns the password to set: the given one when it
// is acceptable, or a generated one-time password (shown = true).
func passwordOrGenerated(given *string) (pw string, shown bool, err error) {
	if given == nil || *given == "" {
		return password.Generate(), true, nil
	}
	if msg := password.Check(*given); msg != "" {
		return "", false, invalid("password", msg)
	}
	return *given, false, nil
}

func (a *api) createUser(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Email    string  `json:"email"`
		Name     string  `json:"name"`
		Role     string  `json:"role"`
		Password *string `json:"password"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	body.Email = normalizeEmail(body.Email)
	body.Name = strings.TrimSpace(body.Name)
	for _, err := range []error{checkEmail(body.Email), checkName(body.Name), checkRole(body.Role)} {
		if err != nil {
			return err
		}
	}
	pw, shown, err := passwordOrGenerated(body.Password)
	if err != nil {
		return err
	}
	hash, err := a.hasher.Hash(r.Context(), pw)
	if err != nil {
		return err
	}
	now := a.now().UTC()
	u := store.User{ID: newUserID(), Email: body.Email, Name: body.Name, Role: body.Role, PasswordHash: hash,
		CreatedAt: now, UpdatedAt: now, MustChangePassword: shown}
	err = a.store.CreateUser(r.Context(), u, store.AuditEntry{At: now, Actor: requestActor(r), Action: auditUserCreated,
		Target: u.ID + " " + u.Email + " " + u.Role})
	if errors.Is(err, store.ErrEmailTaken) {
		return newError(http.StatusConflict, codeConflict, "a user with this email already exists")
	}
	if err != nil {
		return err
	}
	out := userOf(u)
	if shown {
		out.Password = pw
	}
	w.Header().Set("Location", "/v1/users/"+u.ID)
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (a *api) updateUser(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Email         *string `json:"email"`
		Name          *string `json:"name"`
		Role          *string `json:"role"`
		Password      *string `json:"password"`
		ResetPassword bool    `json:"reset_password"`
		Disabled      *bool   `json:"disabled"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	u, err := a.store.UserByID(r.Context(), r.PathValue("id"))
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("user")
	}
	if err != nil {
		return err
	}
	epoch := u.SessionEpoch
	now := a.now().UTC()
	who := requestActor(r)
	var audit []store.AuditEntry
	note := func(action, detail string) {
		t := u.ID
		if detail != "" {
			t += " " + detail
		}
		audit = append(audit, store.AuditEntry{At: now, Actor: who, Action: action, Target: t})
	}
	var changed []string
	if body.Email != nil {
		e := normalizeEmail(*body.Email)
		if err := checkEmail(e); err != nil {
			return err
		}
		if e != u.Email {
			u.Email = e
			changed = append(changed, "email="+e)
		}
	}
	if body.Name != nil {
		n := strings.TrimSpace(*body.Name)
		if err := checkName(n); err != nil {
			return err
		}
		if n != u.Name {
			u.Name = n
			changed = append(changed, "name")
		}
	}
	if body.Role != nil {
		if err := checkRole(*body.Role); err != nil {
			return err
		}
		if *body.Role != u.Role {
			if self, ok := userFrom(r.Context()); ok && self.ID == u.ID {
				return newError(http.StatusConflict, codeConflict, "you cannot change your own role")
			}
			u.Role = *body.Role
			changed = append(changed, "role="+u.Role)
		}
	}
	if len(changed) > 0 {
		note(auditUserUpdated, strings.Join(changed, " "))
	}
	var generated string
	if body.ResetPassword || body.Password != nil {
		if generated, err = a.resetPassword(r, &u, body.Password, body.ResetPassword); err != nil {
			return err
		}
		note(auditUserPassword, "")
	}
	if body.Disabled != nil && *body.Disabled != !u.DisabledAt.IsZero() {
		if *body.Disabled {
			if err := a.refuseSelf(r, u); err != nil {
				return err
			}
			u.DisabledAt = now
			u.SessionEpoch++
			note(auditUserDisabled, "")
		} else {
			u.DisabledAt = time.Time{}
			note(auditUserEnabled, "")
		}
	}
	if len(audit) > 0 {
		u.UpdatedAt = now
		if err := a.saveUser(r, u, epoch, audit); err != nil {
			return err
		}
	}
	out := userOf(u)
	out.Password = generated
	writeJSON(w, http.StatusOK, out)
	return nil
}

// saveUser stores an updated user with its audit entries and, when its
// session epoch changed (from epoch), ends its sessions everywhere.
func (a *api) saveUser(r *http.Request, u store.User, epoch int64, audit []store.AuditEntry) error {
	err := a.store.UpdateUser(r.Context(), u, audit...)
	if errors.Is(err, store.ErrEmailTaken) {
		return newError(http.StatusConflict, codeConflict, "a user with this email already exists")
	}
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("user")
	}
	if err != nil {
		return err
	}
	if u.SessionEpoch != epoch {
		a.endSessionsOf(r, u.ID)
	}
	return nil
}

// resetPassword sets the password an admin gives (or a generated one when
// given is nil or generate is set, returned to be shown once) and signs
// the user out everywhere. A password someone else chose is one-time: the
// user must choose their own at sign-in.
func (a *api) resetPassword(r *http.Request, u *store.User, given *string, generate bool) (generated string, err error) {
	if generate {
		given = nil
	}
	pw, shown, err := passwordOrGenerated(given)
	if err != nil {
		return "", err
	}
	if u.PasswordHash, err = a.hasher.Hash(r.Context(), pw); err != nil {
		return "", err
	}
	u.SessionEpoch++
	u.MustChangePassword = true
	if shown {
		return pw, nil
	}
	return "", nil
}

// refuseSelf keeps an admin from disabling their own account (and so
// possibly the last way in).
func (a *api) refuseSelf(r *http.Request, u store.User) error {
	if self, ok := userFrom(r.Context()); ok && self.ID == u.ID {
		return newError(http.StatusConflict, codeConflict, "you cannot disable yourself")
	}
	return nil
}

// deleteUser disables the user and revokes the keys they made: a user is
// never removed, so that the audit trail keeps naming who did what.
func (a *api) deleteUser(w http.ResponseWriter, r *http.Request) error {
	u, err := a.store.UserByID(r.Context(), r.PathValue("id"))
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("user")
	}
	if err != nil {
		return err
	}
	if err := a.refuseSelf(r, u); err != nil {
		return err
	}
	// Disabled (if it is not yet) and its keys revoked, in one
	// transaction: a deleted user's keys end with them, for good.
	now := a.now().UTC()
	var audit []store.AuditEntry
	if u.DisabledAt.IsZero() {
		u.DisabledAt, u.UpdatedAt = now, now
		u.SessionEpoch++
		audit = append(audit, store.AuditEntry{At: now, Actor: requestActor(r), Action: auditUserDisabled, Target: u.ID})
	} else {
		u.UpdatedAt = now
	}
	revoked, err := a.store.DeleteUser(r.Context(), u, store.AuditEntry{At: now, Actor: requestActor(r), Action: auditKeyRevoked}, audit...)
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("user")
	}
	if err != nil {
		return err
	}
	for _, id := range revoked {
		a.auth.Forget(id)
	}
	a.endSessionsOf(r, u.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
