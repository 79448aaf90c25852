package tracker

import (
	"context"
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

// The keeper counts lost leases for the lease-loss alert: a shard a
// renewal no longer finds as taken_over, every held shard when the node
// fences itself as fenced; a graceful stop counts nothing.
func TestClusterCountsLostLeases(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema, Owner: "node-m", Leased: true})
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
