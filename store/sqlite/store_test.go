package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	storetest.PrintResults(os.Stdout)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func openAt(t *testing.T, path string, c storetest.Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Path: path, Owner: c.Owner, Leased: c.Leased, Now: c.Now})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func newDB(t *testing.T) storetest.DB {
	path := filepath.Join(t.TempDir(), "crewcast.db")
	return storetest.DB{
		Open: func(t *testing.T, c storetest.Config) store.Store { return openAt(t, path, c) },
		TamperAudit: func(t *testing.T) error {
			t.Helper()
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err = db.Exec(`UPDATE audit_log SET action = 'nothing', actor_name = 'someone else'`)
			return err
		},
		FailAudit: func(t *testing.T, action string) {
			t.Helper()
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`CREATE TRIGGER test_fail_audit BEFORE INSERT ON audit_log
				WHEN NEW.action = '` + strings.ReplaceAll(action, "'", "''") + `'
				BEGIN SELECT RAISE(ABORT, 'audit insert refused by the test'); END`); err != nil {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, key string) {
			t.Helper()
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			res, err := db.Exec(`UPDATE snapshots SET state = CAST(X'00' || state AS BLOB) WHERE key = ?`, key)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("corrupt %q: %d rows", key, n)
			}
		},
		InboxPayload: func(t *testing.T, provider, eventID string) []byte {
			t.Helper()
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var p []byte
			if err := db.QueryRow(`SELECT payload FROM inbox WHERE provider = ? AND event_id = ?`, provider, eventID).Scan(&p); err != nil {
				t.Fatal(err)
			}
			return p
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Options{NewDB: newDB})
}

func TestCrash(t *testing.T) {
	storetest.Crash(t, storetest.CrashOptions{
		NewDSN: func(t *testing.T) string { return filepath.Join(t.TempDir(), "crash.db") },
		Open: func(ctx context.Context, dsn string) (store.Store, error) {
			return Open(ctx, Config{Path: dsn})
		},
	})
}

func TestConfig(t *testing.T) {
	ctx := context.Background()
	for _, path := range []string{"", ":memory:", "/tmp/x.db?mode=ro"} {
		if _, err := Open(ctx, Config{Path: path}); err == nil {
			t.Errorf("Open(%q) succeeded", path)
		}
	}
	if _, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "missing-dir", "x.db")}); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

// TestPragmas checks the durability settings the engine promises: WAL,
// synchronous=FULL and foreign keys on the writer; a query_only read pool.
func TestPragmas(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "p.db"), storetest.Config{})
	ctx := context.Background()
	pragma := func(db *sql.DB, name string) string {
		t.Helper()
		var v string
		if err := db.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := pragma(s.w, "journal_mode"); v != "wal" {
		t.Errorf("journal_mode = %s", v)
	}
	if v := pragma(s.w, "synchronous"); v != "2" {
		t.Errorf("synchronous = %s, want 2 (FULL)", v)
	}
	if v := pragma(s.w, "foreign_keys"); v != "1" {
		t.Errorf("foreign_keys = %s", v)
	}
	if v := pragma(s.w, "busy_timeout"); v != "5000" {
		t.Errorf("busy_timeout = %s", v)
	}
	if v := pragma(s.w, "journal_size_limit"); v != "16777216" {
		t.Errorf("journal_size_limit = %s, want 16 MiB", v)
	}
	if v := pragma(s.w, "wal_autocheckpoint"); v != "1000" {
		t.Errorf("wal_autocheckpoint = %s, want 1000 pages", v)
	}
	if v := pragma(s.r, "query_only"); v != "1" {
		t.Errorf("reader query_only = %s", v)
	}
	if _, err := s.r.ExecContext(ctx, `DELETE FROM routes`); err == nil {
		t.Error("the read pool accepted a write")
	}
	if n := s.w.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("writer pool has %d connections, want 1", n)
	}
}

// TestDiskFull simulates a full disk with max_page_count: writes fail with
// an error (never a silent success), nothing partial is stored, and the
// store works again once space is back.
func TestDiskFull(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "full.db"), storetest.Config{})
	ctx := context.Background()
	var pages int64
	if err := s.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages)); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat("x", 1<<20))
	unit := actor.Unit{Key: "g", Events: []actor.Event{{Type: "t", Data: big}},
		Effects: []any{store.Effects{Group: &store.GroupRow{ID: "g", Status: "sending"}}}}
	if res, err := s.Commit(ctx, []actor.Unit{unit}); err == nil {
		t.Fatalf("Commit on a full disk succeeded: %v", res)
	}
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "p", EventID: "e", Payload: big}}); err == nil {
		t.Fatal("InsertInbox on a full disk succeeded")
	}
	if err := s.SaveSnapshot(ctx, actor.Snapshot{Key: "g", Seq: 1, State: big}); err == nil {
		t.Fatal("SaveSnapshot on a full disk succeeded")
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetGroup(ctx, "g"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("a failed commit left its group row: %v", err)
	}
	if res, err := s.Commit(ctx, []actor.Unit{unit}); err != nil || res[0] != nil {
		t.Fatalf("Commit after space is back: %v %v", res, err)
	}
	if isNew, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "p", EventID: "e", Payload: big}}); err != nil || !isNew[0] {
		t.Fatalf("InsertInbox after space is back: %v %v (the failed insert must not have stored it)", isNew, err)
	}
}

