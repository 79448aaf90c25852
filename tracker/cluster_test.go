package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
	"github.com/crewcast/crewcast/store/sqlite"
)

// Several nodes on one PostgreSQL (docs/design.md §9), in one process: each node is
// a tracker on its own leased store, all sending through one simulator.

const clusterTTL = 2 * time.Second

// partitionable is a node's view of the cluster tables that the test can
// cut off: while cut, heartbeats and renewals fail as if the database were
// unreachable (the node's commits still reach it: the epoch check, not
// the keeper, must stop them).
type partitionable struct {
	store.ExpiringLeases
	store.Membership
	cut atomic.Bool
}

var errCut = errors.New("test: partitioned from the database")

func (p *partitionable) RenewShards(ctx context.Context, owner string, ttl time.Duration) ([]store.Lease, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.ExpiringLeases.RenewShards(ctx, owner, ttl)
}

func (p *partitionable) Heartbeat(ctx context.Context, id, url string, ttl time.Duration) ([]store.Node, error) {
	if p.cut.Load() {
		return nil, errCut
	}
	return p.Membership.Heartbeat(ctx, id, url, ttl)
}

type clusterNode struct {
	id      string
	st      store.Store
	tr      *Tracker
	link    *partitionable
	stopped bool
}

func startNode(t *testing.T, h *itHarness, url, schema, id string) *clusterNode {
	t.Helper()
	return startNodeWith(t, h, url, schema, id, 300*time.Millisecond)
}

func startNodeWith(t *testing.T, h *itHarness, url, schema, id string, sweep time.Duration) *clusterNode {
	t.Helper()
	return startNodeTimed(t, h, url, schema, id, sweep, clusterTTL, 50*time.Millisecond)
}

