package storetest

import (
	"context"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// testAuditWithChange: an API key's creation and revocation and a
// suppression's addition and removal commit with the audit entries that
// record them — a failed audit insert leaves the change unmade, a
// successful write leaves both (issue 17: the audit log is written in the
// same transaction as the durable change it records).
func testAuditWithChange(t *testing.T, o Options) {
	s, _, db := open(t, o)
	ctx := context.Background()
	admin := store.AuditActor{Type: store.ActorUser, ID: "usr_a", Name: "Ada", IP: "192.0.2.7"}
	const refused = "test.refused"
	db.FailAudit(t, refused)
	bad := store.AuditEntry{At: t0, Actor: admin, Action: refused, Target: "x"}
	entry := func(action, target string) store.AuditEntry {
		return store.AuditEntry{At: t0, Actor: admin, Action: action, Target: target}
	}
	const number = "+15550107777"

	// Failed audit: nothing changes.
	k := store.APIKey{ID: "key-aud", Name: "ci", Prefix: "cc_audt", Hash: []byte{7}, Scopes: []string{"send"}, CreatedAt: t0}
	if err := s.CreateKey(ctx, k, bad); err == nil {
		t.Fatal("CreateKey with a refused audit entry succeeded")
	}
	if keys, err := s.ListKeys(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("keys after a refused audit = %+v, %v; want none", keys, err)
	}
	if err := s.AddSuppression(ctx, store.Suppression{Number: number, Reason: store.ReasonManual, CreatedAt: t0}, bad); err == nil {
		t.Fatal("AddSuppression with a refused audit entry succeeded")
	}
	if got, err := s.Suppressed(ctx, []string{number}); err != nil || len(got) != 0 {
		t.Fatalf("suppressions after a refused audit = %+v, %v; want none", got, err)
	}

	// Successful writes leave the change and its entry.
	if err := s.CreateKey(ctx, k, entry("key.created", "key-aud")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSuppression(ctx, store.Suppression{Number: number, Reason: store.ReasonManual, CreatedAt: t0},
		entry("suppression.added", "…7777")); err != nil {
		t.Fatal(err)
	}

	// A refused revocation or removal leaves the key live and the
	// suppression in place.
	if err := s.RevokeKey(ctx, "key-aud", t0, bad); err == nil {
		t.Fatal("RevokeKey with a refused audit entry succeeded")
	}
	if got, err := s.KeyByPrefix(ctx, "cc_audt"); err != nil || !got.RevokedAt.IsZero() {
		t.Fatalf("key after a refused revocation = %+v, %v; want live", got, err)
	}
	if err := s.RemoveSuppression(ctx, number, bad); err == nil {
		t.Fatal("RemoveSuppression with a refused audit entry succeeded")
	}
	if got, err := s.Suppressed(ctx, []string{number}); err != nil || len(got) != 1 {
		t.Fatalf("suppressions after a refused removal = %+v, %v; want the one", got, err)
	}

	if err := s.RevokeKey(ctx, "key-aud", t0, entry("key.revoked", "key-aud")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.KeyByPrefix(ctx, "cc_audt"); err != nil || !got.RevokedAt.Equal(t0) {
		t.Fatalf("key after revocation = %+v, %v; want revoked at t0", got, err)
	}
	if err := s.RemoveSuppression(ctx, number, entry("suppression.removed", "…7777")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Suppressed(ctx, []string{number}); err != nil || len(got) != 0 {
		t.Fatalf("suppressions after removal = %+v, %v; want none", got, err)
	}

	// Without entries the writes work as before and log nothing.
	k2 := store.APIKey{ID: "key-cli", Name: "cli", Prefix: "cc_clik", Hash: []byte{8}, Scopes: []string{"read"}, CreatedAt: t0}
	if err := s.CreateKey(ctx, k2); err != nil {
		t.Fatal(err)
	}

	all, _, err := s.ListAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range all {
		if e.Actor != admin {
			t.Errorf("entry %+v: actor %+v, want %+v", e, e.Actor, admin)
		}
		actions = append(actions, e.Action+" "+e.Target)
	}
	want := []string{"suppression.removed …7777", "key.revoked key-aud", "suppression.added …7777", "key.created key-aud"}
	if len(actions) != len(want) {
		t.Fatalf("audit = %q, want %q (newest first)", actions, want)
	}
	for i := range want {
		if actions[i] != want[i] {
			t.Fatalf("audit = %q, want %q (newest first)", actions, want)
		}
	}
}
