package httpapi

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// noAppendStore refuses every AppendAudit: an entry reaches the log only
// if it was handed to the store with the change it records.
type noAppendStore struct{ store.Store }

func (noAppendStore) AppendAudit(context.Context, ...store.AuditEntry) error {
	return errors.New("AppendAudit is not how key and suppression changes are audited")
}

// Key and suppression changes hand their audit entry to the store call
// that makes the change (one transaction, issue 17), not to a separate
// AppendAudit afterwards. Failed before the change: no entry was written.
func TestKeyAndSuppressionAuditCommitsWithChange(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Store = noAppendStore{c.Store} })
	r, b := e.do("POST", "/v1/keys", `{"scopes":["read"],"name":"ci"}`, "admin", nil)
	if r.StatusCode != 201 {
		t.Fatalf("create key: %d %s", r.StatusCode, b)
	}
	id := decode[newKeyJSON](t, b).ID
	if r, b := e.do("DELETE", "/v1/keys/"+id, "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("revoke key: %d %s", r.StatusCode, b)
	}
	if r, b := e.do("POST", "/v1/suppressions", `{"number":"+15550100009"}`, "admin", nil); r.StatusCode != 201 {
		t.Fatalf("suppress: %d %s", r.StatusCode, b)
	}
	if r, b := e.do("DELETE", "/v1/suppressions/+15550100009", "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("unsuppress: %d %s", r.StatusCode, b)
	}
	entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if en.Actor.ID != e.keyIDs["admin"] {
			t.Errorf("entry %+v: actor is not the admin key", en)
		}
		got = append(got, en.Action+" "+en.Target)
	}
	want := []string{auditSuppressRemov + " …0009", auditSuppressAdd + " …0009 manual", auditKeyRevoked + " " + id,
		auditKeyCreated + " " + id + " ci read"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit = %q, want %q", got, want)
	}
}
