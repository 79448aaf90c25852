package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

func testUsers(t *testing.T, o Options) {
	s, c, _ := open(t, o)
	ctx := context.Background()
	admin := store.AuditActor{Type: store.ActorKey, ID: "key_boot", Name: "bootstrap", IP: "192.0.2.1"}
	u := store.User{ID: "usr_1", Email: "ada@example.com", Name: "Ada", Role: store.RoleDispatcher,
		PasswordHash: "$argon2id$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA", CreatedAt: t0, UpdatedAt: t0}
	if err := s.CreateUser(ctx, u, store.AuditEntry{At: t0, Actor: admin, Action: "user.created", Target: "usr_1"}); err != nil {
		t.Fatal(err)
	}
	// A second user with the same email is refused, and its audit entry
	// is not written (same transaction).
	dup := u
	dup.ID = "usr_2"
	if err := s.CreateUser(ctx, dup, store.AuditEntry{At: t0, Actor: admin, Action: "user.created", Target: "usr_2"}); !errors.Is(err, store.ErrEmailTaken) {
		t.Fatalf("duplicate email: %v, want ErrEmailTaken", err)
	}
	if _, err := s.UserByID(ctx, "usr_2"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("UserByID(usr_2) = %v, want ErrNotFound", err)
	}
	got, err := s.UserByEmail(ctx, "ada@example.com")
	if err != nil || got != u {
		t.Fatalf("UserByEmail = %+v, %v, want %+v", got, err, u)
	}
	if _, err := s.UserByEmail(ctx, "nobody@example.com"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("UserByEmail(unknown) = %v", err)
	}
	c.Advance(time.Second)
	b := store.User{ID: "usr_3", Email: "bo@example.com", Name: "Bo", Role: store.RoleViewer, PasswordHash: "h"}
	if err := s.CreateUser(ctx, b); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListUsers(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "usr_1" || list[1].ID != "usr_3" {
		t.Fatalf("ListUsers = %+v, %v", list, err)
	}
	if !list[1].CreatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("default CreatedAt = %v, want the store clock", list[1].CreatedAt)
	}

	// Update: every field but CreatedAt is replaced.
	upd := got
	upd.Name, upd.Role, upd.PasswordHash, upd.SessionEpoch = "Ada L.", store.RoleAdmin, "h2", 3
	upd.DisabledAt, upd.UpdatedAt, upd.CreatedAt = t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(99*time.Hour)
	if err := s.UpdateUser(ctx, upd, store.AuditEntry{At: t0.Add(time.Hour), Actor: admin, Action: "user.disabled", Target: "usr_1"}); err != nil {
		t.Fatal(err)
	}
	got, err = s.UserByID(ctx, "usr_1")
	upd.CreatedAt = t0
	if err != nil || got != upd {
		t.Fatalf("after update = %+v, %v, want %+v", got, err, upd)
	}
	// Taking another user's email is refused with nothing written.
	clash := got
	clash.Email, clash.Name = "bo@example.com", "changed"
	if err := s.UpdateUser(ctx, clash, store.AuditEntry{Actor: admin, Action: "user.updated", Target: "usr_1"}); !errors.Is(err, store.ErrEmailTaken) {
		t.Fatalf("update to a used email: %v", err)
	}
	if again, _ := s.UserByID(ctx, "usr_1"); again.Name != "Ada L." {
		t.Fatalf("failed update changed the user: %+v", again)
	}
	if err := s.UpdateUser(ctx, store.User{ID: "usr_none", Email: "x@example.com"}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("UpdateUser(unknown) = %v", err)
	}
	entries, _, err := s.ListAudit(ctx, store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Action != "user.disabled" || entries[1].Action != "user.created" ||
		entries[1].Actor != admin || entries[1].Target != "usr_1" || !entries[1].At.Equal(t0) {
		t.Fatalf("audit after user writes = %+v (failed writes must leave no entry)", entries)
	}
}

func testAudit(t *testing.T, o Options) {
	s, c, _ := open(t, o)
	ctx := context.Background()
	alice := store.AuditActor{Type: store.ActorUser, ID: "usr_a", Name: "Alice", IP: "2001:db8::1"}
	key := store.AuditActor{Type: store.ActorKey, ID: "key_k", Name: "ci"}
	for i := range 5 {
		a := alice
		if i%2 == 1 {
			a = key
		}
		if err := s.AppendAudit(ctx, store.AuditEntry{At: t0.Add(time.Duration(i) * time.Minute), Actor: a,
			Action: "group.sent", Target: "grp_" + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	// A unit's Effects.Audit commits with it; a failed unit's does not.
	commitOK(t, s, actor.Unit{Key: "g-audit", Events: events("1", 1), Effects: []any{store.Effects{
		Audit: []store.AuditEntry{{Actor: alice, Action: "group.canceled", Target: "g-audit"}}}}})
	errs := commit(t, s,
		actor.Unit{Key: "g-audit", ExpectSeq: 0, Events: events("2", 1), Effects: []any{&store.Effects{
			Audit: []store.AuditEntry{{Actor: alice, Action: "group.resumed", Target: "conflict"}}}}},
		actor.Unit{Key: "g-audit", ExpectSeq: 1, Events: events("3", 1), Effects: []any{&store.Effects{
			Audit: []store.AuditEntry{{At: t0.Add(time.Hour), Actor: key, Action: "recipient.retried", Target: "g-audit/+15550100001"}}}}})
	if errs[0] == nil || errs[1] != nil {
		t.Fatalf("commit errors = %v, want a conflict for the first unit only", errs)
	}
	all, next, err := s.ListAudit(ctx, store.AuditQuery{})
	if err != nil || next != "" {
		t.Fatalf("ListAudit = %v, %q", err, next)
	}
	if len(all) != 7 {
		t.Fatalf("got %d entries, want 7: %+v", len(all), all)
	}
	if all[0].Action != "recipient.retried" || all[1].Action != "group.canceled" || !all[1].At.Equal(t0) {
		t.Fatalf("newest first, committed entries with the store clock: %+v", all[:2])
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Fatalf("ids not decreasing: %+v", all)
		}
	}
	for _, e := range all {
		if e.Target == "conflict" {
			t.Fatal("a failed unit's audit entry was written")
		}
	}
	// Filters.
	byKey, _, err := s.ListAudit(ctx, store.AuditQuery{Actor: "key_k"})
	if err != nil || len(byKey) != 3 {
		t.Fatalf("actor filter: %d entries, %v", len(byKey), err)
	}
	sent, _, err := s.ListAudit(ctx, store.AuditQuery{Action: "group.sent", Since: t0.Add(time.Minute), Until: t0.Add(4 * time.Minute)})
	if err != nil || len(sent) != 3 || sent[0].Target != "grp_d" || sent[2].Target != "grp_b" {
		t.Fatalf("action+time filter = %+v, %v", sent, err)
	}
	// Pages.
	var paged []store.AuditEntry
	cur := ""
	for {
		p, n, err := s.ListAudit(ctx, store.AuditQuery{Cursor: cur, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, p...)
		if n == "" {
			break
		}
		cur = n
	}
	if len(paged) != 7 || paged[6].ID != all[6].ID {
		t.Fatalf("paging returned %d entries", len(paged))
	}
	if _, _, err := s.ListAudit(ctx, store.AuditQuery{Cursor: "!!"}); !errors.Is(err, store.ErrInvalidCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
	// Retention removes only older entries.
	c.Advance(time.Hour)
	n, err := s.PurgeAudit(ctx, t0.Add(2*time.Minute))
	if err != nil || n != 3 { // grp_a, grp_b, and the committed cancel at t0
		t.Fatalf("PurgeAudit = %d, %v, want 3", n, err)
	}
	rest, _, _ := s.ListAudit(ctx, store.AuditQuery{})
	if len(rest) != 4 {
		t.Fatalf("after purge %d entries, want 4", len(rest))
	}
}

// The audit log refuses changes even from someone with SQL access to the
// table (a trigger in each engine): entries are only added, and only
// retention removes them.
func testAuditAppendOnly(t *testing.T, o Options) {
	db := o.NewDB(t)
	s := db.Open(t, Config{})
	ctx := context.Background()
	e := store.AuditEntry{At: t0, Actor: store.AuditActor{Type: store.ActorUser, ID: "usr_1", Name: "Ada"}, Action: "group.sent", Target: "grp_1"}
	if err := s.AppendAudit(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := db.TamperAudit(t); err == nil {
		t.Fatal("UPDATE of audit_log succeeded; the log must be append-only")
	}
	got, _, err := s.ListAudit(ctx, store.AuditQuery{})
	if err != nil || len(got) != 1 || got[0].Action != "group.sent" || got[0].Actor.Name != "Ada" {
		t.Fatalf("after the refused update: %+v, %v", got, err)
	}
}
