package tracker

import (
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

// workQueue holds, per group, what has happened to the group but is not
// committed yet: provider results and lookups (from the send pool), routed
// webhooks (from the router), the sends in flight, and the routing marks of
// webhooks handed to a group and not yet acknowledged. Producers post to
// it from any goroutine; the group's actor takes the work out, commits it,
// and only then reports it done, so an item leaves the queue only after
// the commit that records it. It lives outside the actor instance so that
// nothing is lost when an instance passivates, restarts or fails a commit.
//
// Its lock is its own and is held only over map operations: never across a
// commit, a store call or a message to an actor.
type workQueue struct {
	// tell says msgWork to group id's actor; false when refused (mailbox
	// full, shutting down).
	tell func(id string) bool
	// after runs f once d has passed, unless the actors shut down first.
	after func(d time.Duration, f func())
	// down reports that the actors are gone: refused signals stop there.
	down func() bool
	// owns reports whether this node commits for key (cluster.go): work of
	// a group held elsewhere keeps nobody waiting.
	owns func(key string) bool
	// idle is told whenever work left the queue (Stop waits for it).
	idle func()

	mu      sync.Mutex
	work    map[string]*groupWork
	routing map[inboxKey]struct{} // entries handed to a group and not yet acknowledged
}

type inboxKey struct{ provider, eventID string }

// groupWork is one group's part of the queue.
type groupWork struct {
	results  []sendResult
	lookups  []lookupResult
	entries  []routed
	signaled bool // the actor was told (msgWork) and has not taken the work yet
	// inflight holds the send ids claimed and queued in this process whose
	// outcome is not committed yet; recovery leaves those alone.
	inflight map[string]struct{}
}

func (w *groupWork) empty() bool {
	return len(w.results) == 0 && len(w.lookups) == 0 && len(w.entries) == 0 && len(w.inflight) == 0
}

// queued reports whether the group has items for its actor to apply.
func (w *groupWork) queued() bool {
	return len(w.results) > 0 || len(w.lookups) > 0 || len(w.entries) > 0
}

// routed is an inbox entry handed to a group.
type routed struct {
	ref    store.InboxRef
	events []crewcast.Event
	// orphan: the entry's message id has no route; the group should try to
	// reconcile it with an unconfirmed recipient, and leave it parked if not.
	orphan bool
}

func newWorkQueue(tell func(string) bool, after func(time.Duration, func()), down func() bool,
	owns func(string) bool, idle func()) *workQueue {
	return &workQueue{tell: tell, after: after, down: down, owns: owns, idle: idle,
		work: make(map[string]*groupWork), routing: make(map[inboxKey]struct{})}
}

// get returns id's work, creating it; q.mu is held.
func (q *workQueue) get(id string) *groupWork {
	w := q.work[id]
	if w == nil {
		w = &groupWork{}
		q.work[id] = w
	}
	return w
}

// ---- producers ----

// post adds to a group's work and makes sure the actor is told once.
func (q *workQueue) post(id string, add func(w *groupWork)) {
	q.mu.Lock()
	w := q.get(id)
	add(w)
	signal := !w.signaled
	w.signaled = true
	q.mu.Unlock()
	if signal {
		q.signal(id)
	}
}

func (q *workQueue) signal(id string) {
	if q.tell(id) {
		return
	}
	// Dead-lettered (mailbox full or shutting down): the work stays queued;
	// try again shortly unless the actors are gone.
	q.mu.Lock()
	if w := q.work[id]; w != nil {
		w.signaled = false
	}
	q.mu.Unlock()
	if !q.down() {
		q.after(retryPause, func() {
			q.mu.Lock()
			w := q.work[id]
			again := w != nil && !w.signaled && !w.empty()
			if again {
				w.signaled = true
			}
			q.mu.Unlock()
			if again {
				q.signal(id)
			}
		})
	}
}

// postResult queues a send's outcome for its group. The outcome of a
// group whose shard another node holds now is dropped: it cannot be
// committed here (the owner counts the send unconfirmed, claimed without
// an outcome), and queued it would only wake the actor to be fenced.
func (q *workQueue) postResult(id string, r sendResult) {
	if !q.owns(id) {
		q.mu.Lock()
		if w := q.work[id]; w != nil {
			delete(w.inflight, r.send.ID)
		}
		q.mu.Unlock()
		q.idle()
		return
	}
	q.post(id, func(w *groupWork) { w.results = append(w.results, r) })
}

// postLookup queues a status lookup's answer; one for a group held
// elsewhere is dropped (the owner's reminders look again).
func (q *workQueue) postLookup(id string, r lookupResult) {
	if !q.owns(id) {
		return
	}
	q.post(id, func(w *groupWork) { w.lookups = append(w.lookups, r) })
}

// wake tells group id's actor about entries queued without a signal (see
// route): it posts nothing.
func (q *workQueue) wake(id string) { q.post(id, func(*groupWork) {}) }

// route queues webhook r for group id and marks it routing, unless it is
// on its way to a group already (queued false). signaled reports that the
// actor was told already and will take r with the rest; otherwise the
// caller wakes it (deliver, route.go).
func (q *workQueue) route(id string, r routed) (queued, signaled bool) {
	k := inboxKey{r.ref.Provider, r.ref.EventID}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, busy := q.routing[k]; busy {
		return false, false
	}
	q.routing[k] = struct{}{}
	w := q.get(id)
	w.entries = append(w.entries, r)
	return true, w.signaled
}

// hasQueued reports whether group id has items for its actor to apply.
func (q *workQueue) hasQueued(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.work[id]
	return w != nil && w.queued()
}

// routingMarked reports whether inbox entry k is on its way to a group
// (the sweep leaves it alone then).
func (q *workQueue) routingMarked(k inboxKey) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.routing[k]
	return ok
}

