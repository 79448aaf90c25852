package tracker

import (
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// fakeQueueDeps records what a workQueue asks of the tracker.
type fakeQueueDeps struct {
	mu      sync.Mutex
	refuse  bool     // tell answers false
	told    []string // ids told msgWork
	later   []func() // functions waiting for their pause
	idles   int
	foreign map[string]bool // keys another node owns
}

func (f *fakeQueueDeps) queue() *workQueue {
	return newWorkQueue(
		func(id string) bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.told = append(f.told, id)
			return !f.refuse
		},
		func(_ time.Duration, fn func()) { f.mu.Lock(); f.later = append(f.later, fn); f.mu.Unlock() },
		func() bool { return false },
		func(key string) bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.foreign[key] },
		func() { f.mu.Lock(); f.idles++; f.mu.Unlock() },
	)
}

func (f *fakeQueueDeps) runLater() {
	f.mu.Lock()
	fns := f.later
	f.later = nil
	f.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

func (f *fakeQueueDeps) toldCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.told)
}

func entry(id string) routed { return routed{ref: store.InboxRef{Provider: "fake", EventID: id}} }

func result(sendID string) sendResult { return sendResult{send: group.Send{ID: sendID}} }

// TestWorkQueueTellsOnceUntilTaken: posts to a group tell its actor once;
// after take, the next post tells it again.
func TestWorkQueueTellsOnceUntilTaken(t *testing.T) {
	f := &fakeQueueDeps{}
	q := f.queue()
	q.postResult("g1", result("s1"))
	q.postLookup("g1", lookupResult{index: 2})
	if n := f.toldCount(); n != 1 {
		t.Fatalf("told %d times for two posts before a take, want 1", n)
	}
	results, lookups, entries := q.take("g1")
	if len(results) != 1 || len(lookups) != 1 || len(entries) != 0 {
		t.Fatalf("take = %d results, %d lookups, %d entries", len(results), len(lookups), len(entries))
	}
	q.postResult("g1", result("s2"))
	if n := f.toldCount(); n != 2 {
		t.Fatalf("told %d times after a post following take, want 2", n)
	}
}

// TestWorkQueueRefusedTellIsRetried: a tell the actor's mailbox refuses
// leaves the work queued and is tried again after the pause.
func TestWorkQueueRefusedTellIsRetried(t *testing.T) {
	f := &fakeQueueDeps{refuse: true}
	q := f.queue()
	q.postResult("g1", result("s1"))
	f.mu.Lock()
	f.refuse = false
	f.mu.Unlock()
	f.runLater()
	if n := f.toldCount(); n != 2 {
		t.Fatalf("told %d times, want the refused tell and its retry", n)
	}
	if results, _, _ := q.take("g1"); len(results) != 1 {
		t.Fatalf("the result was lost with the refused tell: %d", len(results))
	}
}

// TestWorkQueueRoutesAnEntryOnce: an entry on its way to a group is not
// queued again (by the sweep or a second delivery) until the commit that
// applied it is done.
func TestWorkQueueRoutesAnEntryOnce(t *testing.T) {
	f := &fakeQueueDeps{}
	q := f.queue()
	if queued, signaled := q.route("g1", entry("e1")); !queued || signaled {
		t.Fatalf("first route: queued %v signaled %v", queued, signaled)
	}
	if queued, _ := q.route("g1", entry("e1")); queued {
		t.Fatal("an entry on its way was queued twice")
	}
	if !q.routingMarked(inboxKey{"fake", "e1"}) {
		t.Fatal("no routing mark for a routed entry")
	}
	q.wake("g1")
	_, _, entries := q.take("g1")
	if len(entries) != 1 {
		t.Fatalf("took %d entries, want 1", len(entries))
	}
	if queued, _ := q.route("g1", entry("e1")); queued {
		t.Fatal("an entry taken but not yet committed was queued again")
	}
	q.done("g1", nil, entries)
	if q.routingMarked(inboxKey{"fake", "e1"}) {
		t.Fatal("routing mark left after the commit")
	}
	if queued, _ := q.route("g1", entry("e1")); !queued {
		t.Fatal("an entry whose commit is done cannot be routed again")
	}
}

// TestWorkQueueRequeueKeepsOrderAndInflight: a failed commit puts back what
// it took ahead of what came since, keeps its sends in flight, and tells
// the actor again after the pause.
func TestWorkQueueRequeueKeepsOrderAndInflight(t *testing.T) {
	f := &fakeQueueDeps{}
	q := f.queue()
	q.addInflight("g1", []string{"s1", "s2"})
	q.postResult("g1", result("s1"))
	results, lookups, entries := q.take("g1")
	q.postResult("g1", result("s2")) // arrives while the commit fails
	told := f.toldCount()
	q.requeue("g1", results, lookups, entries)
	if f.toldCount() != told {
		t.Fatal("requeue told the actor at once; it should wait out the pause")
	}
	f.runLater()
	if f.toldCount() != told+1 {
		t.Fatal("requeue never told the actor again")
	}
	if !q.inFlight("g1")("s1") || !q.busy("g1") {
		t.Fatal("a send whose outcome is not committed left the in-flight set")
	}
	results, _, _ = q.take("g1")
	if len(results) != 2 || results[0].send.ID != "s1" || results[1].send.ID != "s2" {
		t.Fatalf("requeued results %v, want s1 then s2", results)
	}
	q.done("g1", results, nil)
	if q.inFlight("g1")("s1") || q.inFlight("g1")("s2") {
		t.Fatal("committed sends still in flight")
	}
	if q.busy("g1") || q.busyGroups() != 0 {
		t.Fatal("a group with everything committed is busy")
	}
}

