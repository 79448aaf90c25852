package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Expiring leases (several nodes, docs/design.md §9): expiry on the database
// clock, renewal, release, and the commit's check serialised against
// takeovers.

// leaseTTL is long enough for a statement on a loaded test machine and
// short enough to wait out.
const leaseTTL = 1500 * time.Millisecond

func expiring(t *testing.T, s store.Store) store.ExpiringLeases {
	t.Helper()
	x, ok := s.(store.ExpiringLeases)
	if !ok {
		t.Fatalf("%T has no expiring leases", s)
	}
	return x
}

func allShards() []int {
	out := make([]int, store.NumShards)
	for i := range out {
		out[i] = i
	}
	return out
}

// skewed is a node clock off by d from the real one: expiry must not
// depend on it (T9).
func skewed(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

func acquire(t *testing.T, s store.Store, owner string, shards []int) []store.Lease {
	t.Helper()
	got, err := expiring(t, s).AcquireShards(context.Background(), owner, shards, leaseTTL)
	if err != nil {
		t.Fatalf("AcquireShards(%s): %v", owner, err)
	}
	return got
}

func testLeaseExpiryTakeover(t *testing.T, o Options) {
	db := o.NewDB(t)
	// a's clock runs an hour ahead, b's an hour behind: the database
	// clock alone decides (T9).
	a := db.Open(t, Config{Owner: "node-a", Leased: true, Now: skewed(time.Hour)})
	b := db.Open(t, Config{Owner: "node-b", Leased: true, Now: skewed(-time.Hour)})
	key := keysOnDistinctShards("x", 1)[0]
	sh := store.ShardOf(key)

	// A leased store holds nothing until it acquires.
	if res := commit(t, a, actor.Unit{Key: key, Events: events("none", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("commit before acquiring: %v, want ErrFenced", res[0])
	}
	before := time.Now()
	got := acquire(t, a, "node-a", allShards())
	if len(got) != store.NumShards {
		t.Fatalf("a acquired %d shards, want %d", len(got), store.NumShards)
	}
	for _, l := range got {
		if l.Owner != "node-a" || l.Epoch != 1 {
			t.Fatalf("lease %+v, want node-a at epoch 1", l)
		}
		// Expiry is the database clock plus the TTL, not a's clock (an
		// hour ahead).
		if l.ExpiresAt.Before(before.Add(leaseTTL-time.Second)) || l.ExpiresAt.After(time.Now().Add(leaseTTL+time.Second)) {
			t.Fatalf("lease of shard %d expires at %s, want about %s from now", l.Shard, l.ExpiresAt, leaseTTL)
		}
	}
	commitOK(t, a, actor.Unit{Key: key, Events: events("a1", 1)})
	// b, an hour behind, sees a live lease and takes nothing.
	if got := acquire(t, b, "node-b", allShards()); len(got) != 0 {
		t.Fatalf("b took %d live leases: %+v", len(got), got)
	}
	if res := commit(t, b, actor.Unit{Key: key, ExpectSeq: 1, Events: events("b-early", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("b's commit without a lease: %v", res[0])
	}
	// a's own second acquire leaves its live lease alone.
	if got := acquire(t, a, "node-a", []int{sh}); len(got) != 0 {
		t.Fatalf("re-acquiring a live lease: %+v", got)
	}

	// Nobody renews: past expiry a's commit is refused even before anyone
	// takes the shard (a paused owner writes nothing once its lease lapsed).
	time.Sleep(leaseTTL + 200*time.Millisecond)
	if res := commit(t, a, actor.Unit{Key: key, ExpectSeq: 1, Events: events("a-late", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("commit after expiry: %v, want ErrFenced", res[0])
	}
	got = acquire(t, b, "node-b", []int{sh})
	if len(got) != 1 || got[0].Epoch != 2 || got[0].Owner != "node-b" {
		t.Fatalf("takeover after expiry = %+v, want node-b at epoch 2", got)
	}
	commitOK(t, b, actor.Unit{Key: key, ExpectSeq: 1, Events: events("b1", 1)})
	// The stale owner: renewal drops the lost shard, its commits stay refused.
	renewed, err := expiring(t, a).RenewShards(context.Background(), "node-a", leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range renewed {
		if l.Shard == sh {
			t.Fatalf("a renewed a lease it lost: %+v", l)
		}
	}
	if len(renewed) != 0 {
		t.Fatalf("a renewed %d expired leases", len(renewed))
	}
	if res := commit(t, a, actor.Unit{Key: key, ExpectSeq: 2, Events: events("a-stale", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("stale epoch commit: %v, want ErrFenced", res[0])
	}
	wantSeqs(t, b, key, 2)
	leases, err := b.ListLeases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l := leases[sh]; l.Owner != "node-b" || l.Epoch != 2 || l.ExpiresAt.IsZero() {
		t.Fatalf("listed lease %+v", l)
	}
}

// One acquisition of shards in every state: nobody's (inserted at epoch
// 1), released (taken at the next epoch), live (left alone), asked twice
// and out of order (taken once). It is two statements whatever the count.
func testLeaseAcquireMixed(t *testing.T, o Options) {
	db := o.NewDB(t)
	a := db.Open(t, Config{Owner: "node-a", Leased: true})
	b := db.Open(t, Config{Owner: "node-b", Leased: true})
	if got := acquire(t, a, "node-a", []int{0, 1, 2}); len(got) != 3 {
		t.Fatalf("a acquired %+v", got)
	}
	if err := expiring(t, a).ReleaseShards(context.Background(), "node-a", []int{1}); err != nil {
		t.Fatal(err)
	}
	got := acquire(t, b, "node-b", []int{4, 2, 1, 3, 1})
	want := []store.Lease{{Shard: 1, Owner: "node-b", Epoch: 2}, {Shard: 3, Owner: "node-b", Epoch: 1}, {Shard: 4, Owner: "node-b", Epoch: 1}}
	if len(got) != len(want) {
		t.Fatalf("b acquired %+v, want shards 1 (epoch 2), 3 and 4", got)
	}
	for i, l := range got {
		if l.Shard != want[i].Shard || l.Owner != want[i].Owner || l.Epoch != want[i].Epoch || l.ExpiresAt.IsZero() {
			t.Fatalf("b acquired %+v, want shards 1 (epoch 2), 3 and 4", got)
		}
	}
	for _, key := range keysOnDistinctShards("m", 64) {
		switch store.ShardOf(key) {
		case 1, 3:
			commitOK(t, b, actor.Unit{Key: key, Events: events("b", 1)})
		case 2:
			commitOK(t, a, actor.Unit{Key: key, Events: events("a", 1)})
			if res := commit(t, b, actor.Unit{Key: key, ExpectSeq: 1, Events: events("b", 1)}); !errors.Is(res[0], actor.ErrFenced) {
				t.Fatalf("b committed in a's live shard: %v", res[0])
			}
		}
	}
}

func testLeaseRenewal(t *testing.T, o Options) {
	db := o.NewDB(t)
	a := db.Open(t, Config{Owner: "node-a", Leased: true, Now: skewed(-time.Hour)})
	b := db.Open(t, Config{Owner: "node-b", Leased: true, Now: skewed(time.Hour)})
	key := keysOnDistinctShards("r", 1)[0]
	sh := store.ShardOf(key)
	if got := acquire(t, a, "node-a", []int{sh}); len(got) != 1 {
		t.Fatalf("acquire = %+v", got)
	}
	// Renewing every third of the TTL keeps the lease past several TTLs.
	end := time.Now().Add(2*leaseTTL + 300*time.Millisecond)
	seq := uint64(0)
	for time.Now().Before(end) {
		time.Sleep(leaseTTL / 3)
		renewed, err := expiring(t, a).RenewShards(context.Background(), "node-a", leaseTTL)
		if err != nil {
			t.Fatal(err)
		}
		if len(renewed) != 1 || renewed[0].Shard != sh || renewed[0].Epoch != 1 {
			t.Fatalf("renewed %+v", renewed)
		}
		if got := acquire(t, b, "node-b", []int{sh}); len(got) != 0 {
			t.Fatalf("b took a renewed lease: %+v", got)
		}
		commitOK(t, a, actor.Unit{Key: key, ExpectSeq: seq, Events: events("a", 1)})
		seq++
	}
	// Dropping locally fences this instance's commits without a write.
	expiring(t, a).DropShards([]int{sh})
	if res := commit(t, a, actor.Unit{Key: key, ExpectSeq: seq, Events: events("dropped", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("commit after DropShards: %v", res[0])
	}
	if got := acquire(t, b, "node-b", []int{sh}); len(got) != 0 {
		t.Fatalf("a dropped lease is still live in the database, b took it: %+v", got)
	}
	// The release writes the held epoch back, so re-acquire first (the
	// lease is a's and live: a takes it back only after expiry).
	time.Sleep(leaseTTL + 200*time.Millisecond)
	if got := acquire(t, a, "node-a", []int{sh}); len(got) != 1 || got[0].Epoch != 2 {
		t.Fatalf("re-acquire after expiry = %+v, want epoch 2", got)
	}
	// A graceful release: the lease is free at once, at the next epoch.
	if err := expiring(t, a).ReleaseShards(context.Background(), "node-a", []int{sh}); err != nil {
		t.Fatal(err)
	}
	if res := commit(t, a, actor.Unit{Key: key, ExpectSeq: seq, Events: events("after-release", 1)}); !errors.Is(res[0], actor.ErrFenced) {
		t.Fatalf("commit after release: %v", res[0])
	}
	got := acquire(t, b, "node-b", []int{sh})
	if len(got) != 1 || got[0].Epoch != 3 {
		t.Fatalf("acquire after release = %+v, want epoch 3", got)
	}
	commitOK(t, b, actor.Unit{Key: key, ExpectSeq: seq, Events: events("b", 1)})
	if _, err := expiring(t, a).AcquireShards(context.Background(), "node-a", []int{store.NumShards}, leaseTTL); err == nil {
		t.Fatal("acquire out of range succeeded")
	}
	if _, err := expiring(t, a).AcquireShards(context.Background(), "node-a", []int{sh}, 0); err == nil {
		t.Fatal("acquire with no ttl succeeded")
	}
}

// Commits racing a takeover: every commit that succeeded is in the
// journal, and none that began after the takeover returned succeeded.
func testLeaseCommitVersusTakeover(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	for round := range 5 {
		a := db.Open(t, Config{Owner: "node-a", Leased: true})
		b := db.Open(t, Config{Owner: "node-b", Leased: true})
		key := keysOnDistinctShards("race"+string(rune('a'+round)), 1)[0]
		sh := store.ShardOf(key)
		if got := acquire(t, a, "node-a", []int{sh}); len(got) != 1 {
			t.Fatalf("acquire = %+v", got)
		}
		var taken atomic.Bool
		var okAfter, ok atomic.Int64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq := uint64(0)
			for range 200 {
				after := taken.Load()
				res, err := a.Commit(ctx, []actor.Unit{{Key: key, ExpectSeq: seq, Events: events("a", 1)}})
				if err != nil {
					t.Error(err)
					return
				}
				if res[0] == nil {
					seq++
					ok.Add(1)
					if after {
						okAfter.Add(1)
					}
					continue
				}
				if !errors.Is(res[0], actor.ErrFenced) {
					t.Errorf("commit: %v", res[0])
				}
				return
			}
		}()
		time.Sleep(time.Duration(round*7) * time.Millisecond)
		if _, err := b.TakeShard(ctx, sh, "node-b"); err != nil {
			t.Fatal(err)
		}
		taken.Store(true)
		wg.Wait()
		if okAfter.Load() != 0 {
			t.Fatalf("round %d: %d commits of the old owner began after the takeover and succeeded", round, okAfter.Load())
		}
		wantSeqs(t, b, key, int(ok.Load()))
	}
}

// Every event records the epoch and node that committed it, on both
// commit paths (one unit, and a batch), and a takeover shows as a higher
// epoch by the new node: the audit of docs/design.md §9.
func testJournalStamps(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	a := db.Open(t, Config{Owner: "node-a"})
	b := db.Open(t, Config{Owner: "node-b"})
	keys := keysOnDistinctShards("stamp", 2)
	k1, k2 := keys[0], keys[1]
	commitOK(t, a, actor.Unit{Key: k1, Events: events("a", 2)})
	commitOK(t, a, actor.Unit{Key: k1, ExpectSeq: 2, Events: events("a", 1)}, actor.Unit{Key: k2, Events: events("a", 1)})
	if _, err := b.TakeShard(ctx, store.ShardOf(k1), "node-b"); err != nil {
		t.Fatal(err)
	}
	commitOK(t, b, actor.Unit{Key: k1, ExpectSeq: 3, Events: events("b", 2)}, actor.Unit{Key: k1, ExpectSeq: 5, Events: events("b", 1)})
	stamps, err := a.(store.JournalAudit).JournalStamps(ctx, k1)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		epoch uint64
		node  string
	}{{1, "node-a"}, {1, "node-a"}, {1, "node-a"}, {2, "node-b"}, {2, "node-b"}, {2, "node-b"}}
	if len(stamps) != len(want) {
		t.Fatalf("%d stamps, want %d: %+v", len(stamps), len(want), stamps)
	}
	for i, s := range stamps {
		if s.Seq != uint64(i+1) || s.Epoch != want[i].epoch || s.Node != want[i].node || s.Type != "test.event" || s.At.IsZero() {
			t.Fatalf("stamp %d = %+v, want seq %d epoch %d node %s", i, s, i+1, want[i].epoch, want[i].node)
		}
	}
	if s2, err := b.(store.JournalAudit).JournalStamps(ctx, k2); err != nil || len(s2) != 1 || s2[0].Epoch != 1 || s2[0].Node != "node-a" {
		t.Fatalf("stamps of %s = %+v, %v", k2, s2, err)
	}
}

// Commits racing a release of their own lease (a hand-off, or a node
// that fences itself): a commit that passed its lease check before the
// release records the epoch it checked, never the 0 (or any other value)
// the store holds once released. T8 once counted such events as stale
// writes: a stamp read after the check instead of the epoch checked.
func testJournalStampsVersusRelease(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	a := db.Open(t, Config{Owner: "node-a", Leased: true})
	key := keysOnDistinctShards("release", 1)[0]
	sh := store.ShardOf(key)
	var want []uint64 // the epoch of each committed event, in seq order
	seq := uint64(0)
	for round := range 30 {
		got := acquire(t, a, "node-a", []int{sh})
		if len(got) != 1 {
			t.Fatalf("round %d: acquire = %+v", round, got)
		}
		epoch := got[0].Epoch
		var n atomic.Int64
		done := make(chan error, 1)
		go func() {
			s := seq
			for range 2000 {
				res, err := a.Commit(ctx, []actor.Unit{{Key: key, ExpectSeq: s, Events: events("a", 1)}})
				if err != nil {
					done <- err
					return
				}
				if errors.Is(res[0], actor.ErrFenced) {
					done <- nil
					return
				}
				if res[0] != nil {
					done <- res[0]
					return
				}
				s++
				n.Add(1)
			}
			done <- errors.New("never fenced")
		}()
		for n.Load() < 3 { // commits in flight when released
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Duration(round%7) * 150 * time.Microsecond) // at varied points of a commit
		if err := expiring(t, a).ReleaseShards(ctx, "node-a", []int{sh}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for range n.Load() {
			want = append(want, epoch)
		}
		seq += uint64(n.Load())
	}
	stamps, err := a.(store.JournalAudit).JournalStamps(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(stamps) != len(want) {
		t.Fatalf("%d stamps, want %d", len(stamps), len(want))
	}
	bad := 0
	for i, s := range stamps {
		if s.Epoch != want[i] || s.Node != "node-a" {
			if bad < 5 {
				t.Errorf("seq %d: stamped epoch %d by %q, committed under epoch %d by node-a", s.Seq, s.Epoch, s.Node, want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d events stamped with an epoch other than the one their commit checked", bad, len(stamps))
	}
}

// Membership: heartbeats on the database clock (node clocks skewed), a
// node that stops heartbeating is dead after the TTL, Leave removes it.
func testMembership(t *testing.T, o Options) {
	db := o.NewDB(t)
	ctx := context.Background()
	a := db.Open(t, Config{Owner: "n-a", Leased: true, Now: skewed(time.Hour)}).(store.Membership)
	b := db.Open(t, Config{Owner: "n-b", Leased: true, Now: skewed(-time.Hour)}).(store.Membership)
	if _, err := a.Heartbeat(ctx, "n-a", "http://a", leaseTTL); err != nil {
		t.Fatal(err)
	}
	nodes, err := b.Heartbeat(ctx, "n-b", "http://b", leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Node{{ID: "n-a", AdvertiseURL: "http://a", Alive: true}, {ID: "n-b", AdvertiseURL: "http://b", Alive: true}}
	if len(nodes) != 2 || nodes[0] != want[0] || nodes[1] != want[1] {
		t.Fatalf("nodes %+v, want %+v", nodes, want)
	}
	time.Sleep(leaseTTL + 200*time.Millisecond)
	nodes, err = b.Heartbeat(ctx, "n-b", "http://b2", leaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	want = []store.Node{{ID: "n-a", AdvertiseURL: "http://a", Alive: false}, {ID: "n-b", AdvertiseURL: "http://b2", Alive: true}}
	if len(nodes) != 2 || nodes[0] != want[0] || nodes[1] != want[1] {
		t.Fatalf("after a's silence: %+v, want %+v", nodes, want)
	}
	if err := a.Leave(ctx, "n-a"); err != nil {
		t.Fatal(err)
	}
	nodes, err = b.Heartbeat(ctx, "n-b", "http://b2", leaseTTL)
	if err != nil || len(nodes) != 1 || nodes[0].ID != "n-b" {
		t.Fatalf("after leave: %+v, %v", nodes, err)
	}
}
