package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Several nodes on one PostgreSQL (docs/design.md §9). A node holds shards through
// expiring leases that its keeper renews; the store's commits check the
// lease epoch inside their transaction, which is the guarantee. The keeper
// adds what makes the cluster live and polite:
//
//   - self-fencing: when renewals fail until shortly before the leases
//     could expire, the node stops holding them on its own (every commit
//     of those shards fails from then on, so its actors stop and claim
//     nothing more) — a paused or partitioned node stops by itself;
//   - balance: live nodes (heartbeats in the nodes table) share the 64
//     shards evenly (±1); a node under its share takes free or expired
//     leases, a node over it hands shards off gracefully: it stops
//     claiming in the shard, waits for the shard's in-flight sends and
//     their commits, then releases the lease with expires_at = now();
//   - on leaving (SIGTERM: Leave, before Stop), the node first leaves the
//     members, stops claiming everywhere and releases each shard as soon
//     as the sends it made there are recorded, all shards at once; every
//     release is announced, so the others take the shards at once rather
//     than at their next renewal; StopCluster (after Stop) releases what
//     is left.

// ClusterConfig configures a tracker that is one of several nodes.
type ClusterConfig struct {
	// Node is this node's id, the owner name in leases. Required.
	Node string
	// AdvertiseURL is how the other nodes reach this one.
	AdvertiseURL string
	// TTL is the lease time to live (default 10 s).
	TTL time.Duration
	// Leases and Members are the store's cluster tables (the store must be
	// opened Leased, so that it holds no lease of its own).
	Leases  store.ExpiringLeases
	Members store.Membership
	// Tick is how often the keeper looks at the balance (default TTL/10,
	// at most 500 ms); renewals run every TTL/3.
	Tick time.Duration
	// DrainTimeout bounds a hand-off's wait for the shard's in-flight
	// sends (default: the send timeout plus 5 s).
	DrainTimeout time.Duration
	// Notifier, when set, wakes the owner of a group at once when another
	// node made one of its webhooks durable (LISTEN/NOTIFY); the owner's
	// inbox sweep (SweepInterval) remains the safety net.
	Notifier store.Notifier
	// EraseRemote runs one group's step of an erasure on the node that
	// owns the group (ownerURL, its advertise URL): Tracker.EraseInGroup
	// there. An error wrapping ErrUnavailable (the shard is moving) is
	// tried again. Without it, an erasure waits until this node owns the
	// group's shard or gives up (ErrUnavailable).
	EraseRemote func(ctx context.Context, ownerURL, groupID, number, replacement string) (store.ErasedCounts, error)
}

// changesChannel carries the groups whose journal this node committed to
// ("id:seq,id:seq…"), so that event streams on every node see them.
const changesChannel = "crewcast_changes"

// errNotOwner answers a queued send whose group's shard moved to another
// node; its result is never committed here (the commit would be fenced).
var errNotOwner = &crewcast.SendError{Provider: "crewcast", Class: crewcast.ClassNotSent,
	Detail: "not sent: the group moved to another node before the provider call", RetryAfter: time.Millisecond}

// inboxChannel is the NOTIFY channel of webhooks made durable for a group
// another node owns. A payload is lines, each either a shard number (its
// owner sweeps the inbox: an entry it must look for itself) or a forward:
// the group's shard, a space and a JSON object (the entry, its events and
// its group, which the owner applies without reading the store; the other
// nodes skip the line by its shard without decoding it).
const inboxChannel = "crewcast_inbox"

// forward is a webhook this node made durable (and routed) for a group of
// a shard another node holds, sent to that owner in the wake-up itself:
// the owner hands it to the group as its own router would, so a webhook
// received anywhere costs the owner no store read. The entry is in the
// shared inbox either way; a forward that is lost (a listener
// reconnecting, a node stopping) is found by the owner's periodic sweep.
type forward struct {
	Group    string           `json:"g"`
	Provider string           `json:"p"`
	EventID  string           `json:"e"`
	Orphan   bool             `json:"o,omitempty"`
	Events   []crewcast.Event `json:"v"`
}

// wakeUp is one line of an inbox wake-up: a forward, or (fwd nil) a
// request that shard's owner sweep.
type wakeUp struct {
	shard int
	fwd   *forward
}

// maxNotifyPayload keeps a NOTIFY payload under PostgreSQL's 8000 bytes.
const maxNotifyPayload = 7000

// payloads packs the items of one round of NOTIFYs, separated by a byte,
// into as few payloads as maxNotifyPayload allows (an item is never
// split: the caller keeps each under it).
type payloads struct {
	out []string
	b   strings.Builder
}

func (p *payloads) add(item string, sep byte) {
	if p.b.Len() > 0 && p.b.Len()+len(item)+1 > maxNotifyPayload {
		p.out = append(p.out, p.b.String())
		p.b.Reset()
	}
	if p.b.Len() > 0 {
		p.b.WriteByte(sep)
	}
	p.b.WriteString(item)
}

