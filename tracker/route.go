package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Parked receipts expire: a receipt whose message id has no route waits
// for its send result to commit (seconds) or for reconciliation with an
// unconfirmed recipient (within the group's claim window, 1 h by default).
// Past Config.ParkedTTL neither can happen any more, so the sweep
// acknowledges it as expired (target "expired"), which drops its payload
// — the number and text it carried — and leaves the row to the retention
// purge of processed inbox entries. Without this, receipts for messages
// crewcast never sent were routed again by every sweep for good.
const (
	DefaultParkedTTL = 2 * time.Hour
	MaxParkedTTL     = 7 * 24 * time.Hour
	// expiredTarget is the inbox target of an expired parked receipt.
	expiredTarget = "expired"
)

// ParkedMetrics is implemented by Metrics that count expired parked
// receipts (package metrics does); others are not told.
type ParkedMetrics interface {
	ParkedExpired(provider string)
}

// routeReq is an inbox entry to route to its group.
type routeReq struct {
	ref    store.InboxRef
	events []crewcast.Event
}

// routeBatchMax bounds the webhooks a router takes at once.
const routeBatchMax = 128

// router routes newly ingested webhooks until Stop, every one waiting at
// once: the message-id routes the batch needs and this node has not cached
// are read in one query first (cacheRoutes).
func (t *Tracker) router() {
	defer t.wg.Done()
	for {
		var batch []routeReq
		select {
		case <-t.stop:
			return
		case r := <-t.route:
			batch = append(batch, r)
		}
		for more := true; more && len(batch) < routeBatchMax; {
			select {
			case r := <-t.route:
				batch = append(batch, r)
			default:
				more = false
			}
		}
		ctx, cancel := context.WithTimeout(t.bg, 10*time.Second)
		firsts := make([]crewcast.Event, 0, len(batch))
		for _, r := range batch {
			if len(r.events) > 0 {
				firsts = append(firsts, r.events[0])
			}
		}
		t.cacheRoutes(ctx, firsts)
		for _, r := range batch {
			if err := t.routeEntry(ctx, r.ref, r.events, time.Time{}); err != nil {
				// The entry is durable and unprocessed: the sweep retries it.
				t.log.Warn("route webhook", "provider", r.ref.Provider, "err", err)
			}
			t.routed.done.Add(1)
		}
		cancel()
	}
}

// cacheRoutes reads into the route cache, in one query, the message-id
// routes of the status webhooks (each given by its first event) that are
// not cached. A node receives webhooks for groups other nodes sent (a
// cluster behind a load balancer), whose routes it never wrote: without
// this, each costs a round trip. What the query does not find (a webhook
// that beat its send result) takes routeEntry's usual path, one lookup and
// the parked mark.
func (t *Tracker) cacheRoutes(ctx context.Context, firsts []crewcast.Event) {
	br, ok := t.st.(store.RouteBatchReader)
	if !ok {
		return
	}
	var keys []string
	for _, ev := range firsts {
		if ev.Kind == crewcast.KindInbound || ev.MessageID == "" {
			continue
		}
		k := msgKey(ev.Provider, ev.MessageID)
		if _, ok := t.routes.get(k); !ok {
			keys = append(keys, k)
		}
	}
	if len(keys) < 2 {
		return // one lookup either way
	}
	got, err := br.GetRoutes(ctx, keys)
	if err != nil {
		t.log.Warn("read routes of a webhook batch; reading them one by one", "err", err)
		return
	}
	for k, r := range got {
		t.routes.put(k, r.Value)
	}
}

// sweeper routes unprocessed inbox entries at start and every SweepInterval:
// webhooks acknowledged before a crash, ones whose routing failed, and
// parked ones whose route may now exist.
func (t *Tracker) sweeper() {
	defer t.wg.Done()
	resumed := false
	timer := t.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-t.sweepNow:
			timer.Stop()
		case <-timer.C():
		}
		asked := t.sweeps.asked.Load() // every sweepSoon so far is served by this pass
		ctx, cancel := context.WithTimeout(t.bg, time.Minute)
		if !resumed {
			if err := t.ResumeGroups(ctx); err != nil {
				t.log.Warn("resume groups after start; will retry", "err", err)
			} else {
				resumed = true
			}
		}
		if err := t.Sweep(ctx); err != nil {
			t.log.Warn("inbox sweep", "err", err)
		}
		cancel()
		t.sweeps.served.Store(asked)
		t.sweeps.passes.Add(1)
		timer.Reset(t.cfg.SweepInterval)
	}
}