func startNodeTimed(t *testing.T, h *itHarness, url, schema, id string, sweep, ttl, tick time.Duration) *clusterNode {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema, Owner: id, Leased: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	tr, err := New(Config{Store: st, Provider: h.provider, SweepInterval: sweep, SendRate: 40, SendBurst: 1, Clustered: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	link := &partitionable{ExpiringLeases: st, Membership: st}
	if err := tr.StartCluster(ClusterConfig{Node: id, TTL: ttl, Leases: link, Members: link, Tick: tick,
		Notifier: st}); err != nil {
		t.Fatal(err)
	}
	n := &clusterNode{id: id, st: st, tr: tr, link: link}
	t.Cleanup(func() {
		if !n.stopped {
			n.stop(t)
		}
	})
	return n
}

func (n *clusterNode) stop(t *testing.T) {
	t.Helper()
	n.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.tr.Stop(ctx); err != nil {
		t.Errorf("stop %s: %v", n.id, err)
	}
	if err := n.tr.StopCluster(ctx); err != nil && !errors.Is(err, errCut) {
		t.Errorf("stop cluster %s: %v", n.id, err)
	}
}

func awaitShards(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > timeout {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(began)
}

// A node joins: shards move by graceful hand-off to an even split while a
// paced group sends. The owner of the group's shard is then partitioned
// from the lease tables: it must fence itself within the TTL, another node
// takes over after expiry and finishes the group. Nobody is sent twice,
// and the journal's epochs never decrease along seq.
func TestClusterHandOffAndFailover(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	a := startNode(t, h, url, schema, "node-a")
	h.target.Store(a.tr)
	awaitShards(t, 10*time.Second, "node-a to hold every shard", func() bool { return len(a.tr.ClusterShards()) == store.NumShards })

	const n = 120 // 3 s at 40/s
	numbers := itNumbers(n)
	id := itCreate(t, a.tr, numbers)
	shard := store.ShardOf(id)

	b := startNode(t, h, url, schema, "node-b")
	took := awaitShards(t, 15*time.Second, "an even split", func() bool {
		return len(a.tr.ClusterShards()) == store.NumShards/2 && len(b.tr.ClusterShards()) == store.NumShards/2
	})
	t.Logf("hand-off to an even split took %s", took)

	owner, other := a, b
	if b.tr.cluster.Load().holds(shard) {
		owner, other = b, a
	}
	// Cut the owner off mid-send (the group paces over 3 s).
	owner.link.cut.Store(true)
	cutAt := time.Now()
	fenced := awaitShards(t, clusterTTL, "the cut-off owner to fence itself", func() bool { return len(owner.tr.ClusterShards()) == 0 })
	t.Logf("%s fenced itself %s after the cut (TTL %s)", owner.id, fenced, clusterTTL)
	awaitShards(t, 3*clusterTTL, "the other node to take the group's shard", func() bool { return other.tr.cluster.Load().holds(shard) })
	t.Logf("%s took the shard %s after the cut", other.id, time.Since(cutAt))
	h.target.Store(other.tr)

	g := awaitGroup(t, other.tr, other.st, id, 60*time.Second, "every recipient to reach an outcome", func(g store.GroupRow) bool {
		return g.Counts["pending"] == 0 && g.Counts["sending"] == 0 && g.Counts["sent"] == 0
	})
	t.Logf("final counts %v", g.Counts)
	sent := checkLedger(t, h.sim)
	for _, num := range numbers {
		if sent[num] > 1 {
			t.Errorf("%s sent %d times", num, sent[num])
		}
	}
	for num, d := range itDeliveries(t, other.st, id) {
		switch d.Status {
		case crewcast.StatusDelivered:
			if sent[num] != 1 {
				t.Errorf("%s delivered but sent %d times", num, sent[num])
			}
		case crewcast.StatusUnconfirmed:
		default:
			t.Errorf("%s: status %s", num, d.Status)
		}
	}
	// The audit: epochs never decrease along seq, and the cut-off owner
	// wrote nothing at the epoch the other node took over with or after.
	stamps, err := other.st.(store.JournalAudit).JournalStamps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	nodes := map[string]bool{}
	for _, s := range stamps {
		if s.Epoch < last {
			t.Fatalf("stale write: seq %d at epoch %d by %s after epoch %d", s.Seq, s.Epoch, s.Node, last)
		}
		last = s.Epoch
		nodes[s.Node] = true
	}
	if !nodes[other.id] || !nodes[owner.id] && owner.id != "node-a" {
		t.Errorf("journal written by %v; want both the first owner and the taker", nodes)
	}
	t.Logf("journal: %d events, last epoch %d, nodes %v", len(stamps), last, nodes)
	owner.link.cut.Store(false)
}

// createOnOwner creates a group through whichever node holds its shard
// (the others' commits are fenced: API forwarding is not part of this).
func createOnOwner(t *testing.T, nodes []*clusterNode, numbers []string) (string, *clusterNode) {
	t.Helper()
	for range 20 {
		for _, n := range nodes {
			id, created, err := n.tr.Create(context.Background(), group.Request{From: itFrom, To: numbers, Text: itText, Mode: crewcast.ModeIndividual}, CreateOptions{})
			if err == nil && created {
				return id, n
			}
		}
	}
	t.Fatal("no node could create the group")
	return "", nil
}

// SIGTERM's graceful hand-off: the owner stops mid-send (Stop drains and
// commits, StopCluster releases every lease with expires_at = now()), the
// other node takes the shard at once and finishes the group. Nothing is
// left unconfirmed and nobody is sent twice.
func TestClusterGracefulHandOffOnStop(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	a := startNode(t, h, url, schema, "node-a")
	b := startNode(t, h, url, schema, "node-b")
	h.target.Store(a.tr)
	awaitShards(t, 15*time.Second, "an even split", func() bool {
		return len(a.tr.ClusterShards())+len(b.tr.ClusterShards()) == store.NumShards &&
			len(a.tr.ClusterShards()) == store.NumShards/2
	})
	const n = 120
	numbers := itNumbers(n)
	id, owner := createOnOwner(t, []*clusterNode{a, b}, numbers)
	other := a
	if owner == a {
		other = b
	}
	h.target.Store(other.tr)
	awaitGroup(t, owner.tr, owner.st, id, 20*time.Second, "sending under way", func(g store.GroupRow) bool {
		return g.Counts["pending"] < n-10
	})
	owner.stop(t)
	shard := store.ShardOf(id)
	took := awaitShards(t, 5*time.Second, "the other node to take the shard", func() bool { return other.tr.cluster.Load().holds(shard) })
	t.Logf("hand-off: %s took the shard %s after %s stopped (TTL %s)", other.id, took, owner.id, clusterTTL)
	if took > clusterTTL/2 {
		t.Errorf("hand-off took %s: the lease was not released, it expired", took)
	}
	g := awaitGroup(t, other.tr, other.st, id, 60*time.Second, "every recipient delivered", func(g store.GroupRow) bool {
		return g.Counts["delivered"]+g.Counts["unconfirmed"] == n
	})
	if g.Counts["unconfirmed"] != 0 {
		t.Errorf("a graceful hand-off left %d unconfirmed: %v", g.Counts["unconfirmed"], g.Counts)
	}
	sent := checkLedger(t, h.sim)
	for _, num := range numbers {
		if sent[num] != 1 {
			t.Errorf("%s sent %d times, want 1", num, sent[num])
		}
	}
	stamps, err := other.st.(store.JournalAudit).JournalStamps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var last uint64
	for _, s := range stamps {
		if s.Epoch < last {
			t.Fatalf("stale write: seq %d at epoch %d after epoch %d", s.Seq, s.Epoch, last)
		}
		last = s.Epoch
	}
}

// Webhooks all land on the node that does not own the group; the owner's
// periodic sweep is an hour away, so only the NOTIFY wake-up can bring
// them to it: every recipient must still be delivered, promptly.
func TestClusterWebhooksReachTheOwner(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	a := startNodeWith(t, h, url, schema, "node-a", time.Hour)
	b := startNodeWith(t, h, url, schema, "node-b", time.Hour)
	awaitShards(t, 15*time.Second, "an even split", func() bool {
		return len(a.tr.ClusterShards()) == store.NumShards/2 && len(b.tr.ClusterShards()) == store.NumShards/2
	})
	const n = 40
	id, owner := createOnOwner(t, []*clusterNode{a, b}, itNumbers(n))
	other := a
	if owner == a {
		other = b
	}
	h.target.Store(other.tr)
	began := time.Now()
	awaitGroup(t, owner.tr, owner.st, id, 30*time.Second, "every recipient delivered through the other node's webhooks",
		func(g store.GroupRow) bool { return g.Counts["delivered"] == n })
	t.Logf("%d recipients delivered through webhooks received by %s in %s", n, other.id, time.Since(began))
	checkLedger(t, h.sim)

	// An inbound text from nobody's recipient belongs to the unmatched
	// journal, on whichever node holds its shard: both nodes get it in turn.
	for i, via := range []*clusterNode{a, b} {
		h.target.Store(via.tr)
		from := fmt.Sprintf("+1555099000%d", i)
		if _, err := h.sim.Inbound(context.Background(), from, itFrom, "who is this"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			rs, _, err := via.st.ListReplies(context.Background(), store.ReplyQuery{Number: from, Unmatched: true, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the unmatched text received by %s was not recorded: %+v", via.id, rs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// A node that no longer holds a group's shard does not make a queued send
// of it late: the provider is not called.
func TestClusterQueuedSendOfAMovedGroupIsNotMade(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	a := startNode(t, h, url, schema, "node-a")
	awaitShards(t, 10*time.Second, "node-a to hold every shard", func() bool { return len(a.tr.ClusterShards()) == store.NumShards })
	job := func(id string) sendJob {
		return sendJob{groupID: id, send: group.Send{ID: "s1", Indices: []int{0}},
			req: crewcast.SendRequest{From: itFrom, To: []string{"+15550100001"}, Text: itText}}
	}
	// Held: the call goes through.
	if r := a.tr.pool.call(job("grp_held")); r.err != nil {
		t.Fatalf("send of a held group: %v", r.err)
	}
	a.link.cut.Store(true)
	awaitShards(t, clusterTTL, "node-a to fence itself", func() bool { return len(a.tr.ClusterShards()) == 0 })
	before := len(h.sim.Ledger())
	r := a.tr.pool.call(job("grp_moved"))
	if !errors.Is(r.err, errNotOwner) && r.err != errNotOwner {
		t.Fatalf("send of a group held elsewhere: %v, want errNotOwner", r.err)
	}
	if after := len(h.sim.Ledger()); after != before {
		t.Fatalf("the provider was called: ledger %d → %d", before, after)
	}
	a.link.cut.Store(false)
}

// A webhook made durable by a node that does not own its group is
// forwarded to the owner in the wake-up (entry, events and group), and the
// owner applies just that, without sweeping the whole pending inbox (issue
// 15: a sweep per wake-up cost ingest through three nodes much of its
// rate). An entry no forward names still waits for the owner's sweep, the
// safety net, which routes it. Failed before forwards: the wake-up swept
// the stray entry too.
func TestClusterForwardAppliesTheEntryOnly(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	a := startNodeWith(t, h, url, schema, "node-a", time.Hour)
	b := startNodeWith(t, h, url, schema, "node-b", time.Hour)
	awaitShards(t, 15*time.Second, "an even split", func() bool {
		return len(a.tr.ClusterShards()) == store.NumShards/2 && len(b.tr.ClusterShards()) == store.NumShards/2
	})
	var mu sync.Mutex
	receipts := map[string]crewcast.Event{} // a status event per message id
	seen := func(events []crewcast.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range events {
			if ev.Kind != crewcast.KindInbound && ev.MessageID != "" {
				receipts[ev.MessageID] = ev
			}
		}
	}
	h.onIngest.Store(&seen)
	const n = 2
	id, owner := createOnOwner(t, []*clusterNode{a, b}, itNumbers(n))
	other := a
	if owner == a {
		other = b
	}
	h.target.Store(owner.tr)
	awaitGroup(t, owner.tr, owner.st, id, 30*time.Second, "every recipient delivered",
		func(g store.GroupRow) bool { return g.Counts["delivered"] == n })
	mu.Lock()
	var evs []crewcast.Event
	for _, ev := range receipts {
		evs = append(evs, ev)
	}
	mu.Unlock()
	if len(evs) < 2 {
		t.Fatalf("receipts for %d messages, want 2", len(evs))
	}
	ctx := context.Background()
	// The stray entry: durable in the shared inbox, no forward names it.
	stray := evs[0]
	stray.EventID = "stray-" + stray.EventID
	payload, err := json.Marshal([]crewcast.Event{stray})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.st.InsertInbox(ctx, []store.InboxEntry{{Provider: stray.Provider, EventID: stray.EventID,
		MessageID: stray.MessageID, Payload: payload, ReceivedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	// The forwarded one: received by the other node, which forwards it.
	named := evs[1]
	named.EventID = "named-" + named.EventID
	handled := make(chan struct{}) // closed once the owner handled the wake-up naming it
	var once sync.Once
	onReceived := func(payload string) {
		if strings.Contains(payload, named.EventID) {
			once.Do(func() { close(handled) })
		}
	}
	owner.tr.cluster.Load().onReceived.Store(&onReceived)
	if _, err := other.tr.Ingest(ctx, []crewcast.Event{named}); err != nil {
		t.Fatal(err)
	}
	pending := func(eventID string) bool {
		es, err := owner.st.PendingInbox(ctx, store.InboxRef{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.EventID == eventID {
				return true
			}
		}
		return false
	}
	awaitShards(t, 15*time.Second, "the forwarded entry applied by its owner", func() bool { return !pending(named.EventID) })
	// A sweep the wake-up asked for is asked for once the owner handled
	// it; it is over once the sweeper served every request made by then,
	// and what it routed to the group is applied once the group answers a
	// barrier (the sweep told the group before it ended).
	select {
	case <-handled:
	case <-time.After(15 * time.Second):
		t.Fatal("the owner never handled a wake-up naming the forwarded entry")
	}
	asked := owner.tr.sweeps.asked.Load()
	awaitShards(t, 15*time.Second, "the owner's sweeper to serve the sweeps asked for", func() bool {
		return owner.tr.sweeps.served.Load() >= asked
	})
	if res, err := askBarrier(owner.tr, id); err != nil || !errors.Is(res, errBarrier) {
		t.Fatalf("barrier on the owner: %v %v", res, err)
	}
	if !pending(stray.EventID) {
		t.Fatal("the entry no forward named was routed too: the wake-up swept the whole inbox")
	}
	if err := owner.tr.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	awaitShards(t, 15*time.Second, "the stray entry applied after the owner's sweep", func() bool { return !pending(stray.EventID) })
}

// soloSendingGroup starts node-a alone (every shard) and a 120-recipient
// group sending on it; it returns what a second node needs to join in.
func soloSendingGroup(t *testing.T) (url, schema string, h *itHarness, a *clusterNode, id string, n int) {
	t.Helper()
	url = os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema = itSchema(t, url)
	h = newHarness(t, sim.DefaultFaults(), nil)
	a = startNode(t, h, url, schema, "node-a")
	h.target.Store(a.tr)
	awaitShards(t, 15*time.Second, "node-a to hold every shard", func() bool { return len(a.tr.ClusterShards()) == store.NumShards })
	n = 120
	id, _ = createOnOwner(t, []*clusterNode{a}, itNumbers(n))
	awaitGroup(t, a.tr, a.st, id, 20*time.Second, "sending under way", func(g store.GroupRow) bool {
		return g.Counts["pending"] < n-10
	})
	return url, schema, h, a, id, n
}

// leasedBystander opens a leased store (holding no lease) for node and an
// actor system that counts the group actors it activates.
func leasedBystander(t *testing.T, url, schema, node string) (store.Store, *actor.System, *atomic.Int64) {
	t.Helper()
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema, Owner: node, Leased: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	activated := new(atomic.Int64)
	sys := actor.NewSystem(actor.WithLifecycleHook(func(ev actor.LifecycleEvent) {
		if ev.Kind == "group" && ev.Type == actor.EventActivated {
			activated.Add(1)
		}
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = sys.Shutdown(ctx)
	})
	return st, sys, activated
}

// A send's outcome queued while this node held the group's shard, and
// its actor woken only after the shard moved (the long T8 run: a node
// SIGCONTed after a pause took a provider answer before it fenced
// itself), cannot be committed here: the instance that wakes without the
// shard drops it, as a fenced commit does (the owner counts the send
// unconfirmed). It used to keep it queued: half an hour later the node
// took the shard back, the stale outcome counted as a send to drain, and
// its SIGTERM waited 7 s for it, then exited 1 ("1 groups still had
// uncommitted work").
func TestNodeWithoutTheShardDropsWorkQueuedBefore(t *testing.T) {
	url, schema, h, _, id, _ := soloSendingGroup(t)
	st, sys, activated := leasedBystander(t, url, schema, "node-f")
	e, err := New(Config{Store: st, Provider: h.provider, System: sys, SweepInterval: time.Hour, SendRate: 40, SendBurst: 1, Clustered: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// As postResult did while the shard was this node's.
	e.work.post(id, func(w *groupWork) {
		w.inflight = map[string]struct{}{"s1": {}}
		w.results = append(w.results, sendResult{send: group.Send{ID: "s1"}, at: time.Now()})
	})
	all := func(string) bool { return true }
	deadline := time.Now().Add(5 * time.Second)
	for len(e.work.sending(all, false)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if activated.Load() == 0 {
		t.Fatal("the group was never activated on node-f: the test tests nothing")
	}
	if left := e.work.sending(all, false); len(left) > 0 {
		t.Errorf("work queued before the shard moved is still held after %d activations: %v", activated.Load(), left)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// A node starting up (Start, then StartCluster a moment later, as serve
// does) holds no shard yet: it must not resume, route to or remind the
// groups other nodes own. Before StartCluster every key looks like its own, so
// a sweep or ResumeGroups run then would activate the other nodes' sending
// groups; each activation is fenced, and the work routed to them would
// stay queued and hold a later SIGTERM ("group has work in flight").
func TestClusterStartingNodeLeavesOthersGroupsAlone(t *testing.T) {
	url, schema, h, _, _, _ := soloSendingGroup(t)
	st, sys, activated := leasedBystander(t, url, schema, "node-c")
	c, err := New(Config{Store: st, Provider: h.provider, System: sys, SweepInterval: 100 * time.Millisecond,
		ReminderPoll: 50 * time.Millisecond, SendRate: 40, SendBurst: 1, Clustered: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Several sweeps (the first resumes the sending groups) and reminder
	// polls before the cluster starts: three sweeper passes done, and three
	// polls read (the second's reminders delivered once the third is
	// counted). What they told a group actor activated it or still waits
	// in its mailbox: the actor is listed from the Tell until it stops.
	awaitShards(t, 15*time.Second, "three sweeps and three reminder polls", func() bool {
		return c.sweeps.passes.Load() >= 3 && c.groups.ReminderStats().Polls >= 3
	})
	if got := activated.Load(); got != 0 {
		t.Errorf("a node holding no shard activated %d group actors before joining the cluster", got)
	}
	for _, a := range sys.Actors() {
		if a.Kind == "group" {
			t.Errorf("a node holding no shard told group %s something before joining the cluster", a.Key)
		}
	}
	if c.work.anyBusy(func(string) bool { return true }) {
		t.Error("a node holding no shard queued work for another node's group")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("stop of the node that never joined: %v", err)
	}
}

// A group actor whose commit is fenced drops the work queued for it, sends
// in flight included: it cannot be committed here (the owner applies the
// webhooks from the shared inbox and counts a send claimed without an
// outcome as unconfirmed), and kept, it re-activated the actor to be fenced
// again, over and over, and held the node's Stop ("group has work in
// flight"). The node here believes it owns every key (a single node on a
// leased store that holds no lease), as a node does in the moment between
// losing a lease and noticing it. Two fenced commits: routed webhooks
// (queued work, which the failed work commit also drops), then an
// operator's cancel of a group with a send in flight and nothing queued,
// which only the fence itself can drop.
func TestFencedGroupDropsItsQueuedWork(t *testing.T) {
	url, schema, h, a, id, n := soloSendingGroup(t)
	st, sys, activated := leasedBystander(t, url, schema, "node-d")
	counted := &fencedAcks{Store: st, key: id}
	d, err := New(Config{Store: counted, Provider: h.provider, System: sys, SweepInterval: time.Hour, SendRate: 40, SendBurst: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The webhooks of a's sends now reach d, which routes them to its own
	// (fenced) copy of the group; a's periodic sweep applies them. Until
	// d's copy tried (and failed) to commit some of them twice.
	h.target.Store(d)
	awaitShards(t, 30*time.Second, "node-d's copy of the group fenced applying webhooks", func() bool { return counted.n.Load() >= 2 })
	h.target.Store(a.tr)
	if activated.Load() == 0 {
		t.Fatal("the group was never activated on node-d: the test tests nothing")
	}

	// A group scheduled an hour ahead (it neither sends nor finishes while
	// the test runs), with a send in flight on node-d, as one claimed there
	// while the node still held the shard: no work is queued, so no work
	// commit runs. node-d's cancel is fenced; its answer leaves the actor
	// after the actor handled the fence (flush calls fail before the reply),
	// so it is the barrier.
	later, created, err := a.tr.Create(context.Background(), group.Request{From: itFrom, To: []string{"+15550177001", "+15550177002"},
		Text: itText, Mode: crewcast.ModeIndividual, PolicyInput: group.PolicyInput{SendAt: time.Now().Add(time.Hour).Format(time.RFC3339)}}, CreateOptions{})
	if err != nil || !created {
		t.Fatalf("create the scheduled group on node-a: %v %v", created, err)
	}
	d.work.addInflight(later, []string{"claimed-before-the-fence"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Cancel(ctx, later, "test"); err == nil {
		t.Fatal("node-d's cancel committed without a lease: nothing was fenced")
	}
	if d.work.anyBusy(func(key string) bool { return key == later }) {
		t.Error("the send in flight of the group fenced on node-d is still held there")
	}
	// The barrier: d's Stop returns once its router and sweeper ended and
	// no group has uncommitted work (waitIdle); kept work of a fenced
	// group would hold it ("group has work in flight"). After it nothing
	// can queue work on d.
	if err := d.Stop(ctx); err != nil {
		t.Errorf("stop of the node whose group was fenced: %v", err)
	}
	if d.work.anyBusy(func(string) bool { return true }) {
		t.Error("work of the fenced group is still queued on node-d")
	}
	awaitGroup(t, a.tr, a.st, id, 60*time.Second, "every recipient delivered or unconfirmed", func(g store.GroupRow) bool {
		return g.Counts["delivered"]+g.Counts["unconfirmed"] == n
	})
	sent := checkLedger(t, h.sim)
	for num, k := range sent {
		if k != 1 {
			t.Errorf("%s sent %d times, want 1", num, k)
		}
	}
}

// SIGTERM's hand-off (Leave, before Stop) moves a sending group's shard at
// once: the leaving node releases each shard as soon as its sends are
// recorded and announces it, and the other node takes it then, not at its
// next renewal or balance (both far away here: TTL 60 s, a tick of 20 s).
// Nothing is left unconfirmed and nobody is sent twice.
func TestClusterLeaveHandsOffAtOnce(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("cluster tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	h := newHarness(t, sim.DefaultFaults(), nil)
	const ttl, tick = time.Minute, 20 * time.Second
	a := startNodeTimed(t, h, url, schema, "node-a", 300*time.Millisecond, ttl, tick)
	awaitShards(t, 15*time.Second, "node-a to hold every shard", func() bool { return len(a.tr.ClusterShards()) == store.NumShards })
	b := startNodeTimed(t, h, url, schema, "node-b", 300*time.Millisecond, ttl, tick)
	h.target.Store(b.tr)
	const n = 120
	numbers := itNumbers(n)
	id, _ := createOnOwner(t, []*clusterNode{a}, numbers)
	awaitGroup(t, a.tr, a.st, id, 20*time.Second, "sending under way", func(g store.GroupRow) bool {
		return g.Counts["pending"] < n-10
	})
	shard := store.ShardOf(id)
	if !a.tr.cluster.Load().holds(shard) {
		t.Fatalf("node-a no longer holds the group's shard %d before leaving", shard)
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.tr.Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if held := a.tr.ClusterShards(); len(held) != 0 {
		t.Errorf("node-a still holds %d shards after Leave", len(held))
	}
	awaitShards(t, 10*time.Second, "node-b to take the group's shard", func() bool { return b.tr.cluster.Load().holds(shard) })
	t.Logf("node-b took shard %d %s after node-a began leaving (tick %s)", shard, time.Since(began), tick)
	awaitShards(t, 10*time.Second, "node-b's first commit of the group", func() bool {
		stamps, err := b.st.(store.JournalAudit).JournalStamps(context.Background(), id)
		return err == nil && len(stamps) > 0 && stamps[len(stamps)-1].Node == "node-b"
	})
	t.Logf("node-b committed to the group %s after node-a began leaving", time.Since(began))
	a.stop(t)
	g := awaitGroup(t, b.tr, b.st, id, 60*time.Second, "every recipient delivered", func(g store.GroupRow) bool {
		return g.Counts["delivered"]+g.Counts["unconfirmed"] == n
	})
	if g.Counts["unconfirmed"] != 0 {
		t.Errorf("a graceful hand-off left %d unconfirmed: %v", g.Counts["unconfirmed"], g.Counts)
	}
	sent := checkLedger(t, h.sim)
	for _, num := range numbers {
		if sent[num] != 1 {
			t.Errorf("%s sent %d times, want 1", num, sent[num])
		}
	}
}

// claimGate holds the first journal commit that claims sends until leave
// is closed.
type claimGate struct {
	store.Store
	once    sync.Once
	entered chan struct{}
	leave   chan struct{}
}

func (g *claimGate) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	for _, u := range units {
		for _, ev := range u.Events {
			if ev.Type == group.TypeClaimed {
				first := false
				g.once.Do(func() { first = true; close(g.entered) })
				if first {
					<-g.leave
				}
			}
		}
	}
	return g.Store.Commit(ctx, units)
}

// TestClaimsAreSendingWhileTheyCommit: from the moment a claim is being
// committed, its sends count as in flight, so a hand-off waiting for the
// shard's sends (cluster.go) cannot release it between the claim's commit
// and the provider calls it queues (those would then be refused as
// not-owner, and the new owner count them unconfirmed). Before, claims
// only counted once queued, after their commit.
func TestClaimsAreSendingWhileTheyCommit(t *testing.T) {
	h := newHarness(t, sim.Faults{}, nil)
	path := filepath.Join(t.TempDir(), "crewcast.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	g := &claimGate{Store: st, entered: make(chan struct{}), leave: make(chan struct{})}
	tr := h.startTracker(t, g, nil)
	id, _, err := tr.Create(context.Background(), group.Request{From: itFrom, To: itNumbers(3), Text: itText,
		Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no claim was committed")
	}
	sending := tr.work.anySending(func(k string) bool { return k == id })
	close(g.leave)
	if !sending {
		t.Error("the sends of a claim being committed do not count as in flight")
	}
	awaitGroup(t, tr, st, id, 20*time.Second, "every recipient delivered", func(r store.GroupRow) bool {
		return r.Counts["delivered"] == 3
	})
}

// fencedAcks counts the failed commits of one key that acknowledged
// webhooks: a group's copy on a node without its shard applying them.
type fencedAcks struct {
	store.Store
	key string
	n   atomic.Int64
}

func (s *fencedAcks) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	errs, err := s.Store.Commit(ctx, units)
	for i, u := range units {
		failed := err != nil || (i < len(errs) && errs[i] != nil)
		if u.Key != s.key || !failed {
			continue
		}
		for _, e := range u.Effects {
			if eff, ok := e.(store.Effects); ok && len(eff.InboxDone) > 0 {
				s.n.Add(1)
			}
		}
	}
	return errs, err
}

// snapshotCounter counts the group snapshot reads of one key: each is a
// group actor's activation loading the group from the store.
type snapshotCounter struct {
	*postgres.Store
	key   string
	loads atomic.Int64
}

func (s *snapshotCounter) LoadSnapshot(ctx context.Context, key string) (actor.Snapshot, error) {
	if key == s.key {
		s.loads.Add(1)
	}
	return s.Store.LoadSnapshot(ctx, key)
}

// A node that does not hold a group's shard does not load the group when
// a stray message (a scheduled kick, a room wake-up, a late outcome)
// reaches its actor there: the load cannot lead to a commit, only to a
// fenced one. On a leaving node, a load per queued message would
// cost a large group's snapshot read each time while the node's other
// shards drain.
func TestNodeWithoutTheShardDoesNotLoadTheGroup(t *testing.T) {
	url, schema, h, _, id, _ := soloSendingGroup(t)
	st, sys, activated := leasedBystander(t, url, schema, "node-e")
	counted := &snapshotCounter{Store: st.(*postgres.Store), key: id}
	e, err := New(Config{Store: counted, Provider: h.provider, System: sys, SweepInterval: time.Hour, SendRate: 40, SendBurst: 1, Clustered: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.groups.Tell(id, msgKick{})
		time.Sleep(50 * time.Millisecond)
	}
	// Asked after the kicks, a barrier is answered once they were handled
	// (their loads, if any, done). An instance that kept the message that
	// activated it never handles it, nor the barrier behind it.
	barrier := func() {
		t.Helper()
		if res, err := askBarrier(e, id); err != nil || !errors.Is(res, ErrUnavailable) {
			t.Fatalf("barrier on the node without the shard: %v %v, want ErrUnavailable", res, err)
		}
	}
	barrier()
	if activated.Load() == 0 {
		t.Fatal("the group was never activated on node-e: the test tests nothing")
	}
	if n := counted.loads.Load(); n > 0 {
		t.Errorf("a node holding none of the shards loaded the group %d times for %d activations", n, activated.Load())
	}
	// Each stray message costs at most one activation. The message that
	// activated a non-owner instance used to stay in its mailbox when the
	// instance stopped, moved to the next activation, and so on for good:
	// a busy loop that grew with every group a node lost (the long T8
	// run's nodes ended too starved to renew their leases).
	// So the kicks and the barrier cost at most six, and a second barrier
	// exactly one: nothing is left in the mailbox to activate another.
	before := activated.Load()
	if before > 6 {
		t.Errorf("%d activations for 5 stray kicks and a barrier", before)
	}
	barrier()
	if n := activated.Load() - before; n != 1 {
		t.Errorf("%d activations for one stray message, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}
