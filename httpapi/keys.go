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
			LastUsedAt: tsOrNil(k.LastUsedAt), RevokedAt: tsOrNil(k.RevokedAt)}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// newKeyJSON is the answer to key creation: the only time the key is shown.
type newKeyJSON struct {
	ID     string   `json:"id"`
	Key    string   `json:"key"`
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

const maxKeyName = 100

func (a *api) createKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Scopes []string `json:"scopes"`
		Name   string   `json:"name"`
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
	// The audit entry commits with the key: both or neither.
	who := requestActor(r)
	plaintext, rec, err := apikey.CreateAudited(r.Context(), a.store, body.Name, scopes, a.now(), func(rec store.APIKey) store.AuditEntry {
		return store.AuditEntry{At: rec.CreatedAt, Actor: who, Action: auditKeyCreated, Target: apikey.AuditTarget(rec)}
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/keys/"+rec.ID)
	writeJSON(w, http.StatusCreated, newKeyJSON{ID: rec.ID, Key: plaintext, Name: rec.Name, Scopes: rec.Scopes})
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