// sweepCounts counts, for tests, what the sweeper was asked and did:
// sweepSoon calls (asked), passes done, and the asked count the latest
// pass began after (served). Once served reaches asked as read at some
// moment, every sweep asked for before that moment is over.
type sweepCounts struct{ asked, served, passes atomic.Uint64 }

// ResumeGroups wakes every group that still has recipients to send to (or
// sends whose outcome a previous process never recorded): activation
// recovers it — crashed sends become unconfirmed — and claiming resumes.
// Start runs it once; groups waiting only for receipts are woken by their
// durable reminders instead.
func (t *Tracker) ResumeGroups(ctx context.Context) error {
	cursor := ""
	for {
		rows, next, err := t.st.ListGroups(ctx, store.GroupQuery{Status: crewcast.GroupSending, Cursor: cursor, Limit: 1000})
		if err != nil {
			return fmt.Errorf("list sending groups: %w", err)
		}
		for _, g := range rows {
			if t.ownsKey(g.ID) { // another node's groups are theirs (cluster.go)
				t.groups.Tell(g.ID, msgKick{})
			}
		}
		if next == "" || len(rows) == 0 {
			return nil
		}
		cursor = next
	}
}

// sweepSoon asks the sweeper for a pass now: a recipient just became
// unconfirmed, and a parked webhook may prove its send went out.
func (t *Tracker) sweepSoon() {
	t.sweeps.asked.Add(1) // before the send: the pass that takes it reads the count after
	select {
	case t.sweepNow <- struct{}{}:
	default:
	}
}

// Sweep routes every unprocessed inbox entry not already on its way to a
// group. It runs periodically; tests call it directly.
func (t *Tracker) Sweep(ctx context.Context) error {
	// Passes do not overlap, so an entry one pass expires is not read as
	// pending by another.
	t.sweepMu.Lock()
	defer t.sweepMu.Unlock()
	var after store.InboxRef
	for {
		entries, err := t.st.PendingInbox(ctx, after, 500)
		if err != nil {
			return fmt.Errorf("read pending inbox: %w", err)
		}
		// Decode the entries not on their way to a group, then read the
		// page's uncached routes in one query.
		var firsts []crewcast.Event
		decoded := make([][]crewcast.Event, len(entries))
		decodeErr := make([]error, len(entries))
		skip := make([]bool, len(entries))
		for i, e := range entries {
			skip[i] = t.work.routingMarked(inboxKey{e.Provider, e.EventID})
			if skip[i] {
				continue
			}
			decodeErr[i] = json.Unmarshal(e.Payload, &decoded[i])
			if decodeErr[i] == nil && len(decoded[i]) > 0 {
				firsts = append(firsts, decoded[i][0])
			}
		}
		t.cacheRoutes(ctx, firsts)
		for i, e := range entries {
			after = store.InboxRef{Provider: e.Provider, EventID: e.EventID}
			if skip[i] || t.work.routingMarked(inboxKey{e.Provider, e.EventID}) {
				continue
			}
			events, err := decoded[i], decodeErr[i]
			if err != nil || len(events) == 0 {
				// Cannot be applied by anyone: acknowledge rather than loop.
				t.log.Error("unreadable inbox entry acknowledged", "provider", e.Provider, "err", err)
				if err := t.st.AckInbox(ctx, []store.InboxRef{after}); err != nil {
					return err
				}
				continue
			}
			if err := t.routeEntry(ctx, after, events, e.ReceivedAt); err != nil {
				return err
			}
		}
		if len(entries) < 500 {
			return nil
		}
	}
}

