package tracker

import (
	"sync"
	"time"
)

// sendRoom is where groups wait for room in the send backlog (MaxBacklog,
// shared by all groups): a group that finds it full registers here and is
// kicked once a worker has drained it to half, instead of polling it.
type sendRoom struct {
	mu      sync.Mutex
	waiting map[string]struct{}
}

// lowWater is the backlog at or below which waiting groups are woken: half
// the bound, so a woken group claims a useful batch.
func (t *Tracker) lowWater() int { return t.cfg.MaxBacklog / 2 }

// waitForRoom registers group id to be kicked when the backlog drains.
func (t *Tracker) waitForRoom(id string) {
	t.room.mu.Lock()
	if t.room.waiting == nil {
		t.room.waiting = make(map[string]struct{})
	}
	t.room.waiting[id] = struct{}{}
	t.room.mu.Unlock()
	// The backlog may have drained between the caller's look and the
	// registration, with nobody left to see the registration.
	if t.pool.backlog() <= t.lowWater() {
		t.wakeRoom()
	}
}

// drained is the send pool's report that a worker took a send, leaving
// backlog sends queued.
func (t *Tracker) drained(backlog int) {
	if backlog <= t.lowWater() {
		t.wakeRoom()
	}
}

// wakeRoom kicks every group waiting for room.
func (t *Tracker) wakeRoom() {
	t.room.mu.Lock()
	if len(t.room.waiting) == 0 {
		t.room.mu.Unlock()
		return
	}
	ids := make([]string, 0, len(t.room.waiting))
	for id := range t.room.waiting {
		ids = append(ids, id)
	}
	clear(t.room.waiting)
	t.room.mu.Unlock()
	for _, id := range ids {
		t.kick(id)
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