// done returns the payloads packed.
func (p *payloads) done() []string {
	if p.b.Len() > 0 {
		p.out = append(p.out, p.b.String())
		p.b.Reset()
	}
	return p.out
}

// notifyEvery is the least time between two rounds of a node's NOTIFYs.
// Under load the forwards of several inbox batches then share one NOTIFY
// (each is a write transaction, and wakes every listening session of the
// database); a node that sent none lately sends at once.
const notifyEvery = 25 * time.Millisecond

// cluster is the keeper's state.
type cluster struct {
	cfg ClusterConfig
	t   *Tracker

	mu   sync.Mutex
	held map[int]bool // shards whose lease this node holds
	// heldSince is when each held shard was last acquired: a renewal
	// judges only the shards held before it began (an acquisition runs
	// at the same time, and its shards were not asked to renew).
	heldSince map[int]time.Time
	draining  map[int]bool // shards being handed off: no new claims
	nodes     []store.Node
	nodesAt   time.Time // when nodes was read (the last heartbeat that succeeded)
	// validUntil is the local (monotonic) time before which every held
	// lease is surely still live on the database clock: the start of the
	// last successful renewal plus the TTL, less a safety margin.
	validUntil time.Time
	watchdog   *time.Timer // fires fenceIfLate at validUntil
	// leaving: Leave began; the node takes nothing and no longer
	// heartbeats (the others' shares already count it out).
	leaving bool
	// pokes asks the keeper to balance now: a renewal read the members,
	// another node released shards (leaseChange). renewPokes asks for a
	// renewal now, which reads the members (a node left), then a balance.
	pokes      chan struct{}
	renewPokes chan struct{}
	resuming   sync.WaitGroup // resumeShards of acquired shards
	// handingOff: a hand-off to the others (handOff) is draining, off the
	// keeper's loop, which goes on renewing; it balances nothing else
	// meanwhile.
	handingOff atomic.Bool
	handoffs   sync.WaitGroup

	stop chan struct{}
	done chan struct{}
	wake chan wakeUp // what to tell shards' owners (wakeOwner, forwardEntry)
	// missed holds shards whose forward did not fit in wake: their owners
	// are asked to sweep instead.
	missed map[int]bool
	// onReceived, for tests, hears each inbox wake-up once received has
	// handled it (its forwards handed to their groups, its sweep asked for).
	onReceived atomic.Pointer[func(payload string)]
}

// safetyMargin is how long before a lease could expire the node stops
// using it when it could not renew (a fifth of the TTL).
func (c *cluster) safetyMargin() time.Duration { return c.cfg.TTL / 5 }

// StartCluster makes the started tracker one node of several: it runs the
// lease keeper until StopCluster. The tracker's store must hold no lease
// of its own (opened Leased).
func (t *Tracker) StartCluster(cfg ClusterConfig) error {
	if cfg.Node == "" || cfg.Leases == nil || cfg.Members == nil {
		return errors.New("tracker: cluster needs a node id, leases and members")
	}
	if !t.started {
		return errors.New("tracker: start the tracker before the cluster")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 10 * time.Second
	}
	if cfg.Tick <= 0 {
		cfg.Tick = min(cfg.TTL/10, 500*time.Millisecond)
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = t.cfg.SendTimeout + 5*time.Second
	}
	c := &cluster{cfg: cfg, t: t, held: map[int]bool{}, heldSince: map[int]time.Time{}, draining: map[int]bool{},
		stop: make(chan struct{}), done: make(chan struct{}), wake: make(chan wakeUp, 4096), missed: map[int]bool{},
		pokes: make(chan struct{}, 1), renewPokes: make(chan struct{}, 1)}
	t.cluster.Store(c)
	// Before any request is served (the server starts HTTP after this).
	t.cfg.NewID = t.ownedID(t.cfg.NewID)
	// A claimed send still queued when its shard moved away is not sent
	// late: the new owner counts it unconfirmed (claimed, no outcome) and
	// never resends it; calling the provider now would only make that
	// guess wrong. (No send is queued yet: nothing is owned before this.)
	guard := t.pool.guard
	t.pool.guard = func(ctx context.Context, j sendJob) (func(), error) {
		if !t.ownsKey(j.groupID) {
			return nil, errNotOwner
		}
		if guard == nil {
			return func() {}, nil
		}
		return guard(ctx, j)
	}
	// Reminders of shards held elsewhere are theirs to fire (a Clustered
	// tracker has filtered them since Start).
	if !t.cfg.Clustered {
		t.groups.EnableReminders(heldReminders{t.st, t.ownsKey}, func(r actor.Reminder) groupMsg { return msgReminder{r: r} },
			actor.ReminderOptions{PollInterval: t.cfg.ReminderPoll})
	}
	go c.run()
	return nil
}

