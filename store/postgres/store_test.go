package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/storetest"
)

// envURL names the server the tests use; CI always sets it.
const envURL = "CREWCAST_TEST_POSTGRES"

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

func serverURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(envURL)
	if u == "" {
		tb.Skipf("PostgreSQL tests need %s (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it", envURL)
	}
	return u
}

// newSchema creates a fresh schema name for one test and drops the schema
// when the test ends.
func newSchema(tb testing.TB, url string) string {
	tb.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schema := "crewcast_test_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			tb.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			tb.Errorf("drop schema: %v", err)
		}
	})
	return schema
}

func adminExec(t *testing.T, url, q string, args ...any) pgx.Row {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return conn.QueryRow(ctx, q, args...)
}

func openIn(t *testing.T, url, schema string, c storetest.Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{URL: url, Schema: schema, Owner: c.Owner, Leased: c.Leased, Now: c.Now, MaxConns: 4})
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
	url := serverURL(t)
	schema := newSchema(t, url)
	return storetest.DB{
		Open: func(t *testing.T, c storetest.Config) store.Store { return openIn(t, url, schema, c) },
		TamperAudit: func(t *testing.T) error {
			t.Helper()
			var n int
			return adminExec(t, url, `WITH u AS (UPDATE "`+schema+`".audit_log SET action = 'nothing', actor_name = 'someone else'
				RETURNING 1) SELECT count(*) FROM u`).Scan(&n)
		},
		FailAudit: func(t *testing.T, action string) {
			t.Helper()
			if err := adminExec(t, url, `CREATE FUNCTION "`+schema+`".test_fail_audit() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
					IF NEW.action = '`+strings.ReplaceAll(action, "'", "''")+`' THEN
						RAISE EXCEPTION 'audit insert refused by the test';
					END IF;
					RETURN NEW;
				END $$`).Scan(); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
			if err := adminExec(t, url, `CREATE TRIGGER test_fail_audit BEFORE INSERT ON "`+schema+`".audit_log
				FOR EACH ROW EXECUTE FUNCTION "`+schema+`".test_fail_audit()`).Scan(); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
		},
		Corrupt: func(t *testing.T, key string) {
			t.Helper()
			var n int
			err := adminExec(t, url, `WITH u AS (UPDATE "`+schema+`".snapshots SET state = '\x00'::bytea || state
				WHERE key = $1 RETURNING 1) SELECT count(*) FROM u`, key).Scan(&n)
			if err != nil || n != 1 {
				t.Fatalf("corrupt %q: %d rows, %v", key, n, err)
			}
		},
		InboxPayload: func(t *testing.T, provider, eventID string) []byte {
			t.Helper()
			var p []byte
			if err := adminExec(t, url, `SELECT payload FROM "`+schema+`".inbox WHERE provider = $1 AND event_id = $2`,
				provider, eventID).Scan(&p); err != nil {
				t.Fatal(err)
			}
			return p
		},
	}
}

func TestConformance(t *testing.T) {
	serverURL(t)
	storetest.Run(t, storetest.Options{NewDB: newDB})
}

func TestCrash(t *testing.T) {
	// The child reads its database from the environment, not from the
	// parent's flags, so the URL check happens in the parent only.
	storetest.Crash(t, storetest.CrashOptions{
		NewDSN: func(t *testing.T) string {
			url := serverURL(t)
			return newSchema(t, url) + " " + url
		},
		// The application name (the schema) finds the child's backends.
		Open: func(ctx context.Context, dsn string) (store.Store, error) {
			schema, url, _ := strings.Cut(dsn, " ")
			return Open(ctx, Config{URL: withAppName(url, schema), Schema: schema, MaxConns: 2})
		},
		Settle: func(t *testing.T, dsn string) {
			schema, url, _ := strings.Cut(dsn, " ")
			for end := time.Now().Add(30 * time.Second); ; {
				var n int
				if err := adminExec(t, url, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, schema).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					return
				}
				if time.Now().After(end) {
					t.Fatalf("%d sessions of the killed child still open after 30 s", n)
				}
				time.Sleep(20 * time.Millisecond) // the server ends them on its own
			}
		},
	})
}

// withAppName adds application_name=name to a connection URL.
func withAppName(url, name string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "application_name=" + name
}

