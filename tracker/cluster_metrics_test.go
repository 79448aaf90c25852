package tracker

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
)

// leaseCounter records LeaseLost calls (the Prometheus exporter's view).
type leaseCounter struct {
	NopMetrics
	mu   sync.Mutex
	lost map[string]int
}

func (m *leaseCounter) LeaseLost(reason string, shards int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lost[reason] += shards
}

func (m *leaseCounter) get(reason string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost[reason]
}

// stealable makes renewals report one shard as no longer ours, as when its
// lease expired on the database clock and another node took it.
type stealable struct {
	*partitionable
	stolen atomic.Int32 // shard+1; 0: none
}

func (s *stealable) RenewShards(ctx context.Context, owner string, ttl time.Duration) ([]store.Lease, error) {
	ls, err := s.partitionable.RenewShards(ctx, owner, ttl)
	if sh := int(s.stolen.Load()) - 1; sh >= 0 {
		kept := ls[:0]
		for _, l := range ls {
			if l.Shard != sh {
				kept = append(kept, l)
			}
		}
		ls = kept
	}
	return ls, err
}

// meteredNode starts a tracker on a leased PostgreSQL store of its own
// schema, counting lost leases; the caller starts its cluster.
func meteredNode(t *testing.T, node string) (*postgres.Store, *Tracker, *leaseCounter) {
	t.Helper()
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema, Owner: node, Leased: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m := &leaseCounter{lost: map[string]int{}}
	tr, err := New(Config{Store: st, Provider: h.provider, SweepInterval: 300 * time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, tr, m
}

// The keeper counts lost leases for the lease-loss alert: a shard a
// renewal no longer finds as taken_over, every held shard when the node
// fences itself as fenced; a graceful stop counts nothing.
func TestClusterCountsLostLeases(t *testing.T) {
	st, tr, m := meteredNode(t, "node-m")
	link := &stealable{partitionable: &partitionable{ExpiringLeases: st, Membership: st}}
	if err := tr.StartCluster(ClusterConfig{Node: "node-m", TTL: clusterTTL, Leases: link, Members: link, Tick: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := tr.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		_ = tr.StopCluster(ctx) // errCut when partitioned
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	awaitShards(t, 10*time.Second, "every shard held", func() bool { return len(tr.ClusterShards()) == store.NumShards })
	if m.get(LeaseLostTakenOver) != 0 || m.get(LeaseLostFenced) != 0 {
		t.Fatalf("lost leases counted before any was lost: %v", m.lost)
	}

	link.stolen.Store(3 + 1)
	awaitShards(t, 2*clusterTTL, "the taken-over lease to be counted", func() bool { return m.get(LeaseLostTakenOver) >= 1 })
	link.stolen.Store(0)

	held := len(tr.ClusterShards())
	link.cut.Store(true)
	awaitShards(t, clusterTTL, "the node to fence itself", func() bool { return len(tr.ClusterShards()) == 0 })
	// The keeper may have re-acquired the stolen shard before the cut
	// (its lease was still ours in the database): held or held+1.
	if got := m.get(LeaseLostFenced); got < held || got > held+1 {
		t.Errorf("fenced %d shards counted, held %d at the cut", got, held)
	}
	if got := m.get(LeaseLostTakenOver); got < 1 {
		t.Errorf("taken_over = %d, want at least 1 (a shard reported gone)", got)
	}
}

// renewCounter counts lease renewals.
type renewCounter struct {
	*partitionable
	renews atomic.Int64
}

func (r *renewCounter) RenewShards(ctx context.Context, owner string, ttl time.Duration) ([]store.Lease, error) {
	r.renews.Add(1)
	return r.partitionable.RenewShards(ctx, owner, ttl)
}

func countRenewals(st *postgres.Store) *renewCounter {
	return &renewCounter{partitionable: &partitionable{ExpiringLeases: st, Membership: st}}
}

// startKeeper starts tr's cluster (TTL clusterTTL, Tick 50 ms) on link,
// stops it when the test ends, and waits until it holds every shard.
func startKeeper(t *testing.T, tr *Tracker, node string, link interface {
	store.ExpiringLeases
	store.Membership
}, drainTimeout time.Duration) {
	t.Helper()
	if err := tr.StartCluster(ClusterConfig{Node: node, TTL: clusterTTL, Leases: link, Members: link,
		Tick: 50 * time.Millisecond, DrainTimeout: drainTimeout}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := tr.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		_ = tr.StopCluster(ctx)
	})
	awaitShards(t, 10*time.Second, "every shard held", func() bool { return len(tr.ClusterShards()) == store.NumShards })
}

// renewsThrough waits twice the lease's safe span while what says what
// happens, and fails unless the node fenced nothing and renewed at least
// every TTL/3 meanwhile.
func renewsThrough(t *testing.T, m *leaseCounter, renews *atomic.Int64, what string) {
	t.Helper()
	before := renews.Load()
	time.Sleep(2 * clusterTTL)
	if got := m.get(LeaseLostFenced); got != 0 {
		t.Errorf("the node fenced %d shards while %s", got, what)
	}
	if n := renews.Load() - before; n < 3 {
		t.Errorf("%d renewals in %s while %s, want one every TTL/3", n, 2*clusterTTL, what)
	}
}

// ghostly adds a live node that never takes anything to the members a
// heartbeat returns, once joined is set: this node's share halves.
type ghostly struct {
	*renewCounter
	joined atomic.Bool
}

func (g *ghostly) Heartbeat(ctx context.Context, id, url string, ttl time.Duration) ([]store.Node, error) {
	nodes, err := g.partitionable.Heartbeat(ctx, id, url, ttl)
	if err == nil && g.joined.Load() {
		nodes = append(nodes, store.Node{ID: "node-ghost", Alive: true})
	}
	return nodes, err
}

// A hand-off to a joining node drains each shard's sends off the keeper's
// loop: the keeper goes on renewing meanwhile. It used to drain inside its
// loop, so a drain longer than the lease's safe span (TTL less a fifth)
// stopped the renewals and the node fenced itself, every shard it held
// (the long T8 run: a 2.3 s drain at a 3 s TTL, then a 503 to the next
// group creation).
func TestClusterRenewsWhileHandingOff(t *testing.T) {
	st, tr, m := meteredNode(t, "node-r")
	link := &ghostly{renewCounter: countRenewals(st)}
	startKeeper(t, tr, "node-r", link, 3*clusterTTL)
	// A send in flight in the highest shard (handed off first) that never
	// answers: that shard's drain lasts DrainTimeout.
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("grp_drain%d", i); store.ShardOf(k) == store.NumShards-1 {
			key = k
		}
	}
	tr.work.addInflight(key, []string{"stuck"})
	link.joined.Store(true)
	if c := tr.cluster.Load(); c != nil {
		c.renewSoon() // read the members now, as after a join announcement
	}
	awaitShards(t, 5*time.Second, "the other shards handed off", func() bool { return len(tr.ClusterShards()) == store.NumShards/2+1 })
	renewsThrough(t, m, &link.renews, "a hand-off drained")
	if n := len(tr.ClusterShards()); n != store.NumShards/2+1 {
		t.Errorf("%d shards held during the drain, want %d", n, store.NumShards/2+1)
	}
	tr.work.dropInflight(key, []string{"stuck"})
	awaitShards(t, 5*time.Second, "the drained shard handed off", func() bool { return len(tr.ClusterShards()) == store.NumShards/2 })
}

// stuckAcquirer makes acquisitions hang, once stuck is set, until unstick
// is closed (a statement waiting in the database past its context, as an
// acquisition on an overloaded server did), and counts renewals.
type stuckAcquirer struct {
	*renewCounter
	stuck   atomic.Bool
	unstick chan struct{}
}

func (s *stuckAcquirer) AcquireShards(ctx context.Context, owner string, shards []int, ttl time.Duration) ([]store.Lease, error) {
	if s.stuck.Load() {
		<-s.unstick
	}
	return s.partitionable.AcquireShards(ctx, owner, shards, ttl)
}

// The keeper renews on time while an acquisition takes long: renewals do
// not wait behind it. Failed while one loop renewed and then balanced: an
// acquisition held the loop, the next renewal came late, and the node
// fenced every shard it held (the long T8 run's hand-off phase: nine
// self-fences, renewals fast but late, one right after a 1,142 ms
// acquisition at a 3 s TTL).
func TestClusterRenewsWhileAcquiring(t *testing.T) {
	st, tr, m := meteredNode(t, "node-q")
	link := &stuckAcquirer{renewCounter: countRenewals(st), unstick: make(chan struct{})}
	startKeeper(t, tr, "node-q", link, 0)
	unstuck := false
	unstick := func() {
		if !unstuck {
			unstuck = true
			close(link.unstick)
		}
	}
	t.Cleanup(unstick) // runs before startKeeper's: the hung acquisition ends first
	// One shard's lease ends behind the keeper's back (released through
	// the store): the node is under its share and acquires it again, and
	// that acquisition hangs.
	link.stuck.Store(true)
	if err := st.ReleaseShards(context.Background(), "node-q", []int{7}); err != nil {
		t.Fatal(err)
	}
	awaitShards(t, 2*clusterTTL, "the released shard to be dropped", func() bool { return len(tr.ClusterShards()) == store.NumShards-1 })
	renewsThrough(t, m, &link.renews, "an acquisition hung")
	link.stuck.Store(false)
	unstick()
	awaitShards(t, 2*clusterTTL, "every shard held again", func() bool { return len(tr.ClusterShards()) == store.NumShards })
}

// slowBeats makes heartbeats take until their context ends, once slow is
// set (a membership write behind a loaded server), and counts renewals.
type slowBeats struct {
	*renewCounter
	slow atomic.Bool
}

func (s *slowBeats) Heartbeat(ctx context.Context, id, url string, ttl time.Duration) ([]store.Node, error) {
	if s.slow.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.partitionable.Heartbeat(ctx, id, url, ttl)
}

// A slow heartbeat does not make the lease renewal fail: the node keeps
// its leases while its membership write waits. Failed while the renewal
// ran after the heartbeat under one TTL/3 deadline: the long T8 run's
// restarted node fenced its 22 new shards after a renewal whose heartbeat
// took 919 ms and its lease update 180 ms, over the 1 s it had.
func TestClusterRenewsWhileHeartbeatsHang(t *testing.T) {
	st, tr, m := meteredNode(t, "node-h")
	link := &slowBeats{renewCounter: countRenewals(st)}
	startKeeper(t, tr, "node-h", link, 0)
	link.slow.Store(true)
	renewsThrough(t, m, &link.renews, "its heartbeats hung")
	if n := len(tr.ClusterShards()); n != store.NumShards {
		t.Errorf("%d shards held, want %d", n, store.NumShards)
	}
}