// wakeOwner asks the owner of shard to sweep its inbox now (a webhook of
// one of its groups was made durable here). It never blocks: a dropped
// wake-up is covered by the owner's periodic sweep.
func (t *Tracker) wakeOwner(shard int) {
	c := t.cluster.Load()
	if c == nil || c.cfg.Notifier == nil {
		return
	}
	c.send(wakeUp{shard: shard})
}

// forwardEntry sends r, a webhook made durable here and routed to group id
// of another node's shard, to that node (see forward). It never blocks.
func (t *Tracker) forwardEntry(id string, r routed) {
	c := t.cluster.Load()
	if c == nil || c.cfg.Notifier == nil {
		return
	}
	c.send(wakeUp{shard: store.ShardOf(id), fwd: &forward{Group: id, Provider: r.ref.Provider, EventID: r.ref.EventID,
		Orphan: r.orphan, Events: r.events}})
}

// send queues w for notify; when the queue is full, the shard's owner is
// asked to sweep instead (at the next batch).
func (c *cluster) send(w wakeUp) {
	select {
	case c.wake <- w:
	default:
		c.mu.Lock()
		c.missed[w.shard] = true
		c.mu.Unlock()
	}
}

// notify sends the wake-ups: every batch waiting, as few NOTIFYs as fit
// (maxNotifyPayload), sweep requests once per shard.
func (c *cluster) notify() {
	var last time.Time
	for {
		var first wakeUp
		select {
		case <-c.stop:
			return
		case first = <-c.wake:
		}
		if wait := notifyEvery - time.Since(last); wait > 0 {
			select {
			case <-c.stop:
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		batch := []wakeUp{first}
		for more := true; more && len(batch) < cap(c.wake); {
			select {
			case w := <-c.wake:
				batch = append(batch, w)
			default:
				more = false
			}
		}
		sweeps := map[int]bool{}
		c.mu.Lock()
		for sh := range c.missed {
			sweeps[sh] = true
		}
		clear(c.missed)
		c.mu.Unlock()
		// Every payload of the round in one NOTIFY transaction.
		var p payloads
		for _, w := range batch {
			if w.fwd == nil {
				sweeps[w.shard] = true
				continue
			}
			obj, err := json.Marshal(w.fwd)
			line := append(strconv.AppendInt(nil, int64(w.shard), 10), ' ')
			line = append(line, obj...)
			if err != nil || len(line) >= maxNotifyPayload {
				sweeps[w.shard] = true // too big for a NOTIFY: the owner finds it itself
				continue
			}
			p.add(string(line), '\n')
		}
		for sh := range sweeps {
			p.add(strconv.Itoa(sh), '\n')
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TTL/3)
		if err := c.cfg.Notifier.Notify(ctx, inboxChannel, p.done()...); err != nil {
			c.t.log.Warn("notify owner", "err", err)
		}
		cancel()
	}
}

// listen hears the other nodes on one session (see store.Notifier): their
// forwards and sweep requests for the shards this node holds (received)
// and their commits, for this node's event streams (changed).
func (c *cluster) listen() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-c.stop; cancel() }()
	for ctx.Err() == nil {
		err := c.cfg.Notifier.Listen(ctx, []string{inboxChannel, changesChannel}, func(channel, payload string) {
			if channel == changesChannel {
				c.changed(payload)
			} else {
				c.received(payload)
			}
		})
		if err != nil {
			c.t.log.Warn("listen for other nodes' webhooks and changes; listening again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// received handles one inbox wake-up (see inboxChannel): forwards of the
// shards this node holds go to their groups, sweep requests for them start
// a sweep; the rest is another node's.
func (c *cluster) received(payload string) {
	sweep := false
	for line := range strings.SplitSeq(payload, "\n") {
		shard, obj, isForward := strings.Cut(line, " ")
		sh, err := strconv.Atoi(shard)
		if err != nil || !c.holds(sh) {
			continue // another node's (or not ours to read)
		}
		if !isForward {
			sweep = true
			continue
		}
		var f forward
		if err := json.Unmarshal([]byte(obj), &f); err != nil || f.Group == "" || f.EventID == "" || len(f.Events) == 0 || store.ShardOf(f.Group) != sh {
			c.t.log.Warn("unreadable webhook forward ignored; the sweep finds its entry", "err", err)
			continue
		}
		c.t.deliver(f.Group, routed{ref: store.InboxRef{Provider: f.Provider, EventID: f.EventID}, events: f.Events, orphan: f.Orphan})
	}
	if sweep {
		c.t.sweepSoon()
	}
	if f := c.onReceived.Load(); f != nil {
		(*f)(payload)
	}
}

// StopCluster ends the keeper, releases every lease this node holds (so
// the others take over at once) and leaves the nodes table. Call it after
// Stop, which committed everything.
func (t *Tracker) StopCluster(ctx context.Context) error {
	c := t.cluster.Load()
	if c == nil {
		return nil
	}
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
	c.resuming.Wait()
	c.handoffs.Wait() // drainAndRelease returns at c.stop
	c.mu.Lock()
	if c.watchdog != nil {
		c.watchdog.Stop()
	}
	shards := heldList(c.held)
	clear(c.held)
	c.mu.Unlock()
	var errs []error
	if err := c.cfg.Leases.ReleaseShards(ctx, c.cfg.Node, shards); err != nil {
		errs = append(errs, err)
	}
	if err := c.cfg.Members.Leave(ctx, c.cfg.Node); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ClusterShards returns the shards this node holds (nil when not in a
// cluster).
func (t *Tracker) ClusterShards() []int {
	c := t.cluster.Load()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return heldList(c.held)
}

// ClusterNodes returns the nodes this node saw at its last heartbeat (nil
// when not in a cluster): id, advertise URL and liveness.
func (t *Tracker) ClusterNodes() []store.Node {
	c := t.cluster.Load()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

func heldList(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for sh := range m {
		out = append(out, sh)
	}
	slices.Sort(out)
	return out
}

// draining reports whether key's shard is being handed off (no new claims).
func (t *Tracker) draining(key string) bool {
	c := t.cluster.Load()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.draining[store.ShardOf(key)]
}

// ownsKey reports whether this node may commit for key: always for a
// single node; in a cluster, while it holds key's shard. Work of a group
// whose shard moved away cannot be committed here and does not keep the
// group (or Stop) waiting: the new owner recovers it from the store (a
// claimed send without an outcome becomes unconfirmed there, a webhook
// stays in the shared inbox until the owner applies it).
func (t *Tracker) ownsKey(key string) bool {
	c := t.cluster.Load()
	if c == nil {
		return !t.cfg.Clustered // a node before StartCluster holds nothing
	}
	return c.holds(store.ShardOf(key))
}

func (c *cluster) holds(shard int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[shard]
}

func (c *cluster) run() {
	defer close(c.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); c.renewing() }()
	if c.cfg.Notifier != nil {
		wg.Add(3)
		go func() { defer wg.Done(); c.notify() }()
		go func() { defer wg.Done(); c.listen() }() // both channels, one session
		go func() { defer wg.Done(); c.shareChanges() }()
	}
	c.every(c.cfg.Tick, c.pokes, func() time.Duration {
		if !c.t.closing.Load() && !c.isLeaving() {
			c.balance()
		}
		return c.cfg.Tick
	})
}

// every runs step after first, then again after the wait step returns, or
// at once when pokes delivers, until the keeper stops.
func (c *cluster) every(first time.Duration, pokes <-chan struct{}, step func() time.Duration) {
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-timer.C:
		case <-pokes:
			timer.Stop()
		}
		timer.Reset(max(step(), 0))
	}
}

// renewing renews the held leases (and heartbeats) every TTL/3, counted
// from the start of the last renewal that succeeded, at once when asked
// (renewSoon), and again at every Tick after one that failed. It runs
// apart from the keeper's loop: an acquisition (which can wait in the
// database for up to TTL/3, under load for longer) never delays a
// renewal, which would fence the node (the long T8 run did so nine times
// with renewals that were fast but late). After each renewal the keeper
// balances on the members it read.
func (c *cluster) renewing() {
	c.every(0, c.renewPokes, func() time.Duration {
		began := time.Now()
		wait := c.cfg.Tick
		if c.renew() {
			wait = c.cfg.TTL/3 - time.Since(began)
			c.poke()
		}
		c.fenceIfLate()
		return wait
	})
}

// renewSoon asks for a renewal now (which reads the members), then a
// balance.
func (c *cluster) renewSoon() {
	select {
	case c.renewPokes <- struct{}{}:
	default:
	}
}

func (c *cluster) isLeaving() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaving
}

// poke asks the keeper to balance now.
func (c *cluster) poke() {
	select {
	case c.pokes <- struct{}{}:
	default:
	}
}

// renew extends every held lease, and heartbeats beside it; it reports
// whether the leases were renewed. The heartbeat (membership) runs on its
// own connection with its own deadline and never delays or fails the
// renewal: under load a heartbeat took 919 ms of the renewal's TTL/3, and
// the lease update behind it missed the deadline (the node fenced).
func (c *cluster) renew() bool {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TTL/3)
	defer cancel()
	beat := make(chan []store.Node, 1)
	if c.isLeaving() { // a leaving node is out of the members for good
		beat <- nil
	} else {
		go func() {
			nodes, err := c.cfg.Members.Heartbeat(ctx, c.cfg.Node, c.cfg.AdvertiseURL, c.cfg.TTL)
			if err != nil {
				c.t.log.Warn("cluster heartbeat failed", "err", err, "took_ms", time.Since(began).Milliseconds())
			}
			beat <- nodes
		}()
	}
	renewed, err := c.cfg.Leases.RenewShards(ctx, c.cfg.Node, c.cfg.TTL)
	took := time.Since(began)
	if err != nil {
		c.t.log.Warn("lease renewal failed", "err", err, "took_ms", took.Milliseconds())
	} else {
		if took > c.cfg.TTL/6 {
			// Half of the time a renewal has: the node is near fencing itself.
			c.t.log.Warn("lease renewal slow", "took_ms", took.Milliseconds())
		}
		c.recordRenewal(began, renewed)
	}
	if nodes := <-beat; nodes != nil {
		c.mu.Lock()
		c.nodes, c.nodesAt = nodes, time.Now()
		c.mu.Unlock()
	}
	return err == nil
}

// recordRenewal records a renewal that began at began: the shards held before
// it that it did not renew are lost, and every held lease is valid until
// began + TTL less the safety margin.
func (c *cluster) recordRenewal(began time.Time, renewed []store.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := map[int]bool{}
	for _, l := range renewed {
		kept[l.Shard] = true
	}
	lost := 0
	for sh := range c.held {
		if !kept[sh] && c.heldSince[sh].Before(began) {
			c.t.log.Warn("lease lost", "shard", sh)
			delete(c.held, sh)
			lost++
		}
	}
	c.t.leaseLost(LeaseLostTakenOver, lost)
	c.validUntil = began.Add(c.cfg.TTL - c.safetyMargin())
	// The watchdog fences at validUntil even while the renewer is stuck in
	// a renewal that hangs (a partition holds a statement until its
	// timeout).
	if c.watchdog == nil {
		c.watchdog = time.AfterFunc(time.Until(c.validUntil), c.fenceIfLate)
	} else {
		c.watchdog.Reset(time.Until(c.validUntil))
	}
}

// fenceIfLate stops holding every lease when no renewal succeeded in time:
// the leases may expire soon and another node take them.
func (c *cluster) fenceIfLate() {
	c.mu.Lock()
	late := len(c.held) > 0 && time.Now().After(c.validUntil)
	var shards []int
	if late {
		shards = heldList(c.held)
		clear(c.held)
	}
	c.mu.Unlock()
	if !late {
		return
	}
	c.t.log.Error("lease renewal overdue: fencing this node's shards", "shards", len(shards))
	c.t.leaseLost(LeaseLostFenced, len(shards))
	// Locally only: the database may be unreachable (that is why we are
	// here); the leases expire on its clock by themselves.
	c.cfg.Leases.DropShards(shards)
}

// Reasons a node stops holding leases (LeaseMetrics).
const (
	// LeaseLostTakenOver: a renewal found the lease no longer ours (it
	// expired on the database clock and another node took it).
	LeaseLostTakenOver = "taken_over"
	// LeaseLostFenced: no renewal succeeded in time and the node stopped
	// using every lease it held (fenced itself) before they could expire.
	LeaseLostFenced = "fenced"
)

// LeaseMetrics is implemented by Metrics that count lost shard leases
// (package metrics does); others are not told.
type LeaseMetrics interface {
	// LeaseLost counts shards whose lease this node stopped holding
	// other than by a graceful hand-off; reason is a LeaseLost* constant.
	LeaseLost(reason string, shards int)
}

func (t *Tracker) leaseLost(reason string, shards int) {
	if shards <= 0 {
		return
	}
	if m, ok := t.cfg.Metrics.(LeaseMetrics); ok {
		m.LeaseLost(reason, shards)
	}
}

// target is this node's share of the shards among the live nodes.
func (c *cluster) target() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var live []string
	for _, n := range c.nodes {
		if n.Alive {
			live = append(live, n.ID)
		}
	}
	if !slices.Contains(live, c.cfg.Node) {
		live = append(live, c.cfg.Node)
		slices.Sort(live)
	}
	i := slices.Index(live, c.cfg.Node)
	share := store.NumShards / len(live)
	if i < store.NumShards%len(live) {
		share++
	}
	return share
}

// balance takes free or expired shards up to this node's share, or hands
// off what is over it.
func (c *cluster) balance() {
	c.mu.Lock()
	fresh := time.Now().Before(c.validUntil)
	known := time.Since(c.nodesAt) <= c.cfg.TTL
	have := len(c.held)
	c.mu.Unlock()
	if !fresh || !known {
		return // not renewed lately, or the members not read lately: take nothing new, hand off nothing
	}
	if c.handingOff.Load() {
		return // the shares are settled when that hand-off ends
	}
	want := c.target()
	switch {
	case have < want:
		c.acquire(want - have)
	case have > want:
		// Off the loop: a drain can outlast the lease's safe span (a send
		// waiting for its provider), and the loop must go on renewing every
		// lease, those draining included, or the node fences itself.
		c.handingOff.Store(true)
		c.handoffs.Add(1)
		go func() {
			defer c.handoffs.Done()
			defer c.handingOff.Store(false)
			c.handOff(have - want)
			c.poke() // balance again now, rather than at the next tick
		}()
	}
}

func (c *cluster) acquire(n int) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TTL/3)
	defer cancel()
	var shards []int
	// Another node taking released shards at the same moment may win some
	// of those asked for: ask again at once for the rest (a few rounds),
	// rather than at the next tick.
	for round := 0; round < 3 && len(shards) < n; round++ {
		got, asked, err := c.acquireRound(ctx, n-len(shards))
		if err != nil {
			c.t.log.Warn("acquire leases", "err", err)
			break
		}
		shards = append(shards, got...)
		if asked == 0 || len(got) == asked {
			break // nothing free, or all we asked for
		}
	}
	if len(shards) == 0 {
		return
	}
	slices.Sort(shards)
	c.t.log.Info("leases acquired", "shards", len(shards), "which", shards, "took_ms", time.Since(began).Milliseconds())
	// Off the keeper's loop, which may be asked to balance again at once
	// (another release announced).
	c.resuming.Add(1)
	go func() {
		defer c.resuming.Done()
		c.t.resumeShards(shards)
	}()
}

