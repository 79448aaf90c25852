package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// routeReq is an inbox entry to route to its group.
type routeReq struct {
	ref    store.InboxRef
	events []crewcast.Event
}

// router routes newly ingested webhooks until Stop.
func (t *Tracker) router() {
	defer t.wg.Done()
	for {
		select {
		case <-t.stop:
			return
		case r := <-t.route:
			ctx, cancel := context.WithTimeout(t.bg, 10*time.Second)
			if err := t.routeEntry(ctx, r.ref, r.events); err != nil {
				// The entry is durable and unprocessed: the sweep retries it.
				t.log.Warn("route webhook", "provider", r.ref.Provider, "err", err)
			}
			cancel()
		}
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
		timer.Reset(t.cfg.SweepInterval)
	}
}

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
			t.groups.Tell(g.ID, msgKick{})
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
	select {
	case t.sweepNow <- struct{}{}:
	default:
	}
}

// Sweep routes every unprocessed inbox entry not already on its way to a
// group. It runs periodically; tests call it directly.
func (t *Tracker) Sweep(ctx context.Context) error {
	var after store.InboxRef
	for {
		entries, err := t.st.PendingInbox(ctx, after, 500)
		if err != nil {
			return fmt.Errorf("read pending inbox: %w", err)
		}
		for _, e := range entries {
			after = store.InboxRef{Provider: e.Provider, EventID: e.EventID}
			t.mu.Lock()
			_, busy := t.routing[inboxKey{e.Provider, e.EventID}]
			t.mu.Unlock()
			if busy {
				continue
			}
			var events []crewcast.Event
			if err := json.Unmarshal(e.Payload, &events); err != nil || len(events) == 0 {
				// Cannot be applied by anyone: acknowledge rather than loop.
				t.log.Error("unreadable inbox entry acknowledged", "provider", e.Provider, "err", err)
				if err := t.st.AckInbox(ctx, []store.InboxRef{after}); err != nil {
					return err
				}
				continue
			}
			if err := t.routeEntry(ctx, after, events); err != nil {
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
// unknown message id is parked (and offered for reconciliation).
func (t *Tracker) routeEntry(ctx context.Context, ref store.InboxRef, events []crewcast.Event) error {
	ev := events[0]
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

func (t *Tracker) deliver(id string, r routed) {
	if !t.ownsKey(id) {
		t.wakeOwner(store.ShardOf(id)) // held by another node: it applies the entry from the shared inbox (cluster.go)
		return
	}
	k := inboxKey{r.ref.Provider, r.ref.EventID}
	t.mu.Lock()
	if _, busy := t.routing[k]; busy {
		t.mu.Unlock()
		return
	}
	t.routing[k] = struct{}{}
	t.mu.Unlock()
	t.post(id, func(w *groupWork) { w.entries = append(w.entries, r) })
}

// adoptParked routes again the parked webhooks of message ids a commit just
// gave a route.
func (t *Tracker) adoptParked(messageIDs []string) {
	provider := t.cfg.Provider.Name()
	var found []string
	t.mu.Lock()
	for _, id := range messageIDs {
		k := msgKey(provider, id)
		if _, ok := t.parked[k]; ok {
			delete(t.parked, k)
			found = append(found, id)
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
		for _, id := range found {
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
				if err := t.routeEntry(ctx, store.InboxRef{Provider: e.Provider, EventID: e.EventID}, events); err != nil {
					t.log.Warn("adopt parked webhook; the sweep will retry", "err", err)
				}
			}
		}
	}()
}

// retrySignal re-signals a group after a failed commit, with a pause so a
// store outage is not hammered.
func (t *Tracker) retrySignal(id string) {
	t.mu.Lock()
	if w := t.work[id]; w != nil {
		w.signaled = true
	}
	t.mu.Unlock()
	t.after(250*time.Millisecond, func() {
		if !t.actorsDown.Load() {
			t.signal(id)
		}
	})
}

func (t *Tracker) notifyIdle() {
	select {
	case t.idle <- struct{}{}:
	default:
	}
}

// unmatchedLog records inbound messages that match no group, so that
// nothing a person sends is dropped: a journal of its own (key
// "unmatched"), the replies projection, and STOP/START suppressions.
type unmatchedLog struct {
	t   *Tracker
	mu  sync.Mutex
	seq uint64
	// done remembers the latest entries this process recorded (ring holds
	// them in order; ring[next] is the oldest once full). The sweep reads
	// the inbox outside the commit that records and acknowledges an entry,
	// so it may hand over one just recorded; no group's state dedupes
	// these, so the log does.
	done map[inboxKey]struct{}
	ring []inboxKey
	next int
}

const unmatchedKey = "unmatched"

// unmatchedDone bounds the remembered entries: far more than one sweep
// pass can have read stale.
const unmatchedDone = 4096

// unmatchedReply is the journal event of an unmatched inbound message. It
// names the inbox event only: the number and text live in the replies
// projection, where retention redacts them.
type unmatchedReply struct {
	Provider string `json:"provider"`
	EventID  string `json:"event_id"`
	Keyword  string `json:"keyword,omitempty"`
}

func (u *unmatchedLog) load(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.t.st.Load(ctx, unmatchedKey, 0, func(e actor.Event) error {
		u.seq = e.Seq
		return nil
	})
}

func (u *unmatchedLog) record(ctx context.Context, ref store.InboxRef, events []crewcast.Event) error {
	t := u.t
	now := t.cfg.Clock.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	key := inboxKey{ref.Provider, ref.EventID}
	if _, ok := u.done[key]; ok {
		return nil // recorded and acknowledged by an earlier commit
	}
	unit := actor.Unit{Key: unmatchedKey, ExpectSeq: u.seq}
	var eff store.Effects
	for _, ev := range events {
		kw := group.ParseKeyword(ev.Text)
		data, err := json.Marshal(unmatchedReply{Provider: ev.Provider, EventID: ev.EventID, Keyword: kw})
		if err != nil {
			return err
		}
		unit.Events = append(unit.Events, actor.Event{Seq: u.seq + uint64(len(unit.Events)) + 1, Type: "reply.unmatched", Data: data, Time: now})
		eff.Replies = append(eff.Replies, store.Reply{Provider: ev.Provider, EventID: ev.EventID, Number: ev.From, To: ev.To, Text: ev.Text, Media: ev.Media, ReceivedAt: now})
		switch kw {
		case group.KeywordStop:
			eff.Suppress = append(eff.Suppress, store.Suppression{Number: ev.From, Reason: "stop", CreatedAt: now})
		case group.KeywordStart:
			eff.Unsuppress = append(eff.Unsuppress, ev.From)
		}
	}
	eff.InboxDone = []store.InboxRef{{Provider: ref.Provider, EventID: ref.EventID, Target: unmatchedKey}}
	unit.Effects = []any{eff}
	defer t.gate.write(suppressedNumbers(eff.Suppress))() // see suppress.go
	if err := t.committer.Commit(ctx, unit); err != nil {
		if errors.Is(err, actor.ErrConflict) {
			// Someone else appended (another node): catch up, let the sweep retry.
			u.seq = 0
			if lerr := t.st.Load(ctx, unmatchedKey, 0, func(e actor.Event) error { u.seq = e.Seq; return nil }); lerr != nil {
				err = errors.Join(err, lerr)
			}
		}
		return fmt.Errorf("record unmatched reply: %w", err)
	}
	u.seq += uint64(len(unit.Events))
	u.remember(key)
	t.hub.Publish(Change{GroupID: unmatchedKey, Seq: u.seq})
	return nil
}

func (u *unmatchedLog) remember(key inboxKey) {
	if u.done == nil {
		u.done = make(map[inboxKey]struct{})
	}
	if len(u.ring) < unmatchedDone {
		u.ring = append(u.ring, key)
	} else {
		delete(u.done, u.ring[u.next])
		u.ring[u.next] = key
		u.next = (u.next + 1) % unmatchedDone
	}
	u.done[key] = struct{}{}
}
