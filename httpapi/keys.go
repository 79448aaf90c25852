package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/store"
)

// keyJSON is a stored key as listed: never its secret or hash.
type keyJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  *time.Time `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	// CreatedBy is the user the key belongs to (null: nobody, as for the
	// bootstrap key); ExpiresAt when it stops working (null: never).
	CreatedBy *string    `json:"created_by"`
	ExpiresAt *time.Time `json:"expires_at"`
}

type keyListJSON struct {
	Keys []keyJSON `json:"keys"`
}

func (a *api) listKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := a.store.ListKeys(r.Context())
	if err != nil {
		return err
	}
	out := keyListJSON{Keys: make([]keyJSON, len(keys))}
	for i, k := range keys {
		scopes := k.Scopes
		if scopes == nil {
			scopes = []string{}
		}
		out.Keys[i] = keyJSON{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scopes: scopes, CreatedAt: tsOrNil(k.CreatedAt),
			LastUsedAt: tsOrNil(k.LastUsedAt), RevokedAt: tsOrNil(k.RevokedAt), CreatedBy: strOrNil(k.CreatedBy), ExpiresAt: tsOrNil(k.ExpiresAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// newKeyJSON is the answer to key creation: the only time the key is shown.
type newKeyJSON struct {
	ID        string     `json:"id"`
	Key       string     `json:"key"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	CreatedBy *string    `json:"created_by"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// keyOwner is the user a key made by this request belongs to: the
// signed-in user, or the owner of the key making it ("" for none).
func keyOwner(r *http.Request) string {
	if u, ok := userFrom(r.Context()); ok {
		return u.ID
	}
	p, _ := principalFrom(r.Context())
	return p.Owner
}

// parseExpiry reads the optional expires_at of a new key: an RFC 3339
// time after now.
func parseExpiry(s *string, now time.Time) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	if err != nil {
		return time.Time{}, invalid("expires_at", "must be an RFC 3339 time, e.g. 2026-12-31T23:59:59Z")
	}
	if !t.After(now) {
		return time.Time{}, invalid("expires_at", "must be in the future")
	}
	return t.UTC(), nil
}

const maxKeyName = 100

func (a *api) createKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Scopes    []string `json:"scopes"`
		Name      string   `json:"name"`
		ExpiresAt *string  `json:"expires_at"`
	}
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		return err
	}
	if len(body.Scopes) == 0 {
		return invalid("scopes", `at least one of "read", "send", "admin" is required`)
	}
	scopes := make([]apikey.Scope, len(body.Scopes))
	for i, s := range body.Scopes {
		sc := apikey.Scope(s)
		if !sc.Valid() {
			return invalid("scopes", `each scope must be "read", "send" or "admin"`)
		}
		scopes[i] = sc
	}
	if len([]rune(body.Name)) > maxKeyName {
		return invalid("name", "at most 100 characters")
	}
	now := a.now()
	expires, err := parseExpiry(body.ExpiresAt, now)
	if err != nil {
		return err
	}
	// The audit entry commits with the key: both or neither.
	who := requestActor(r)
	opts := apikey.Options{CreatedBy: keyOwner(r), ExpiresAt: expires}
	plaintext, rec, err := apikey.CreateWith(r.Context(), a.store, body.Name, scopes, opts, now, func(rec store.APIKey) store.AuditEntry {
		return store.AuditEntry{At: rec.CreatedAt, Actor: who, Action: auditKeyCreated, Target: apikey.AuditTarget(rec)}
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/keys/"+rec.ID)
	writeJSON(w, http.StatusCreated, newKeyJSON{ID: rec.ID, Key: plaintext, Name: rec.Name, Scopes: rec.Scopes,
		CreatedBy: strOrNil(rec.CreatedBy), ExpiresAt: tsOrNil(rec.ExpiresAt)})
	return nil
}

func (a *api) revokeKey(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	now := a.now().UTC()
	err := a.store.RevokeKey(r.Context(), id, now, store.AuditEntry{At: now, Actor: requestActor(r), Action: auditKeyRevoked, Target: id})
	if errors.Is(err, actor.ErrNotFound) {
		return notFound("key")
	}
	if err != nil {
		return err
	}
	a.auth.Forget(id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
