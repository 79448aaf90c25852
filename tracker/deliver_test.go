package tracker

import (
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// A routed webhook to a group whose actor has nothing queued tells the
// actor at once: it never waits for other webhooks to come (a fixed 10 ms
// wait did, and added itself to every webhook → event stream latency).
// Webhooks routed while the actor is told but has not taken its work go
// with that work, without a second signal; once the actor took it (and
// commits), the next webhook tells it again, and its next turn takes
// whatever queued up meanwhile into one commit.
func TestDeliverTellsAnIdleGroupAtOnce(t *testing.T) {
	var mu sync.Mutex
	told := 0
	tr := &Tracker{}
	tr.work = newWorkQueue(func(string) bool { mu.Lock(); told++; mu.Unlock(); return true },
		func(time.Duration, func()) {}, func() bool { return false }, func(string) bool { return true }, func() {})
	entry := func(id string) routed { return routed{ref: store.InboxRef{Provider: "fake", EventID: id}} }
	signals := func() int { mu.Lock(); defer mu.Unlock(); return told }

	tr.deliver("g1", entry("e1"))
	if n := signals(); n != 1 {
		t.Fatalf("after the first webhook the actor was told %d times, want 1 (at once)", n)
	}
	tr.deliver("g1", entry("e2"))
	tr.deliver("g1", entry("e1")) // on its way already: not queued twice
	if n := signals(); n != 1 {
		t.Fatalf("a webhook for a group already told signaled again (%d signals)", n)
	}
	if _, _, entries := tr.work.take("g1"); len(entries) != 2 {
		t.Fatalf("the actor took %d entries, want 2 (e1, e2)", len(entries))
	}
	tr.deliver("g1", entry("e3"))
	tr.deliver("g1", entry("e4"))
	if n := signals(); n != 2 {
		t.Fatalf("after the actor took its work, a new webhook gave %d signals in all, want 2", n)
	}
	if _, _, entries := tr.work.take("g1"); len(entries) != 2 {
		t.Fatalf("the next turn took %d entries, want the 2 queued meanwhile", len(entries))
	}
}