// routeEntry finds the group an entry belongs to and hands it over; an
// inbound message for no group is kept as unmatched; a status event for an
// unknown message id is parked (and offered for reconciliation), or
// expired when it was received (receivedAt; zero: just now) more than
// ParkedTTL ago.
func (t *Tracker) routeEntry(ctx context.Context, ref store.InboxRef, events []crewcast.Event, receivedAt time.Time) error {
	ev := events[0]
	if id, ok := emailAnswerGroup(ev); ok { // an answer by email link (ladder.go)
		t.deliver(id, routed{ref: ref, events: events})
		return nil
	}
	if ev.Kind == crewcast.KindInbound {
		var keys []string
		if len(ev.CC) > 0 {
			others := []string{ev.From}
			for _, n := range ev.CC {
				if n != ev.To && n != ev.From {
					others = append(others, n)
				}
			}
			keys = append(keys, threadKey(ev.To, others))
		}
		keys = append(keys, convKey(ev.To, ev.From))
		if cr, err := t.routeByCode(ctx, ev); err != nil { // reply codes (replycodes.go)
			return err
		} else if cr.group != "" {
			t.deliver(cr.group, routed{ref: ref, events: events})
			return nil
		} else if cr.ambiguous {
			if !t.ownsKey(unmatchedKey) {
				t.wakeOwner(store.ShardOf(unmatchedKey))
				return nil
			}
			return t.unmatched.recordAmbiguous(ctx, ref, events, cr.listing)
		}
		id, err := t.lookupRoute(ctx, keys...)
		if err != nil {
			return err
		}
		if id == "" {
			if !t.ownsKey(unmatchedKey) {
				t.wakeOwner(store.ShardOf(unmatchedKey)) // the unmatched journal lives on another node (cluster.go)
				return nil
			}
			return t.unmatched.record(ctx, ref, events)
		}
		t.deliver(id, routed{ref: ref, events: events})
		return nil
	}
	keys := []string{msgKey(ev.Provider, ev.MessageID)}
	if ev.GroupMessageID != "" {
		keys = append(keys, msgKey(ev.Provider, ev.GroupMessageID))
	}
	// Most webhooks are for messages whose route is already cached.
	for _, k := range keys {
		if id, ok := t.routes.get(k); ok {
			t.deliver(id, routed{ref: ref, events: events})
			return nil
		}
	}
	// Mark the message id parked before looking for its route in the
	// store: a send result committing in between then finds the mark and
	// adopts it.
	t.mu.Lock()
	t.parked[keys[0]] = struct{}{}
	t.mu.Unlock()
	id, err := t.lookupRoute(ctx, keys...)
	if err != nil {
		return err
	}
	if id != "" {
		t.mu.Lock()
		delete(t.parked, keys[0])
		t.mu.Unlock()
		t.deliver(id, routed{ref: ref, events: events})
		return nil
	}
	if !receivedAt.IsZero() && t.cfg.Clock.Now().Sub(receivedAt) >= t.cfg.ParkedTTL {
		return t.expireParked(ctx, ref, keys[0])
	}
	// Parked: the send result that writes the route may not be committed
	// yet (the webhook beat it), or the send's outcome was lost. Offer it
	// for reconciliation to the group last sent to that recipient.
	id, err = t.lookupRoute(ctx, convKey(ev.From, ev.To))
	if err != nil || id == "" {
		return err
	}
	t.deliver(id, routed{ref: ref, events: events, orphan: true})
	return nil
}

// expireParked acknowledges a parked receipt past ParkedTTL (see
// DefaultParkedTTL): the store drops its payload with the acknowledgement.
func (t *Tracker) expireParked(ctx context.Context, ref store.InboxRef, key string) error {
	if err := t.st.AckInbox(ctx, []store.InboxRef{{Provider: ref.Provider, EventID: ref.EventID, Target: expiredTarget}}); err != nil {
		return fmt.Errorf("expire parked webhook: %w", err)
	}
	// Other receipts for the same message id still parked set the mark
	// again at their next sweep.
	t.mu.Lock()
	delete(t.parked, key)
	t.mu.Unlock()
	if m, ok := t.cfg.Metrics.(ParkedMetrics); ok {
		m.ParkedExpired(ref.Provider)
	}
	t.log.Info("parked webhook expired", "provider", ref.Provider, "after", t.cfg.ParkedTTL)
	return nil
}