// acquireRound asks for up to n shards that look free and holds those the
// database grants: it returns them and how many it asked for.
func (c *cluster) acquireRound(ctx context.Context, n int) (got []int, asked int, err error) {
	leases, err := c.cfg.Leases.KeeperLeases(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("list leases: %w", err)
	}
	listed := map[int]store.Lease{}
	for _, l := range leases {
		listed[l.Shard] = l
	}
	// Candidates judged by this node's clock are only a hint: the database
	// decides in AcquireShards.
	now := time.Now()
	var free []int
	for sh := range store.NumShards {
		l, ok := listed[sh]
		if !ok || l.ExpiresAt.IsZero() || !l.ExpiresAt.After(now) {
			free = append(free, sh)
		}
	}
	if len(free) == 0 {
		return nil, 0, nil
	}
	if len(free) > n {
		// A random choice: nodes taking released shards at the same
		// moment then mostly ask for different ones. Asked in order, so
		// that two acquisitions lock shared rows in the same order (in
		// opposite orders they deadlock until the statement timeout).
		rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		free = free[:n]
		slices.Sort(free)
	}
	leased, err := c.cfg.Leases.AcquireShards(ctx, c.cfg.Node, free, c.cfg.TTL)
	if err != nil {
		return nil, len(free), err
	}
	c.mu.Lock()
	for _, l := range leased {
		c.held[l.Shard] = true
		c.heldSince[l.Shard] = time.Now()
		got = append(got, l.Shard)
	}
	c.mu.Unlock()
	return got, len(free), nil
}