func TestConfig(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, Config{}); err == nil {
		t.Error("Open without a URL succeeded")
	}
	if _, err := Open(ctx, Config{URL: "postgres://x@127.0.0.1:1/x", Schema: `bad"; DROP`}); err == nil {
		t.Error("Open with an unsafe schema name succeeded")
	}
	if _, err := Open(ctx, Config{URL: "postgres://x@127.0.0.1:1/x?connect_timeout=1"}); err == nil {
		t.Error("Open against a closed port succeeded")
	}
}

// TestSynchronousCommit checks the durability setting the engine promises.
func TestSynchronousCommit(t *testing.T) {
	url := serverURL(t)
	s := openIn(t, url, newSchema(t, url), storetest.Config{})
	var v string
	if err := s.pool.QueryRow(context.Background(), `SHOW synchronous_commit`).Scan(&v); err != nil || v != "on" {
		t.Fatalf("synchronous_commit = %q, %v", v, err)
	}
}

// TestConnectionLoss: a backend terminated under the store fails the
// calls in flight with errors (nothing reports success), and the store
// recovers with new connections.
func TestConnectionLoss(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	// The application name lets the test find this store's backends.
	s := openIn(t, withAppName(url, schema), schema, storetest.Config{})
	ctx := context.Background()
	unit := func(seq uint64) actor.Unit {
		return actor.Unit{Key: "g", ExpectSeq: seq, Events: []actor.Event{{Type: "t"}}}
	}
	if res, err := s.Commit(ctx, []actor.Unit{unit(0)}); err != nil || res[0] != nil {
		t.Fatal(res, err)
	}
	// Kill every backend of this store while a transaction is open.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO routes (key, value, expires_at) VALUES ('k', 'v', 0)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := adminExec(t, url, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no backend terminated")
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("a transaction on a terminated backend committed")
	}
	// Later calls get fresh connections. A call may fail on a dead pooled
	// connection, but only with an error, never with a false success.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := s.Commit(ctx, []actor.Unit{unit(1)})
		if err == nil {
			if res[0] != nil {
				t.Fatalf("commit after reconnect: %v", res[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not recover: %v", err)
		}
	}
	var events int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM journal WHERE key = 'g'`).Scan(&events); err != nil || events != 2 {
		t.Fatalf("journal has %d events, %v; want 2", events, err)
	}
	if _, err := s.GetRoute(ctx, "k"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("write of the killed transaction visible: %v", err)
	}
}

// ---- benchmarks ----

func benchStore(b *testing.B) *Store {
	b.Helper()
	url := serverURL(b)
	s, err := Open(context.Background(), Config{URL: url, Schema: newSchema(b, url), MaxConns: 8})
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

// TestCommitRaces stages what the prefetch cannot see: another writer adds
// an idempotency key and a journal event after the prefetch and before the
// unit batch. The units that hit them fail alone (rolled back to their
// savepoints), the units after them are replanned, and the rest commit.
func TestCommitRaces(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	s := openIn(t, url, schema, storetest.Config{})
	ctx := context.Background()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	s.afterPrefetch = func() {
		for _, q := range []string{
			`INSERT INTO "` + schema + `".idempotency_keys (key, request_hash, group_id, created_at) VALUES ('race', 'h', 'x', 1)`,
			`INSERT INTO "` + schema + `".journal (key, seq, type, data, time) VALUES ('k-race', 1, 'other', '', 1)`,
		} {
			if _, err := other.Exec(ctx, q); err != nil {
				t.Error(err)
			}
		}
	}
	ev := func(n string) []actor.Event { return []actor.Event{{Type: "t", Data: []byte(n)}} }
	res, err := s.Commit(ctx, []actor.Unit{
		{Key: "a", Events: ev("a1")},
		{Key: "b", Events: ev("b1"), Effects: []any{store.Effects{Group: &store.GroupRow{ID: "b"},
			Idempotency: &store.IdempotencyKey{Key: "race", GroupID: "b"}}}},
		{Key: "a", ExpectSeq: 1, Events: ev("a2")},
		{Key: "k-race", Events: ev("k1"), Effects: []any{store.Effects{Group: &store.GroupRow{ID: "k-race"}}}},
		{Key: "k-race", ExpectSeq: 1, Events: ev("k2")},
		{Key: "c", Events: ev("c1"), Effects: []any{store.Effects{Idempotency: &store.IdempotencyKey{Key: "fresh", GroupID: "c"}}}},
	})
	s.afterPrefetch = nil
	if err != nil {
		t.Fatal(err)
	}
	var ce *actor.ConflictError
	if res[0] != nil || !errors.Is(res[1], store.ErrIdempotencyConflict) || res[2] != nil ||
		!errors.As(res[3], &ce) || res[5] != nil {
		t.Fatalf("results = %v", res)
	}
	if ce.Actual != 1 || ce.Expected != 0 {
		t.Fatalf("conflict = %+v, want actual 1 (the other writer's event)", ce)
	}
	// Unit 4 expected unit 3's head (1), which the other writer's event
	// happens to match: it is a legitimate append after seq 1.
	if res[4] != nil {
		t.Fatalf("unit 4: %v", res[4])
	}
	count := func(q string) int {
		var n int
		if err := s.pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM journal WHERE key = 'a'`); n != 2 {
		t.Fatalf("a has %d events", n)
	}
	if n := count(`SELECT count(*) FROM journal WHERE key = 'b'`) + count(`SELECT count(*) FROM groups WHERE id IN ('b', 'k-race')`); n != 0 {
		t.Fatalf("failed units left %d rows", n)
	}
	if n := count(`SELECT count(*) FROM journal WHERE key = 'k-race' AND type = 't'`); n != 1 {
		t.Fatalf("k-race has %d of our events, want 1 (unit 4)", n)
	}
	if k, err := s.GetIdempotency(ctx, "fresh"); err != nil || k.GroupID != "c" {
		t.Fatalf("unit after the failures: %+v %v", k, err)
	}
}

