package actor

import (
	"sync"
	"sync/atomic"
	"time"
)

// Reasons a message becomes a dead letter.
const (
	ReasonMailboxFull      = "mailbox full"
	ReasonStopped          = "actor stopped"
	ReasonActivationFailed = "activation failed"
)

// DeadLetter describes one message that could not be delivered. It holds
// the message's type, never its content, so samples are safe to show.
type DeadLetter struct {
	Target      string    `json:"target"`
	Reason      string    `json:"reason"`
	MessageType string    `json:"message_type"`
	TraceID     string    `json:"trace_id,omitempty"`
	Time        time.Time `json:"time"`
}

// DeadLetterStats is a snapshot of the dead-letter counter and the most
// recent samples, oldest first.
type DeadLetterStats struct {
	Count  uint64       `json:"count"`
	Recent []DeadLetter `json:"recent"`
}

// deadLetters counts every undeliverable message and keeps a bounded ring
// of recent samples: the count feeds alerts, the samples feed debugging,
// and neither grows without bound.
type deadLetters struct {
	count atomic.Uint64
	mu    sync.Mutex
	ring  []DeadLetter
	next  int
	full  bool
}

func newDeadLetters(capacity int) *deadLetters {
	if capacity <= 0 {
		capacity = 256
	}
	return &deadLetters{ring: make([]DeadLetter, capacity)}
}

func (d *deadLetters) record(dl DeadLetter) {
	d.count.Add(1)
	d.mu.Lock()
	d.ring[d.next] = dl
	d.next++
	if d.next == len(d.ring) {
		d.next = 0
		d.full = true
	}
	d.mu.Unlock()
}

func (d *deadLetters) stats() DeadLetterStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := DeadLetterStats{Count: d.count.Load()}
	if d.full {
		st.Recent = append(st.Recent, d.ring[d.next:]...)
	}
	st.Recent = append(st.Recent, d.ring[:d.next]...)
	return st
}