// handOff drains and releases n held shards (the highest numbered), all
// at once: each is released as soon as its sends are recorded.
func (c *cluster) handOff(n int) {
	c.mu.Lock()
	shards := heldList(c.held)
	c.mu.Unlock()
	kept := c.drainAndRelease(context.Background(), shards[len(shards)-n:])
	if len(kept) > 0 {
		c.t.log.Warn("hand-off: shards still sending; keeping them", "shards", len(kept))
		c.mu.Lock()
		for _, sh := range kept {
			delete(c.draining, sh)
		}
		c.mu.Unlock()
	}
}

// drainAndRelease stops claiming in shards and releases each as soon as
// no send this node made there is in flight or unrecorded (a send claimed
// here has its outcome committed here, so a graceful hand-off leaves
// nothing unconfirmed), several in one statement, announcing every
// release so that the others take the shards at once. Webhooks queued for
// a released shard's groups are the new owner's: they are in the shared
// inbox, and a commit here is fenced and drops them. It returns the shards
// still sending after DrainTimeout (held, and still draining), or when ctx
// ends or the keeper stops.
func (c *cluster) drainAndRelease(ctx context.Context, shards []int) (kept []int) {
	c.mu.Lock()
	for _, sh := range shards {
		c.draining[sh] = true
	}
	c.mu.Unlock()
	left := slices.Clone(shards)
	began := time.Now()
	deadline := began.Add(c.cfg.DrainTimeout)
	lastSaid := began
	for {
		var done []int
		c.mu.Lock()
		left = slices.DeleteFunc(left, func(sh int) bool { return !c.held[sh] }) // lost meanwhile
		c.mu.Unlock()
		for _, sh := range left {
			if !c.t.work.anySending(func(key string) bool { return store.ShardOf(key) == sh }) {
				done = append(done, sh)
			}
		}
		if len(done) > 0 {
			c.mu.Lock()
			for _, sh := range done {
				delete(c.held, sh)
				delete(c.draining, sh)
			}
			c.mu.Unlock()
			left = slices.DeleteFunc(left, func(sh int) bool { return slices.Contains(done, sh) })
			rctx, cancel := context.WithTimeout(ctx, c.cfg.TTL/3)
			if err := c.cfg.Leases.ReleaseShards(rctx, c.cfg.Node, done); err != nil {
				// Held no more here either way: the leases expire.
				c.t.log.Warn("hand-off release", "shards", len(done), "err", err)
			} else {
				c.t.log.Info("leases handed off", "shards", len(done), "which", done, "drained_ms", time.Since(began).Milliseconds())
			}
			c.announceRelease(rctx)
			cancel()
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		if time.Since(lastSaid) >= time.Second {
			lastSaid = time.Now()
			c.sayWaiting(left, began)
		}
		select {
		case <-ctx.Done():
			return left
		case <-c.stop:
			return left
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sayWaiting logs what a hand-off still waits for, once a second: the
// groups of the shards left with sends in flight or outcomes unrecorded.
func (c *cluster) sayWaiting(left []int, began time.Time) {
	in := map[int]bool{}
	for _, sh := range left {
		in[sh] = true
	}
	groups := c.t.work.sending(func(key string) bool { return in[store.ShardOf(key)] }, false)
	ids := slices.Sorted(maps.Keys(groups))
	inFlight, unrecorded := 0, 0
	for _, n := range groups {
		inFlight += n.inFlight
		unrecorded += n.unrecorded
	}
	c.t.log.Info("hand-off waiting for sends", "shards", left, "groups", ids, "in_flight", inFlight,
		"unrecorded", unrecorded, "waited_ms", time.Since(began).Milliseconds())
}

// leaseChange is the item a node adds to changesChannel when it released
// shards ("@leases") or left the members ("@leases:<node>"): every node
// balances at once (counting a node that left out of the shares without
// waiting for its next heartbeat). It cannot be a group id, and nodes of
// earlier versions skip it (not "<id>:<seq>").
const leaseChange = "@leases"

// Leave hands every shard off at once; serve calls it on SIGTERM, before
// Stop. The node leaves the members (the others' shares grow to cover
// it), stops claiming in every shard, and releases each shard as soon as
// its sends are recorded (drainAndRelease). A shard still sending after
// DrainTimeout stays held: Stop commits its outcomes, and StopCluster
// releases it.
func (t *Tracker) Leave(ctx context.Context) error {
	c := t.cluster.Load()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	if c.leaving {
		c.mu.Unlock()
		return nil
	}
	c.leaving = true
	held := heldList(c.held)
	c.mu.Unlock()
	var err error
	if lerr := c.cfg.Members.Leave(ctx, c.cfg.Node); lerr != nil {
		err = fmt.Errorf("leave the members: %w", lerr)
	} else {
		c.announce(ctx, leaseChange+":"+c.cfg.Node) // the others' shares grow now
	}
	if kept := c.drainAndRelease(ctx, held); len(kept) > 0 {
		t.log.Warn("leaving: shards still sending; released after Stop", "shards", len(kept))
	}
	return err
}

// announceRelease tells every node that shards were released (leaseChange).
func (c *cluster) announceRelease(ctx context.Context) { c.announce(ctx, leaseChange) }

func (c *cluster) announce(ctx context.Context, item string) {
	if c.cfg.Notifier == nil {
		return
	}
	if err := c.cfg.Notifier.Notify(ctx, changesChannel, item); err != nil {
		c.t.log.Warn("announce a lease change", "err", err)
	}
}

// heard handles a leaseChange item from another node: the keeper balances
// at once, after reading the members again when a node left (announced
// after its row was deleted, so the read no longer counts it).
func (c *cluster) heard(item string) {
	if left, ok := strings.CutPrefix(item, leaseChange+":"); ok && left != c.cfg.Node {
		c.renewSoon()
		return
	}
	c.poke()
}

// resumeShards wakes the sending groups of newly held shards (activation
// recovers them: a send whose previous owner died between claim and
// outcome becomes unconfirmed), fires their due reminders and routes their
// pending webhooks.
func (t *Tracker) resumeShards(shards []int) {
	want := map[int]bool{}
	for _, sh := range shards {
		want[sh] = true
	}
	ctx, cancel := context.WithTimeout(t.bg, time.Minute)
	defer cancel()
	cursor := ""
	for {
		rows, next, err := t.st.ListGroups(ctx, store.GroupQuery{Status: crewcast.GroupSending, Cursor: cursor, Limit: 1000})
		if err != nil {
			t.log.Warn("resume groups of acquired shards", "err", fmt.Errorf("list sending groups: %w", err))
			break
		}
		for _, g := range rows {
			if want[store.ShardOf(g.ID)] {
				t.groups.Tell(g.ID, msgKick{})
			}
		}
		if next == "" || len(rows) == 0 {
			break
		}
		cursor = next
	}
	t.groups.NudgeReminders()
	t.sweepSoon()
}

// heldReminders is the reminder store seen by one node: only the
// reminders of the shards it holds fall due here.
type heldReminders struct {
	actor.ReminderStore
	owns func(key string) bool
}

func (h heldReminders) DueReminders(ctx context.Context, before time.Time, limit int) ([]actor.Reminder, error) {
	rs, err := h.ReminderStore.DueReminders(ctx, before, limit)
	if err != nil {
		return nil, err
	}
	out := rs[:0]
	for _, r := range rs {
		if h.owns(r.Key) {
			out = append(out, r)
		}
	}
	return out, nil
}

// GroupOwner tells the API where group id's commands must run: local when
// this node holds its shard (or is a single node), else the advertise URL
// of the node whose live lease holds it ("" while the shard is moving or
// its holder is unknown: answer 503 and let the client retry).
func (t *Tracker) GroupOwner(ctx context.Context, id string) (url string, local bool, err error) {
	c := t.cluster.Load()
	if c == nil || c.holds(store.ShardOf(id)) {
		return "", true, nil
	}
	leases, err := t.st.ListLeases(ctx)
	if err != nil {
		return "", false, fmt.Errorf("%w: list leases: %w", ErrUnavailable, err)
	}
	sh := store.ShardOf(id)
	now := time.Now()
	for _, l := range leases {
		if l.Shard != sh || l.Owner == c.cfg.Node || l.ExpiresAt.IsZero() || !l.ExpiresAt.After(now) {
			continue
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.nodes {
			if n.ID == l.Owner && n.Alive {
				return n.AdvertiseURL, false, nil
			}
		}
	}
	return "", false, nil
}

// ownedID wraps an id generator so that a new group lands on a shard this
// node holds: its creation commits here instead of being fenced (any node
// can create a group without forwarding). A node holding nothing gets an
// ordinary id, and the creation fails as unavailable.
func (t *Tracker) ownedID(next func() string) func() string {
	return func() string {
		for range 4 * store.NumShards {
			if id := next(); t.ownsKey(id) {
				return id
			}
		}
		return next()
	}
}

// shareChanges tells the other nodes about this node's commits (those the
// local hub carries with their events; changes heard from other nodes
// carry none and are not repeated), a batch per NOTIFY.
func (c *cluster) shareChanges() {
	sub := c.t.hub.Subscribe("")
	defer sub.Close()
	var last time.Time
	for {
		latest := map[string]uint64{}
		add := func(ch Change) {
			if len(ch.Events) > 0 && ch.Seq > latest[ch.GroupID] {
				latest[ch.GroupID] = ch.Seq
			}
		}
		select {
		case <-c.stop:
			return
		case ch := <-sub.C:
			add(ch)
		}
		if len(latest) == 0 {
			continue
		}
		// At most one round per notifyEvery, as notify: under load every
		// flush of the commit batcher would otherwise cost a NOTIFY (a
		// write transaction that wakes every listening session). The
		// changes that come meanwhile join the round.
		if wait := notifyEvery - time.Since(last); wait > 0 {
			timer := time.NewTimer(wait)
			for waiting := true; waiting; {
				select {
				case <-c.stop:
					timer.Stop()
					return
				case ch := <-sub.C:
					add(ch)
				case <-timer.C:
					waiting = false
				}
			}
		}
		for more := true; more; {
			select {
			case ch := <-sub.C:
				add(ch)
			default:
				more = false
			}
		}
		last = time.Now()
		var p payloads // one NOTIFY transaction for the round
		for id, seq := range latest {
			p.add(id+":"+strconv.FormatUint(seq, 10), ',')
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TTL/3)
		if err := c.cfg.Notifier.Notify(ctx, changesChannel, p.done()...); err != nil {
			c.t.log.Warn("share changes", "err", err)
		}
		cancel()
	}
}

// changed handles a changesChannel payload: lease changes (leaseChange)
// make the keeper balance; other nodes' commits are published on the
// local hub, with their seq only (a stream reads the events from the
// journal).
func (c *cluster) changed(payload string) {
	for _, item := range strings.Split(payload, ",") {
		if item == leaseChange || strings.HasPrefix(item, leaseChange+":") {
			c.heard(item) // shards were released, or a node left: take our share now
			continue
		}
		id, seqText, ok := strings.Cut(item, ":")
		seq, err := strconv.ParseUint(seqText, 10, 64)
		if !ok || err != nil || id == "" || c.t.ownsKey(id) {
			continue // our own commits are on the hub already
		}
		c.t.hub.Publish(Change{GroupID: id, Seq: seq})
	}
}
