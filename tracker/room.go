package tracker

import (
	"sync"
	"time"
)

// sendRoom is where groups wait for room in the send backlog (MaxBacklog,
// shared by all groups): a group that finds it full registers here and is
// kicked once a worker has drained it to lowWater, instead of polling it.
type sendRoom struct {
	lowWater int             // the backlog at or below which waiting groups are woken
	backlog  func() int      // sends waiting for a worker (the send pool's)
	kick     func(id string) // wakes a group to claim
	mu       sync.Mutex
	waiting  map[string]struct{}
}

// newSendRoom returns a room that wakes its groups at lowWater — half the
// bound, so that a woken group claims a useful batch.
func newSendRoom(lowWater int, backlog func() int, kick func(string)) *sendRoom {
	return &sendRoom{lowWater: lowWater, backlog: backlog, kick: kick, waiting: make(map[string]struct{})}
}

// wait registers group id to be kicked when the backlog drains.
func (r *sendRoom) wait(id string) {
	r.mu.Lock()
	r.waiting[id] = struct{}{}
	r.mu.Unlock()
	// The backlog may have drained between the caller's look and the
	// registration, with nobody left to see the registration.
	if r.backlog() <= r.lowWater {
		r.wake()
	}
}

// drained is the send pool's report that a worker took a send, leaving
// backlog sends queued.
func (r *sendRoom) drained(backlog int) {
	if backlog <= r.lowWater {
		r.wake()
	}
}

// wake kicks every group waiting for room.
func (r *sendRoom) wake() {
	r.mu.Lock()
	if len(r.waiting) == 0 {
		r.mu.Unlock()
		return
	}
	ids := make([]string, 0, len(r.waiting))
	for id := range r.waiting {
		ids = append(ids, id)
	}
	clear(r.waiting)
	r.mu.Unlock()
	for _, id := range ids {
		r.kick(id)
	}
}

// kick tells group id to claim what is due; a kick refused by a full
// mailbox is tried again shortly, unless the actors are gone.
func (t *Tracker) kick(id string) {
	if t.groups.Tell(id, msgKick{}) || t.actorsDown.Load() {
		return
	}
	t.after(retryPause, func() { t.kick(id) })
}

// retryPause is how long a refused signal or kick waits before it is
// tried again.
const retryPause = 50 * time.Millisecond

// after runs f once d has passed on the tracker's clock (so tests drive it
// with a manual clock), unless the actors shut down first.
func (t *Tracker) after(d time.Duration, f func()) {
	tm := t.cfg.Clock.NewTimer(d)
	go func() {
		select {
		case <-tm.C():
			f()
		case <-t.down:
			tm.Stop()
		}
	}()
}
