package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testKeyOwner: a key keeps its owner and expiry, is suspended while its
// owner is disabled (or unknown), and DeleteUser revokes the owner's keys
// with one audit entry each, in the user's transaction.
func testKeyOwner(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	admin := store.AuditActor{Type: store.ActorKey, ID: "key_boot", Name: "bootstrap"}
	u := store.User{ID: "usr_own", Email: "own@example.com", Name: "Own", Role: store.RoleAdmin, PasswordHash: "h", CreatedAt: t0, UpdatedAt: t0}
	other := store.User{ID: "usr_oth", Email: "oth@example.com", Name: "Oth", Role: store.RoleAdmin, PasswordHash: "h", CreatedAt: t0, UpdatedAt: t0}
	for _, x := range []store.User{u, other} {
		if err := s.CreateUser(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	exp := t0.Add(30 * 24 * time.Hour)
	keys := []store.APIKey{
		{ID: "key-o1", Name: "a", Prefix: "cc_own1", Hash: []byte{1}, Scopes: []string{"read"}, CreatedAt: t0, CreatedBy: u.ID, ExpiresAt: exp},
		{ID: "key-o2", Name: "b", Prefix: "cc_own2", Hash: []byte{2}, Scopes: []string{"send"}, CreatedAt: t0.Add(time.Second), CreatedBy: u.ID},
		{ID: "key-x", Name: "c", Prefix: "cc_oth1", Hash: []byte{3}, Scopes: []string{"send"}, CreatedAt: t0.Add(2 * time.Second), CreatedBy: other.ID},
		{ID: "key-n", Name: "d", Prefix: "cc_none", Hash: []byte{4}, Scopes: []string{"admin"}, CreatedAt: t0.Add(3 * time.Second)},
		{ID: "key-g", Name: "e", Prefix: "cc_gone", Hash: []byte{5}, Scopes: []string{"read"}, CreatedAt: t0.Add(4 * time.Second), CreatedBy: "usr_nobody"},
	}
	for _, k := range keys {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	keys[4].Suspended = true // no such user: refused, not trusted
	if got, err := s.KeyByPrefix(ctx, "cc_own1"); err != nil || !reflect.DeepEqual(got, keys[0]) {
		t.Fatalf("KeyByPrefix = %+v, %v, want %+v", got, err, keys[0])
	}
	if got, err := s.ListKeys(ctx); err != nil || !reflect.DeepEqual(got, keys) {
		t.Fatalf("ListKeys = %+v, %v\nwant %+v", got, err, keys)
	}

	// Disabled: the owner's keys are suspended, nobody else's.
	u.DisabledAt, u.UpdatedAt = t0.Add(time.Hour), t0.Add(time.Hour)
	if err := s.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]bool{"cc_own1": true, "cc_own2": true, "cc_oth1": false, "cc_none": false} {
		if got, err := s.KeyByPrefix(ctx, prefix); err != nil || got.Suspended != want {
			t.Fatalf("%s while its owner is disabled: Suspended %v, %v; want %v", prefix, got.Suspended, err, want)
		}
	}
	// Enabled again: working again.
	u.DisabledAt, u.UpdatedAt = time.Time{}, t0.Add(2*time.Hour)
	if err := s.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, err := s.KeyByPrefix(ctx, "cc_own1"); err != nil || got.Suspended || !got.RevokedAt.IsZero() {
		t.Fatalf("after re-enabling: %+v, %v", got, err)
	}

	// Deleted: the owner's live keys are revoked, once, with an entry each.
	if err := s.RevokeKey(ctx, "key-o2", t0.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	del := t0.Add(3 * time.Hour)
	u.DisabledAt, u.UpdatedAt = del, del
	keyEntry := store.AuditEntry{At: del, Actor: admin, Action: "key.revoked"}
	ids, err := s.DeleteUser(ctx, u, keyEntry, store.AuditEntry{At: del, Actor: admin, Action: "user.disabled", Target: u.ID})
	if err != nil || !slices.Equal(ids, []string{"key-o1"}) {
		t.Fatalf("DeleteUser = %v, %v; want [key-o1] (key-o2 was revoked before)", ids, err)
	}
	got, err := s.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	revoked := map[string]time.Time{}
	for _, k := range got {
		revoked[k.ID] = k.RevokedAt
	}
	if !revoked["key-o1"].Equal(del) || !revoked["key-o2"].Equal(t0.Add(90*time.Minute)) || !revoked["key-x"].IsZero() || !revoked["key-n"].IsZero() {
		t.Fatalf("revoked after DeleteUser: %v", revoked)
	}
	if st, err := s.UserByID(ctx, u.ID); err != nil || !st.DisabledAt.Equal(del) {
		t.Fatalf("deleted user stored as %+v, %v", st, err)
	}
	entries, _, err := s.ListAudit(ctx, store.AuditQuery{Actor: admin.ID})
	if err != nil || len(entries) != 2 {
		t.Fatalf("audit after DeleteUser: %+v, %v", entries, err)
	}
	var targets []string
	for _, e := range entries {
		targets = append(targets, e.Action+" "+e.Target)
	}
	slices.Sort(targets)
	if !slices.Equal(targets, []string{"key.revoked key-o1", "user.disabled usr_own"}) {
		t.Fatalf("audit after DeleteUser: %v", targets)
	}
	if _, err := s.DeleteUser(ctx, store.User{ID: "usr_none", Email: "n@example.com"}, keyEntry); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("DeleteUser(unknown) = %v, want ErrNotFound", err)
	}
}
