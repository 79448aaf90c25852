package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// keyListed is one key of GET /v1/keys as the tests read it.
type keyListed struct {
	ID        string     `json:"id"`
	CreatedBy *string    `json:"created_by"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// listedKeys returns GET /v1/keys by key id.
func (e *env) listedKeys() map[string]keyListed {
	e.t.Helper()
	r, b := e.do("GET", "/v1/keys", "", "admin", nil)
	if r.StatusCode != 200 {
		e.t.Fatalf("list keys: %d %s", r.StatusCode, b)
	}
	out := map[string]keyListed{}
	for _, k := range decode[struct{ Keys []keyListed }](e.t, b).Keys {
		out[k.ID] = k
	}
	return out
}

// makeKey creates a key with body, authenticated by a cookie when c is
// set and by the key named auth otherwise; it returns the key and its id.
func (e *env) makeKey(c *http.Cookie, auth, body string) (key, id string) {
	e.t.Helper()
	var r *http.Response
	var b []byte
	if c != nil {
		r, b = e.withCookie(c, "POST", "/v1/keys", body, nil)
	} else {
		r, b = e.do("POST", "/v1/keys", body, auth, nil)
	}
	if r.StatusCode != 201 {
		e.t.Fatalf("create key %s: %d %s", body, r.StatusCode, b)
	}
	k := decode[newKeyJSON](e.t, b)
	return k.Key, k.ID
}

// keyStatus is the status of GET /v1/groups with a bearer key.
func (e *env) keyStatus(key string) int {
	e.t.Helper()
	r, _ := e.do("GET", "/v1/groups", "", key, nil)
	return r.StatusCode
}

// A key records who made it (a user, or the owner of the key it was made
// with; nobody for the bootstrap-like keys) and when it expires; it is
// refused with 401 once it has expired.
func TestKeyCreatedByAndExpiry(t *testing.T) {
	e := newEnv(t, cheapUsers)
	uid, pw := e.newUser("kim@example.com", "Kim", "admin")
	c := e.mustSignIn("kim@example.com", pw)
	exp := e.clock.Now().Add(30 * 24 * time.Hour).UTC()
	k1, id1 := e.makeKey(c, "", `{"scopes":["admin"],"name":"kim's","expires_at":"`+exp.Format(time.RFC3339)+`"}`)
	k2, id2 := e.makeKey(nil, k1, `{"scopes":["read"],"name":"made with kim's key"}`)
	_, id3 := e.makeKey(nil, "admin", `{"scopes":["read"],"name":"nobody's"}`)
	keys := e.listedKeys()
	if k := keys[id1]; k.CreatedBy == nil || *k.CreatedBy != uid || k.ExpiresAt == nil || !k.ExpiresAt.Equal(exp) {
		t.Fatalf("key made by a user: %+v", k)
	}
	if k := keys[id2]; k.CreatedBy == nil || *k.CreatedBy != uid || k.ExpiresAt != nil {
		t.Fatalf("key made with a user's key: %+v, want created_by %s and no expiry", k, uid)
	}
	if k := keys[id3]; k.CreatedBy != nil || k.ExpiresAt != nil {
		t.Fatalf("key made with an unowned key: %+v, want created_by null", k)
	}
	for _, bad := range []string{`"2020-01-01T00:00:00Z"`, `"tomorrow"`, `"` + e.clock.Now().UTC().Format(time.RFC3339) + `"`} {
		r, b := e.do("POST", "/v1/keys", `{"scopes":["read"],"expires_at":`+bad+`}`, "admin", nil)
		if r.StatusCode != 400 || !strings.Contains(string(b), "expires_at") {
			t.Errorf("expires_at %s: %d %s, want 400 naming expires_at", bad, r.StatusCode, b)
		}
	}
	if s := e.keyStatus(k1); s != 200 {
		t.Fatalf("key before its expiry: %d", s)
	}
	e.clock.Advance(30*24*time.Hour + time.Second)
	if s := e.keyStatus(k1); s != 401 {
		t.Fatalf("key after its expiry: %d, want 401", s)
	}
	if s := e.keyStatus(k2); s != 200 {
		t.Fatalf("a key made with an expired key has its own (no) expiry: %d", s)
	}
}

// A user's keys are suspended while the user is disabled and revoked for
// good when the user is deleted.
func TestKeysEndWithTheirOwner(t *testing.T) {
	e := newEnv(t, cheapUsers)
	uid, pw := e.newUser("lee@example.com", "Lee", "admin")
	c := e.mustSignIn("lee@example.com", pw)
	key, id := e.makeKey(c, "", `{"scopes":["admin"],"name":"lee's"}`)
	derived, did := e.makeKey(nil, key, `{"scopes":["read"]}`)
	patch := func(body string) {
		t.Helper()
		if r, b := e.do("PATCH", "/v1/users/"+uid, body, "admin", nil); r.StatusCode != 200 {
			t.Fatalf("PATCH %s: %d %s", body, r.StatusCode, b)
		}
	}
	if e.keyStatus(key) != 200 || e.keyStatus(derived) != 200 {
		t.Fatal("the user's keys do not work")
	}
	patch(`{"disabled":true}`)
	if s1, s2 := e.keyStatus(key), e.keyStatus(derived); s1 != 401 || s2 != 401 {
		t.Fatalf("keys of a disabled user: %d %d, want 401", s1, s2)
	}
	patch(`{"disabled":false}`)
	if s1, s2 := e.keyStatus(key), e.keyStatus(derived); s1 != 200 || s2 != 200 {
		t.Fatalf("keys of a re-enabled user: %d %d, want 200", s1, s2)
	}
	if r, b := e.do("DELETE", "/v1/users/"+uid, "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("delete user: %d %s", r.StatusCode, b)
	}
	keys := e.listedKeys()
	if keys[id].RevokedAt == nil || keys[did].RevokedAt == nil {
		t.Fatalf("keys of a deleted user not revoked: %+v %+v", keys[id], keys[did])
	}
	patch(`{"disabled":false}`)
	if s1, s2 := e.keyStatus(key), e.keyStatus(derived); s1 != 401 || s2 != 401 {
		t.Fatalf("keys of a deleted user after re-enabling it: %d %d, want 401 (revoked)", s1, s2)
	}
	r, b := e.do("GET", "/v1/audit?action=key.revoked", "", "admin", nil)
	if r.StatusCode != 200 || !strings.Contains(string(b), id) || !strings.Contains(string(b), did) {
		t.Fatalf("audit of the revocations: %d %s", r.StatusCode, b)
	}
}
