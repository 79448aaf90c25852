package tracker

import (
	"sync"
	"sync/atomic"
)

// hubBuffer is how many changes a subscriber may fall behind before it is
// marked lagged and must catch up from the journal.
const hubBuffer = 256

// Hub fans committed changes out to subscribers of one group or of all
// groups. Publish never blocks: a subscriber that falls behind misses
// changes, is marked lagged, and is expected to reread the journal (the
// journal, not the hub, is the source of truth).
type Hub struct {
	mu   sync.RWMutex
	subs map[string]map[*Subscription]struct{} // group id ("" = all) → subscribers
	n    atomic.Int64
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: make(map[string]map[*Subscription]struct{})} }

// Subscription receives changes until Close.
type Subscription struct {
	// C delivers changes in commit order per group.
	C      <-chan Change
	c      chan Change
	hub    *Hub
	group  string
	lagged atomic.Bool
	once   sync.Once
}

// Subscribe returns a subscription to one group's changes, or to every
// group's when groupID is "".
func (h *Hub) Subscribe(groupID string) *Subscription {
	c := make(chan Change, hubBuffer)
	s := &Subscription{C: c, c: c, hub: h, group: groupID}
	h.mu.Lock()
	m := h.subs[groupID]
	if m == nil {
		m = make(map[*Subscription]struct{})
		h.subs[groupID] = m
	}
	m[s] = struct{}{}
	h.mu.Unlock()
	h.n.Add(1)
	return s
}

// Subscribers returns how many subscriptions are open.
func (h *Hub) Subscribers() int { return int(h.n.Load()) }

// Lagged reports (and clears) whether changes were dropped for this
// subscriber since the last call.
func (s *Subscription) Lagged() bool { return s.lagged.Swap(false) }

// Close ends the subscription; C is not closed, so readers select on their
// own done channel.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.hub.mu.Lock()
		if m := s.hub.subs[s.group]; m != nil {
			delete(m, s)
			if len(m) == 0 {
				delete(s.hub.subs, s.group)
			}
		}
		s.hub.mu.Unlock()
		s.hub.n.Add(-1)
	})
}

// Publish hands c to every subscriber of its group and of all groups.
func (h *Hub) Publish(c Change) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, key := range [2]string{c.GroupID, ""} {
		for s := range h.subs[key] {
			select {
			case s.c <- c:
			default:
				s.lagged.Store(true)
			}
		}
	}
}