// TestStampIsTheCheckedEpoch stages a node fencing itself (DropShards)
// after its commit checked and locked the lease and before the events are
// written: the commit is valid at the epoch it checked and must record
// that epoch, not the 0 the store holds from then on (the stale writes T8
// once counted). Failed on the old code: the stamp was read again when
// the events were queued.
func TestStampIsTheCheckedEpoch(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	s := openIn(t, url, schema, storetest.Config{Owner: "node-a", Leased: true})
	ctx := context.Background()
	ev := func(n string) []actor.Event { return []actor.Event{{Type: "t", Data: []byte(n)}} }
	for _, bulk := range []bool{true, false} {
		key := fmt.Sprintf("drop-%v", bulk)
		sh := store.ShardOf(key)
		got, err := s.AcquireShards(ctx, "node-a", []int{sh}, time.Minute)
		if err != nil || len(got) != 1 {
			t.Fatalf("acquire: %+v %v", got, err)
		}
		s.afterPrefetch = func() { s.DropShards([]int{sh}) }
		units := []actor.Unit{{Key: key, Events: ev("1")}}
		if !bulk {
			// An idempotency key another writer adds after the prefetch
			// fails the bulk statement, so the units go one by one.
			s.afterPrefetch = func() {
				s.DropShards([]int{sh})
				if _, err := s.pool.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, group_id, created_at)
					VALUES ('race', 'h', 'x', 1)`); err != nil {
					t.Error(err)
				}
			}
			units = append(units, actor.Unit{Key: key, ExpectSeq: 1, Events: ev("2"),
				Effects: []any{store.Effects{Idempotency: &store.IdempotencyKey{Key: "race", GroupID: "y"}}}})
		}
		res, err := s.Commit(ctx, units)
		s.afterPrefetch = nil
		if err != nil || res[0] != nil || (!bulk && !errors.Is(res[1], store.ErrIdempotencyConflict)) {
			t.Fatalf("bulk %v: commit = %v %v", bulk, res, err)
		}
		stamps, err := s.JournalStamps(ctx, key)
		if err != nil || len(stamps) != 1 {
			t.Fatalf("bulk %v: stamps = %+v %v", bulk, stamps, err)
		}
		if stamps[0].Epoch != got[0].Epoch || stamps[0].Node != "node-a" {
			t.Fatalf("bulk %v: stamped epoch %d by %q; the commit checked epoch %d", bulk, stamps[0].Epoch, stamps[0].Node, got[0].Epoch)
		}
	}
}

// TestPausedCommitDoesNotHoldTheLease stages a node paused (SIGSTOP, T8)
// in the middle of a commit, its lease row locked FOR SHARE: once the lease
// expired, another node takes the shard within IdleInTxLimit (PostgreSQL
// ends the idle transaction) instead of waiting for the paused node to
// resume, and the paused commit writes nothing. Without the limit the
// takeover waits for the pause to end.
func TestPausedCommitDoesNotHoldTheLease(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	a, err := Open(ctx, Config{URL: url, Schema: schema, Owner: "node-a", Leased: true, MaxConns: 4, IdleInTxLimit: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b := openIn(t, url, schema, storetest.Config{Owner: "node-b", Leased: true})
	key := "paused"
	sh := store.ShardOf(key)
	const ttl = 500 * time.Millisecond
	if got, err := a.AcquireShards(ctx, "node-a", []int{sh}, ttl); err != nil || len(got) != 1 {
		t.Fatalf("acquire: %+v %v", got, err)
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	a.afterPrefetch = func() { close(paused); <-resume }
	type result struct {
		res []error
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := a.Commit(ctx, []actor.Unit{{Key: key, Events: []actor.Event{{Type: "t", Data: []byte("late")}}}})
		done <- result{res, err}
	}()
	<-paused
	resumed := false
	defer func() {
		if !resumed {
			close(resume)
			<-done
		}
	}()
	began := time.Now()
	var took time.Duration
	for {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		got, err := b.AcquireShards(actx, "node-b", []int{sh}, time.Minute)
		cancel()
		if err == nil && len(got) == 1 {
			if got[0].Epoch != 2 {
				t.Fatalf("taken at epoch %d, want 2", got[0].Epoch)
			}
			took = time.Since(began)
			break
		}
		if time.Since(began) > 4*time.Second {
			t.Fatalf("the shard of a commit paused for %s is still not taken (last: %+v %v)", time.Since(began), got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("taken %s after the pause began (lease TTL %s, idle limit 300ms)", took, ttl)
	close(resume)
	resumed = true
	r := <-done
	if r.err == nil && r.res[0] == nil {
		t.Fatal("the paused commit succeeded after its shard was taken")
	}
	if n, err := b.JournalStamps(ctx, key); err != nil || len(n) != 0 {
		t.Fatalf("journal of %s after the paused commit: %+v %v", key, n, err)
	}
}

// pauseCommit starts a commit of key on s that stops after its lease check
// (the lease row locked) until the returned resume is called; resume
// waits for the commit and returns its outcome.
func pauseCommit(t *testing.T, s *Store, key string) (resume func() error) {
	t.Helper()
	paused, release := make(chan struct{}), make(chan struct{})
	s.afterPrefetch = func() { close(paused); <-release }
	done := make(chan error, 1)
	go func() {
		res, err := s.Commit(context.Background(), []actor.Unit{{Key: key, Events: []actor.Event{{Type: "t", Data: []byte("x")}}}})
		if err == nil {
			err = res[0]
		}
		done <- err
	}()
	<-paused
	s.afterPrefetch = nil
	var once sync.Once
	var err error
	resume = func() error {
		once.Do(func() { close(release); err = <-done })
		return err
	}
	t.Cleanup(func() { _ = resume() })
	return resume
}

// A lease renewal does not wait for the holder's own commits in flight:
// it only moves the expiry, which a commit's lease check does not lock
// against (FOR KEY SHARE). It used to queue behind them (FOR SHARE), and
// under load a renewal behind a slow commit timed out, and the node
// fenced itself with its leases still good (T8 logs, load average 13).
func TestRenewalDoesNotWaitForCommits(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	a := openIn(t, url, schema, storetest.Config{Owner: "node-a", Leased: true})
	key := "renewed"
	sh := store.ShardOf(key)
	if got, err := a.AcquireShards(ctx, "node-a", []int{sh}, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("acquire: %+v %v", got, err)
	}
	resume := pauseCommit(t, a, key)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	renewed, err := a.RenewShards(rctx, "node-a", time.Minute)
	cancel()
	if err != nil || len(renewed) != 1 {
		t.Errorf("renewal while a commit is in flight: %+v %v", renewed, err)
	}
	if err := resume(); err != nil {
		t.Fatalf("the commit after the renewal: %v", err)
	}
}

// A takeover still waits for a commit in flight under the old epoch (or
// the commit is fenced): a commit and a takeover never both succeed for
// the same epoch. The commit's lease check no longer blocks renewals
// (FOR KEY SHARE), so TakeShard locks the lease row FOR UPDATE itself.
func TestTakeShardWaitsForACommitInFlight(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	a := openIn(t, url, schema, storetest.Config{Owner: "node-a", Leased: true})
	b := openIn(t, url, schema, storetest.Config{Owner: "node-b", Leased: true})
	key := "taken"
	sh := store.ShardOf(key)
	if got, err := a.AcquireShards(ctx, "node-a", []int{sh}, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("acquire: %+v %v", got, err)
	}
	resume := pauseCommit(t, a, key)
	took := make(chan error, 1)
	go func() {
		_, err := b.TakeShard(ctx, sh, "node-b")
		took <- err
	}()
	select {
	case err := <-took:
		t.Fatalf("TakeShard returned (%v) while a commit under the old epoch was in flight", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := resume(); err != nil {
		t.Fatalf("the commit that began before the takeover: %v", err)
	}
	if err := <-took; err != nil {
		t.Fatal(err)
	}
	stamps, err := b.JournalStamps(ctx, key)
	if err != nil || len(stamps) != 1 || stamps[0].Epoch != 1 {
		t.Fatalf("journal of %s: %+v %v", key, stamps, err)
	}
	res, err := a.Commit(ctx, []actor.Unit{{Key: key, ExpectSeq: 1, Events: []actor.Event{{Type: "t", Data: []byte("late")}}}})
	if err != nil || !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("a commit of the old owner after the takeover: %v %v, want fenced", res, err)
	}
}

// BenchmarkCommitLargeGroup: the commit of a 100,000-recipient group's
// creation (see storetest).
func BenchmarkCommitLargeGroup(b *testing.B) {
	storetest.BenchCommitLargeGroup(b, benchStore(b), 100_000)
}

// A store instance's own lease writes never deadlock each other: a
// release (one UPDATE per shard, in one transaction) and a renewal (one
// UPDATE of every held row, in the table's physical order) running at
// once locked the same rows in different orders, and PostgreSQL aborted
// one after deadlock_timeout (T8: a leaving node's release failed after
// 1 s, and its shards waited for their leases to expire).
func TestOwnLeaseWritesDoNotDeadlock(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	a := openIn(t, url, schema, storetest.Config{Owner: "node-a", Leased: true})
	shards := make([]int, 32)
	for i := range shards {
		shards[i] = i
	}
	deadline := time.Now().Add(3 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		if got, err := a.AcquireShards(ctx, "node-a", shards, time.Minute); err != nil || len(got) != len(shards) {
			t.Fatalf("round %d: acquire: %d leases, %v", round, len(got), err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := a.RenewShards(ctx, "node-a", time.Minute)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			// Release in descending order, half of them: the renewal
			// locks in the heap's order.
			rel := slices.Clone(shards[round%2:])
			slices.Reverse(rel)
			errs <- a.ReleaseShards(ctx, "node-a", rel)
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if err := a.ReleaseShards(ctx, "node-a", shards); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaseWritesDoNotQueueBehindThePool holds every connection of the
// store's pool (as commits and webhook inserts do under load) while the
// keeper heartbeats, renews, reads the leases, acquires and releases: each answers within
// the keeper's TTL/3 bound. Failed while the lease writes shared the pool:
// they waited for a free connection until their context ended, and a node
// that cannot renew within TTL/3 fences itself (the long T8 run's 49th
// hand-off failed that way under accumulated load).
func TestLeaseWritesDoNotQueueBehindThePool(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	s, err := Open(ctx, Config{URL: url, Schema: schema, Owner: "node-a", Leased: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const ttl = 3 * time.Second
	if got, err := s.AcquireShards(ctx, "node-a", []int{1, 2}, ttl); err != nil || len(got) != 2 {
		t.Fatalf("acquire: %+v %v", got, err)
	}
	var held []*pgxpool.Conn
	for range 2 {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, ttl/3) }
	c1, cancel := bounded()
	defer cancel()
	if _, err := s.Heartbeat(c1, "node-a", "http://a", ttl); err != nil {
		t.Fatalf("heartbeat with the pool busy: %v", err)
	}
	c2, cancel := bounded()
	defer cancel()
	if got, err := s.RenewShards(c2, "node-a", ttl); err != nil || len(got) != 2 {
		t.Fatalf("renewal with the pool busy: %+v %v", got, err)
	}
	c6, cancel := bounded()
	defer cancel()
	if got, err := s.KeeperLeases(c6); err != nil || len(got) != 2 {
		t.Fatalf("the keeper's lease read with the pool busy: %+v %v", got, err)
	}
	c3, cancel := bounded()
	defer cancel()
	if got, err := s.AcquireShards(c3, "node-a", []int{3}, ttl); err != nil || len(got) != 1 {
		t.Fatalf("acquisition with the pool busy: %+v %v", got, err)
	}
	c4, cancel := bounded()
	defer cancel()
	if err := s.ReleaseShards(c4, "node-a", []int{3}); err != nil {
		t.Fatalf("release with the pool busy: %v", err)
	}
	c5, cancel := bounded()
	defer cancel()
	if err := s.Leave(c5, "node-a"); err != nil {
		t.Fatalf("leave with the pool busy: %v", err)
	}
}

// A renewal never waits for an acquisition of the same store instance: an
// acquisition can wait in the database (here on another session's
// uncommitted insert of the shard it asks for; under load, on its
// statements), and a renewal queued behind it for longer than the lease's
// safe span makes the node fence itself. Failed while every lease write of
// an instance took one lock (lockWrites): the renewal waited for the
// acquisition to end (the long T8 run fenced nodes that way, renewals fast
// but late).
func TestRenewalDoesNotWaitForAnAcquisition(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	ctx := context.Background()
	s := openIn(t, url, schema, storetest.Config{Owner: "node-a", Leased: true})
	const ttl = 3 * time.Second
	if got, err := s.AcquireShards(ctx, "node-a", []int{1, 2}, ttl); err != nil || len(got) != 2 {
		t.Fatalf("acquire: %+v %v", got, err)
	}
	other, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Rollback(ctx) }()
	if _, err := other.Exec(ctx, `INSERT INTO shard_leases (shard, owner, epoch, expires_at) VALUES (5, 'node-x', 1, 0)`); err != nil {
		t.Fatal(err)
	}
	var otherPID int
	if err := other.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&otherPID); err != nil {
		t.Fatal(err)
	}
	acquired := make(chan []store.Lease, 1)
	go func() {
		actx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		got, err := s.AcquireShards(actx, "node-a", []int{5}, ttl)
		if err != nil {
			t.Errorf("acquire behind the insert: %v", err)
		}
		acquired <- got
	}()
	// The acquisition waits on the insert: a session of the store is
	// blocked by the other session (pg_blocking_pids), before it returns.
	for deadline := time.Now().Add(20 * time.Second); ; {
		var blocked int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))`,
			otherPID).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		if blocked > 0 {
			break
		}
		select {
		case got := <-acquired:
			t.Fatalf("the acquisition did not wait for the other session: %+v", got)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no session of the store waits on the other session's insert")
		}
		time.Sleep(5 * time.Millisecond)
	}
	renewed := make(chan error, 1)
	go func() {
		rctx, cancel := context.WithTimeout(ctx, ttl/3)
		defer cancel()
		got, err := s.RenewShards(rctx, "node-a", ttl)
		if err == nil && len(got) != 2 {
			err = fmt.Errorf("renewed %+v, want shards 1 and 2", got)
		}
		renewed <- err
	}()
	waited := false
	select {
	case err := <-renewed:
		if err != nil {
			t.Errorf("renewal during an acquisition: %v", err)
		}
	case <-time.After(ttl):
		t.Errorf("the renewal waited %s for an acquisition in progress", ttl)
		waited = true
	}
	if err := other.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := <-acquired; len(got) != 1 || got[0].Shard != 5 || got[0].Owner != "node-a" {
		t.Errorf("after the other session rolled back, acquired %+v; want shard 5", got)
	}
	if waited {
		<-renewed
	}
}