// ---- the group's actor ----

// take hands the actor everything queued for group id.
func (q *workQueue) take(id string) (results []sendResult, lookups []lookupResult, entries []routed) {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.get(id)
	results, lookups, entries = w.results, w.lookups, w.entries
	w.results, w.lookups, w.entries = nil, nil, nil
	w.signaled = false
	return results, lookups, entries
}

// requeue puts back what a failed commit took, ahead of what came since,
// and tells the actor again after a pause, so a store outage is not
// hammered. Its sends stay in flight.
func (q *workQueue) requeue(id string, results []sendResult, lookups []lookupResult, entries []routed) {
	q.mu.Lock()
	w := q.get(id)
	w.results = append(results, w.results...)
	w.lookups = append(lookups, w.lookups...)
	w.entries = append(entries, w.entries...)
	w.signaled = true
	q.mu.Unlock()
	q.after(250*time.Millisecond, func() {
		if !q.down() {
			q.signal(id)
		}
	})
}

// done says a commit recorded results and entries (taken by take): their
// sends leave the in-flight set and the entries' routing marks go (an
// entry left parked is routed again by a later sweep or adoption).
func (q *workQueue) done(id string, results []sendResult, entries []routed) {
	q.mu.Lock()
	if w := q.work[id]; w != nil {
		for _, r := range results {
			delete(w.inflight, r.send.ID)
		}
	}
	for _, e := range entries {
		delete(q.routing, inboxKey{e.ref.Provider, e.ref.EventID})
	}
	q.mu.Unlock()
	q.idle()
}

// unroute clears the routing marks of entries that were not applied (they
// are still pending in the inbox, for a later sweep).
func (q *workQueue) unroute(entries []routed) {
	q.mu.Lock()
	for _, e := range entries {
		delete(q.routing, inboxKey{e.ref.Provider, e.ref.EventID})
	}
	q.mu.Unlock()
	q.idle()
}