func (t *Tracker) lookupRoute(ctx context.Context, keys ...string) (string, error) {
	for _, k := range keys {
		if v, ok := t.routes.get(k); ok {
			return v, nil
		}
		r, err := t.st.GetRoute(ctx, k)
		switch {
		case err == nil:
			t.routes.put(k, r.Value)
			return r.Value, nil
		case !errors.Is(err, actor.ErrNotFound):
			return "", fmt.Errorf("read route: %w", err)
		}
	}
	return "", nil
}

// routeCache keeps message-id routes in memory: once written they never
// change (retention deletes them only with their group, and a webhook for a
// deleted group is acknowledged by its empty actor). Conversation routes
// move to each new group, so they are always read from the store.
type routeCache struct {
	mu sync.Mutex
	m  map[string]string
}

// routeCacheMax bounds the cache; past it, half the entries are dropped.
const routeCacheMax = 100000

func (c *routeCache) get(key string) (string, bool) {
	if !strings.HasPrefix(key, "m:") {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *routeCache) put(key, value string) {
	if !strings.HasPrefix(key, "m:") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]string)
	}
	if len(c.m) >= routeCacheMax {
		n := 0
		for k := range c.m { // map order is random: a random half goes
			delete(c.m, k)
			if n++; n >= routeCacheMax/2 {
				break
			}
		}
	}
	c.m[key] = value
}

// deliver hands routed webhook r to group id's actor. The actor is told
// at once unless it was told already and has not taken its work yet, in
// which case r goes with that work: a webhook never waits for company.
// Receipts to one group still share a commit when there is something to
// share: while the actor commits (an fsync), what arrives queues up, and
// its next turn takes all of it into one commit (and the store's writer
// puts concurrent commits and inbox inserts into one transaction). An
// earlier design waited a fixed 10 ms for more receipts before telling
// the actor; that halved the WAL written per receipt at the soak's pace
// but added the wait to every webhook → event stream latency, even on an
// idle group (docs/performance.md, "Adaptive batching").
func (t *Tracker) deliver(id string, r routed) {
	if !t.ownsKey(id) {
		t.forwardEntry(id, r) // held by another node: it applies the entry (cluster.go)
		return
	}
	queued, signaled := t.work.route(id, r)
	if !queued || signaled {
		return // on its way already, or the actor was told and takes r too
	}
	t.work.wake(id)
}

// adoptParked routes again the parked webhooks of message ids a commit just
// gave a route.
func (t *Tracker) adoptParked(keys []string) {
	var found []string
	t.mu.Lock()
	for _, k := range keys {
		if _, ok := t.parked[k]; ok {
			delete(t.parked, k)
			found = append(found, k)
		}
	}
	t.mu.Unlock()
	if len(found) == 0 {
		return
	}
	// Stop waits for this goroutine; after Stop began, leave the parked
	// entries to the next start's sweep (they are durable). The check and
	// the Add happen under t.mu, which Stop takes before waiting.
	t.mu.Lock()
	if t.closing.Load() {
		t.mu.Unlock()
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		ctx, cancel := context.WithTimeout(t.bg, 30*time.Second)
		defer cancel()
		for _, k := range found {
			provider, id, _ := strings.Cut(strings.TrimPrefix(k, "m:"), ":")
			entries, err := t.st.InboxByMessageID(ctx, provider, id)
			if err != nil {
				t.log.Warn("adopt parked webhooks; the sweep will retry", "err", err)
				return
			}
			for _, e := range entries {
				var events []crewcast.Event
				if err := json.Unmarshal(e.Payload, &events); err != nil || len(events) == 0 {
					continue
				}
				if err := t.routeEntry(ctx, store.InboxRef{Provider: e.Provider, EventID: e.EventID}, events, e.ReceivedAt); err != nil {
					t.log.Warn("adopt parked webhook; the sweep will retry", "err", err)
				}
			}
		}
	}()
}

func (t *Tracker) notifyIdle() {
	select {
	case t.idle <- struct{}{}:
	default:
	}
}
