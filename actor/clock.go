package actor

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is the runtime's only source of time: idle timeouts, restart
// backoff, Ask timeouts, reminder polls and the central scheduler all read
// it, so a test can drive them with a ManualClock instead of sleeping.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a started timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the runtime uses. Stop and Reset follow
// the Go 1.23 semantics: after either returns, no stale value is received
// from C.
type Timer interface {
	// C delivers the time when the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset rearms the timer to fire after d; it reports whether it was active.
	Reset(d time.Duration) bool
}

// RealClock returns the clock backed by package time.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// ManualClock is a Clock whose time moves only through Advance or Set, for
// deterministic tests of timers, idle timeouts and backoff.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	pending map[*manualTimer]struct{}
	changed chan struct{} // closed and replaced whenever a timer is armed
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, pending: map[*manualTimer]struct{}{}, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and fires every timer that is due,
// earliest first.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.setLocked(c.now.Add(d))
	c.mu.Unlock()
}

// Set moves the clock to t (never backwards) and fires the timers due by then.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.setLocked(t)
	}
	c.mu.Unlock()
}

func (c *ManualClock) setLocked(t time.Time) {
	c.now = t
	var due []*manualTimer
	for mt := range c.pending {
		if !mt.at.After(t) {
			due = append(due, mt)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, mt := range due {
		delete(c.pending, mt)
		mt.fireLocked(t)
	}
}

// Timers returns the number of armed timers.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// WaitTimers blocks until at least n timers are armed, so a test advances
// time only after the code under test has started waiting.
func (c *ManualClock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		if len(c.pending) >= n {
			c.mu.Unlock()
			return nil
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// NewTimer returns a timer that fires when the clock has advanced by d.
func (c *ManualClock) NewTimer(d time.Duration) Timer {
	mt := &manualTimer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	mt.armLocked(d)
	c.mu.Unlock()
	return mt
}

type manualTimer struct {
	c  *ManualClock
	ch chan time.Time
	at time.Time
}

func (mt *manualTimer) armLocked(d time.Duration) { mt.armAtLocked(mt.c.now.Add(d)) }

// resetAt arms the timer for the instant at (see scheduler.arm).
func (mt *manualTimer) resetAt(at time.Time) {
	mt.c.mu.Lock()
	defer mt.c.mu.Unlock()
	delete(mt.c.pending, mt)
	mt.drain()
	mt.armAtLocked(at)
}

func (mt *manualTimer) armAtLocked(at time.Time) {
	mt.at = at
	if !at.After(mt.c.now) {
		mt.fireLocked(mt.c.now)
		return
	}
	mt.c.pending[mt] = struct{}{}
	close(mt.c.changed)
	mt.c.changed = make(chan struct{})
}

func (mt *manualTimer) fireLocked(now time.Time) {
	select {
	case mt.ch <- now:
	default:
	}
}

func (mt *manualTimer) C() <-chan time.Time { return mt.ch }

func (mt *manualTimer) Stop() bool {
	mt.c.mu.Lock()
	defer mt.c.mu.Unlock()
	_, active := mt.c.pending[mt]
	delete(mt.c.pending, mt)
	mt.drain()
	return active
}

func (mt *manualTimer) Reset(d time.Duration) bool {
	mt.c.mu.Lock()
	defer mt.c.mu.Unlock()
	_, active := mt.c.pending[mt]
	delete(mt.c.pending, mt)
	mt.drain()
	mt.armLocked(d)
	return active
}

func (mt *manualTimer) drain() {
	select {
	case <-mt.ch:
	default:
	}
}