// TestWorkQueueForeignWorkKeepsNobodyWaiting: work of a group another node
// owns does not count as busy, and forget drops it with its routing marks.
func TestWorkQueueForeignWorkKeepsNobodyWaiting(t *testing.T) {
	f := &fakeQueueDeps{foreign: map[string]bool{"g2": true}}
	q := f.queue()
	q.addInflight("g1", []string{"s1"})
	q.addInflight("g2", []string{"s9"})
	q.route("g2", entry("e2"))
	if n := q.busyGroups(); n != 1 {
		t.Fatalf("%d busy groups, want only the owned one", n)
	}
	if q.busy("g2") {
		t.Fatal("a foreign group's work keeps it busy")
	}
	if !q.anySending(func(k string) bool { return k == "g2" }) {
		t.Fatal("anySending misses the foreign group's send in flight (the hand-off waits for it)")
	}
	idles := f.idles
	q.forget("g2", nil)
	if q.routingMarked(inboxKey{"fake", "e2"}) || q.anyBusy(func(k string) bool { return k == "g2" }) ||
		q.anySending(func(k string) bool { return k == "g2" }) {
		t.Fatal("forget left the group's work or routing marks")
	}
	if f.idles != idles+1 {
		t.Fatal("forget did not say the queue got quieter")
	}
}

// TestWorkQueueResumeAfterReload: a broken actor drops its signal; the
// reloaded actor finds the work still queued and is the one to tell itself.
func TestWorkQueueResumeAfterReload(t *testing.T) {
	f := &fakeQueueDeps{}
	q := f.queue()
	if q.resume("g1") {
		t.Fatal("resume found work in an empty queue")
	}
	q.postResult("g1", result("s1"))
	q.unsignal("g1")
	if !q.resume("g1") {
		t.Fatal("the reloaded actor does not find the queued work")
	}
	told := f.toldCount()
	q.postResult("g1", result("s2"))
	if f.toldCount() != told {
		t.Fatal("resume did not mark the group told: a second tell was sent")
	}
}

// anyBusy (for tests) reports whether a group whose key match accepts has uncommitted
// work (sends in flight, results or webhooks not yet committed).
func (q *workQueue) anyBusy(match func(key string) bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for key, w := range q.work {
		if match(key) && !w.empty() {
			return true
		}
	}
	return false
}

// TestWorkQueueSendingIsWhatOnlyThisNodeCanRecord: a hand-off waits for
// sends in flight and their results, not for webhooks (the new owner finds
// those in the shared inbox).
func TestWorkQueueSendingIsWhatOnlyThisNodeCanRecord(t *testing.T) {
	f := &fakeQueueDeps{}
	q := f.queue()
	all := func(string) bool { return true }
	q.route("g1", entry("e1"))
	if q.anySending(all) {
		t.Fatal("a queued webhook counts as sending")
	}
	q.addInflight("g2", []string{"s1"})
	if !q.anySending(all) || q.anySending(func(k string) bool { return k == "g1" }) {
		t.Fatal("anySending does not see exactly g2's send in flight")
	}
	q.postResult("g2", result("s1"))
	results, _, _ := q.take("g2")
	if !q.anySending(all) {
		t.Fatal("a taken, uncommitted result is not sending")
	}
	q.done("g2", results, nil)
	if q.anySending(all) {
		t.Fatal("a committed send still counts as sending")
	}
}

// TestWorkQueueDropsResultsOfAMovedGroup: a send outcome or a lookup for a
// group whose shard another node holds is not queued (it cannot be
// committed here). Queued, it woke the group's actor, which was fenced and
// stopped, once per outcome: T8 logs showed a leaving node re-activating a
// group every ~80 ms after handing its shard off, as its status lookups
// came back.
func TestWorkQueueDropsResultsOfAMovedGroup(t *testing.T) {
	f := &fakeQueueDeps{foreign: map[string]bool{"g2": true}}
	q := f.queue()
	q.addInflight("g2", []string{"s9"})
	q.postResult("g2", result("s9"))
	q.postLookup("g2", lookupResult{index: 0})
	if n := f.toldCount(); n != 0 {
		t.Fatalf("the moved group's actor was told %d times", n)
	}
	if q.anySending(func(string) bool { return true }) {
		t.Fatal("the moved group's dropped send still counts as in flight")
	}
	if results, lookups, _ := q.take("g2"); len(results)+len(lookups) != 0 {
		t.Fatalf("queued for the moved group: %v %v", results, lookups)
	}
}