// TestReadOnly: a database that refuses writes surfaces errors on every
// write path, and recovers when writes are allowed again.
func TestReadOnly(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "ro.db"), storetest.Config{})
	ctx := context.Background()
	if _, err := s.w.ExecContext(ctx, `PRAGMA query_only = 1`); err != nil {
		t.Fatal(err)
	}
	unit := actor.Unit{Key: "g", Events: []actor.Event{{Type: "t"}}}
	if _, err := s.Commit(ctx, []actor.Unit{unit}); err == nil {
		t.Fatal("Commit on a read-only database succeeded")
	}
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "p", EventID: "e"}}); err == nil {
		t.Fatal("InsertInbox on a read-only database succeeded")
	}
	for name, err := range map[string]error{
		"AckInbox":  s.AckInbox(ctx, []store.InboxRef{{Provider: "p", EventID: "e"}}),
		"PutRoute":  s.PutRoute(ctx, store.Route{Key: "k", Value: "v"}),
		"Snapshot":  s.SaveSnapshot(ctx, actor.Snapshot{Key: "g", Seq: 1}),
		"Reminder":  s.SetReminder(ctx, actor.Reminder{Key: "g", Name: "n"}),
		"Suppress":  s.AddSuppression(ctx, store.Suppression{Number: "n"}),
		"CreateKey": s.CreateKey(ctx, store.APIKey{ID: "k", Prefix: "p"}),
		"Delete":    s.DeleteGroup(ctx, "g"),
	} {
		if err == nil {
			t.Errorf("%s on a read-only database succeeded", name)
		}
	}
	if _, err := s.TakeShard(ctx, 0, "x"); err == nil {
		t.Error("TakeShard on a read-only database succeeded")
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA query_only = 0`); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Commit(ctx, []actor.Unit{unit}); err != nil || res[0] != nil {
		t.Fatalf("Commit after recovery: %v %v", res, err)
	}
}

// TestCanceledContext: a canceled context fails the call and stores
// nothing.
func TestCanceledContext(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "c.db"), storetest.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Commit(ctx, []actor.Unit{{Key: "g", Events: []actor.Event{{Type: "t"}}}}); err == nil {
		t.Fatal("Commit with a canceled context succeeded")
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM journal`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("journal rows after canceled commit: %d %v", n, err)
	}
}

// ---- benchmarks ----

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkInboxSingle is the naive baseline: one transaction per event.
func BenchmarkInboxSingle(b *testing.B) { storetest.BenchInboxSingle(b, benchStore(b)) }

// BenchmarkInboxBatched inserts events 256 per call from 4 callers.
func BenchmarkInboxBatched(b *testing.B) {
	storetest.BenchInboxBatched(b, benchStore(b), "inbox_batched", 256, 4)
}

// BenchmarkCommitBatched: 500 units per Commit (see storetest).
func BenchmarkCommitBatched(b *testing.B) { storetest.BenchCommitBatched(b, benchStore(b)) }

// TestInboxGroupCommit: calls that arrive while a round is in progress
// share the next round's transaction, and each gets its own answers.
func TestInboxGroupCommit(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "g.db"), storetest.Config{})
	ctx := context.Background()
	// Hold the writer so that the first call's round blocks in BeginTx.
	hold, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const calls = 5
	allQueued := make(chan struct{})
	enqueued := 0
	s.writes.mu.Lock()
	s.writes.queued = func(int) {
		if enqueued++; enqueued == calls {
			close(allQueued)
		}
	}
	s.writes.mu.Unlock()
	type answer struct {
		isNew []bool
		err   error
	}
	answers := make([]answer, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every call carries its own event and the shared "dup" event.
			isNew, err := s.InsertInbox(ctx, []store.InboxEntry{
				{Provider: "p", EventID: fmt.Sprintf("own-%d", i)},
				{Provider: "p", EventID: "dup"},
			})
			answers[i] = answer{isNew, err}
		}()
	}
	// The first round waits for the writer; every call is queued or in it.
	<-allQueued
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	newDup := 0
	for i, a := range answers {
		if a.err != nil || len(a.isNew) != 2 || !a.isNew[0] {
			t.Fatalf("call %d = %+v", i, a)
		}
		if a.isNew[1] {
			newDup++
		}
	}
	if newDup != 1 {
		t.Fatalf("%d calls saw the shared event as new, want 1", newDup)
	}
	s.writes.mu.Lock()
	rounds := s.writes.rounds
	s.writes.mu.Unlock()
	if rounds > 2 {
		t.Fatalf("%d transactions for %d calls, want at most 2 (the first round's, then one for all that queued behind it)", rounds, calls)
	}
}

// BenchmarkInboxConcurrentSingle is the webhook shape: one event per call,
// 32 callers at once, sharing transactions through the group commit.
func BenchmarkInboxConcurrentSingle(b *testing.B) {
	storetest.BenchInboxBatched(b, benchStore(b), "inbox_concurrent_single", 1, 32)
}

// BenchmarkCommitLargeGroup: the commit of a 100,000-recipient group's
// creation (see storetest).
func BenchmarkCommitLargeGroup(b *testing.B) {
	storetest.BenchCommitLargeGroup(b, benchStore(b), 100_000)
}