// forget drops the uncommitted work of a group whose shard moved to another
// node (taken is what the failed commit had taken out of it): its webhooks
// stay in the shared inbox for the owner, and its send results are
// recovered there (claimed without an outcome: unconfirmed). See cluster.go.
func (q *workQueue) forget(id string, taken []routed) {
	q.mu.Lock()
	for _, e := range taken {
		delete(q.routing, inboxKey{e.ref.Provider, e.ref.EventID})
	}
	if w := q.work[id]; w != nil {
		for _, e := range w.entries {
			delete(q.routing, inboxKey{e.ref.Provider, e.ref.EventID})
		}
		delete(q.work, id)
	}
	q.mu.Unlock()
	q.idle()
}

// addInflight registers committed claims of group id as in flight; call it
// before the sends are submitted, so no outcome can come first.
func (q *workQueue) addInflight(id string, sendIDs []string) {
	if len(sendIDs) == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.get(id)
	if w.inflight == nil {
		w.inflight = make(map[string]struct{})
	}
	for _, s := range sendIDs {
		w.inflight[s] = struct{}{}
	}
}

// dropInflight takes back what addInflight registered for claims whose
// commit failed (they were never queued).
func (q *workQueue) dropInflight(id string, sendIDs []string) {
	if len(sendIDs) == 0 {
		return
	}
	q.mu.Lock()
	if w := q.work[id]; w != nil {
		for _, s := range sendIDs {
			delete(w.inflight, s)
		}
	}
	q.mu.Unlock()
	q.idle()
}

// inFlight returns whether a send of group id is still running in this
// process, as of now.
func (q *workQueue) inFlight(id string) func(sendID string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	snapshot := map[string]struct{}{}
	if w := q.work[id]; w != nil {
		for k := range w.inflight {
			snapshot[k] = struct{}{}
		}
	}
	return func(s string) bool { _, ok := snapshot[s]; return ok }
}

// busy reports whether group id has uncommitted work; an idle group's
// entry is dropped so that hibernated groups cost no memory.
func (q *workQueue) busy(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.work[id]
	if w == nil || !q.owns(id) { // another node owns the group now (cluster.go)
		return false
	}
	if w.empty() && !w.signaled {
		delete(q.work, id)
		return false
	}
	return !w.empty()
}

// unsignal says the actor dropped its signal without taking the work (a
// broken actor): the work stays queued, and the actor's reload resumes it.
func (q *workQueue) unsignal(id string) {
	q.mu.Lock()
	if w := q.work[id]; w != nil {
		w.signaled = false
	}
	q.mu.Unlock()
}

// resume reports whether group id has work queued for its actor, marking it
// signaled: the caller (a freshly loaded actor) then tells itself.
func (q *workQueue) resume(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.work[id]
	if w == nil || !w.queued() {
		return false
	}
	w.signaled = true
	return true
}

// ---- waiting for quiet ----

// busyGroups counts the groups this node owns with uncommitted work
// (another node's work is theirs to recover).
func (q *workQueue) busyGroups() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for key, w := range q.work {
		if !w.empty() && q.owns(key) {
			n++
		}
	}
	return n
}

// anySending reports whether a group whose key match accepts has sends in
// flight or send results not yet committed: what only this node can
// record (queued webhooks are in the shared inbox for any owner).
func (q *workQueue) anySending(match func(key string) bool) bool {
	return len(q.sending(match, true)) > 0
}

// sendingCounts is what keeps a group sending: sends in flight (claimed,
// outcome not queued) and outcomes queued but not committed.
type sendingCounts struct{ inFlight, unrecorded int }

// sending returns the groups whose key match accepts that have sends in
// flight or send results not yet committed (only the first when first).
func (q *workQueue) sending(match func(key string) bool, first bool) map[string]sendingCounts {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out map[string]sendingCounts
	for key, w := range q.work {
		if match(key) && (len(w.inflight) > 0 || len(w.results) > 0) {
			if out == nil {
				out = map[string]sendingCounts{}
			}
			out[key] = sendingCounts{inFlight: len(w.inflight), unrecorded: len(w.results)}
			if first {
				return out
			}
		}
	}
	return out
}
