package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// testSessions: board sessions are stored by the hash of their id, seen
// by a second store on the same database (another node, or the same node
// after a restart), capped per owner and in all, and purged once ended.
func testSessions(t *testing.T, o Options) {
	s, c, db := open(t, o)
	ctx := context.Background()
	lim := store.SessionLimits{PerOwner: 2, Total: 4, IdleBefore: t0.Add(-time.Hour)}
	a := store.Session{IDHash: sessionHash("a"), UserID: "usr_1", Name: "Ada", Epoch: 3,
		CreatedAt: t0, ExpiresAt: t0.Add(12 * time.Hour), LastSeen: t0}
	if err := s.CreateSession(ctx, a, lim); err != nil {
		t.Fatal(err)
	}
	other := db.Open(t, Config{Now: c.Now})
	got, err := other.SessionByHash(ctx, sessionHash("a"))
	if err != nil {
		t.Fatalf("SessionByHash on a second store: %v", err)
	}
	if string(got.IDHash) != string(a.IDHash) || got.UserID != "usr_1" || got.Name != "Ada" || got.Epoch != 3 ||
		!got.CreatedAt.Equal(t0) || !got.ExpiresAt.Equal(a.ExpiresAt) || !got.LastSeen.Equal(t0) {
		t.Fatalf("SessionByHash = %+v, want %+v", got, a)
	}
	if _, err := s.SessionByHash(ctx, sessionHash("nope")); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("unknown session: %v, want ErrNotFound", err)
	}

	// Touch moves last use forward only.
	if err := other.TouchSession(ctx, a.IDHash, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSession(ctx, a.IDHash, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SessionByHash(ctx, a.IDHash); !got.LastSeen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("LastSeen = %v, want %v", got.LastSeen, t0.Add(time.Minute))
	}

	// Per owner: a third session of usr_1 ends its oldest (by expiry).
	b := a
	b.IDHash, b.ExpiresAt = sessionHash("b"), t0.Add(13*time.Hour)
	cc := a
	cc.IDHash, cc.ExpiresAt = sessionHash("c"), t0.Add(14*time.Hour)
	for _, x := range []store.Session{b, cc} {
		if err := s.CreateSession(ctx, x, lim); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SessionByHash(ctx, a.IDHash); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("the owner's oldest session survived its cap: %v", err)
	}
	// In all: two key sessions fill the table; a third owner is refused,
	// and nobody is signed out.
	k1 := store.Session{IDHash: sessionHash("k1"), KeyID: "key_1", KeyPrefix: "p1", ExpiresAt: t0.Add(time.Hour)}
	k2 := store.Session{IDHash: sessionHash("k2"), KeyID: "key_1", KeyPrefix: "p1", ExpiresAt: t0.Add(time.Hour)}
	for _, x := range []store.Session{k1, k2} {
		if err := s.CreateSession(ctx, x, lim); err != nil {
			t.Fatal(err)
		}
	}
	k3 := store.Session{IDHash: sessionHash("k3"), KeyID: "key_2", ExpiresAt: t0.Add(time.Hour)}
	if err := s.CreateSession(ctx, k3, lim); !errors.Is(err, store.ErrTooManySessions) {
		t.Fatalf("create into a full table: %v, want ErrTooManySessions", err)
	}
	if got, err := s.SessionByHash(ctx, k1.IDHash); err != nil || got.KeyID != "key_1" || got.KeyPrefix != "p1" || got.UserID != "" {
		t.Fatalf("key session = %+v, %v", got, err)
	}

	// Deleting by owner ends only that owner's sessions, on every store.
	if n, err := other.DeleteSessionsOf(ctx, "usr_1"); err != nil || n != 2 {
		t.Fatalf("DeleteSessionsOf(usr_1) = %d, %v, want 2", n, err)
	}
	if n, err := s.DeleteSessionsOf(ctx, ""); err != nil || n != 0 {
		t.Fatalf("DeleteSessionsOf(\"\") = %d, %v, want 0", n, err)
	}
	if _, err := s.SessionByHash(ctx, b.IDHash); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("a deleted user's session is still there: %v", err)
	}
	if err := s.DeleteSession(ctx, k2.IDHash); err != nil {
		t.Fatal(err)
	}
	if _, err := other.SessionByHash(ctx, k2.IDHash); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("a signed-out session is still there: %v", err)
	}

	// ChangePassword ends the user's other sessions, keeps the current.
	u := store.User{ID: "usr_9", Email: "cy@example.com", Name: "Cy", Role: store.RoleViewer, PasswordHash: "h",
		MustChangePassword: true}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, err := other.UserByID(ctx, u.ID); err != nil || !got.MustChangePassword {
		t.Fatalf("MustChangePassword not stored: %+v, %v", got, err)
	}
	mine := store.Session{IDHash: sessionHash("m1"), UserID: u.ID, ExpiresAt: t0.Add(time.Hour)}
	theirs := store.Session{IDHash: sessionHash("m2"), UserID: u.ID, ExpiresAt: t0.Add(time.Hour)}
	for _, x := range []store.Session{mine, theirs} {
		if err := s.CreateSession(ctx, x, store.SessionLimits{}); err != nil {
			t.Fatal(err)
		}
	}
	u.PasswordHash, u.MustChangePassword = "h2", false
	entry := store.AuditEntry{At: t0, Actor: store.AuditActor{Type: store.ActorUser, ID: u.ID}, Action: "user.password_changed", Target: u.ID}
	if err := s.ChangePassword(ctx, u, mine.IDHash, entry); err != nil {
		t.Fatal(err)
	}
	if got, err := s.UserByID(ctx, u.ID); err != nil || got.MustChangePassword || got.PasswordHash != "h2" {
		t.Fatalf("after ChangePassword: %+v, %v", got, err)
	}
	if _, err := s.SessionByHash(ctx, mine.IDHash); err != nil {
		t.Fatalf("ChangePassword ended the current session: %v", err)
	}
	if _, err := s.SessionByHash(ctx, theirs.IDHash); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("ChangePassword kept another session: %v", err)
	}
	if rows, _, err := s.ListAudit(ctx, store.AuditQuery{Action: "user.password_changed"}); err != nil || len(rows) != 1 {
		t.Fatalf("audit of ChangePassword = %+v, %v", rows, err)
	}

	// Purge: past the absolute end, or idle since before idleBefore.
	c.Advance(2 * time.Hour)
	if n, err := s.PurgeSessions(ctx, c.Now(), t0.Add(-time.Hour)); err != nil || n != 2 {
		t.Fatalf("PurgeSessions = %d, %v, want 2 (k1 and m1 reached their end)", n, err)
	}
	idle := store.Session{IDHash: sessionHash("i"), UserID: "usr_2", ExpiresAt: c.Now().Add(time.Hour), LastSeen: c.Now()}
	if err := s.CreateSession(ctx, idle, store.SessionLimits{}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeSessions(ctx, c.Now(), c.Now()); err != nil || n != 0 {
		t.Fatalf("PurgeSessions purged a session last seen at idleBefore: %d, %v", n, err)
	}
	if n, err := s.PurgeSessions(ctx, c.Now(), c.Now().Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("PurgeSessions(idle) = %d, %v, want 1", n, err)
	}
}
