package actor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestMetricsHooksCount(t *testing.T) {
	m := newCountingMetrics()
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	sys := newTestSystem(t, WithMetrics(m), WithClock(clk), hook)
	r, _ := Spawn(sys, "m", newCounter, WithSupervisor(fixed(Restart)))
	for i := 0; i < 5; i++ {
		r.Tell(cmsg{add: 1})
	}
	askCount(t, r)           // 6 processed
	r.Tell(cmsg{boom: true}) // 7 (fails)
	evs.wait(t, EventRestarted, "m", 1)
	askCount(t, r) // 8

	h := newHooks()
	k := newVKind(sys, h, KindOptions{IdleTimeout: time.Second, SweepInterval: time.Second})
	askV(t, k.Get("v")) // 9
	settle(t, sys)
	clk.Advance(2 * time.Second)
	evs.wait(t, EventPassivated, "v", 1)

	c := NewCommitter(NewMemoryStore(), CommitterOptions{Metrics: m})
	if err := c.Commit(context.Background(), Unit{Key: "x", Events: []Event{{Type: "e"}}}); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	waitClosed(t, r.Done())
	r.Tell(cmsg{}) // dead letter
	r.Tell(cmsg{}) // dead letter

	if got := m.activated.Load(); got != 2 {
		t.Errorf("activations = %d, want 2 (one plain, one virtual; restarts are not activations)", got)
	}
	if got := m.restarted.Load(); got != 1 {
		t.Errorf("restarts = %d", got)
	}
	if got := m.passivated.Load(); got != 1 {
		t.Errorf("passivations = %d", got)
	}
	if got := m.stopped.Load(); got != 1 {
		t.Errorf("stops = %d", got)
	}
	if got := m.deadLetters.Load(); got != 2 {
		t.Errorf("dead letters = %d, want 2", got)
	}
	if got := m.processed.Load(); got != 9 {
		t.Errorf("processed = %d, want 9", got)
	}
	if m.depthSamples.Load() == 0 {
		t.Error("no mailbox depth samples")
	}
	if m.timerFired.Load() == 0 {
		t.Error("idle sweep timer not counted")
	}
	if m.commitBatches.Load() != 1 || m.commitUnits.Load() != 1 {
		t.Errorf("commit batches %d units %d", m.commitBatches.Load(), m.commitUnits.Load())
	}
}

// An actor whose start never succeeded was never counted in, so stopping
// it must not count it out: an in-memory gauge built on these hooks would
// otherwise go negative.
func TestMetricsPairStopsWithActivations(t *testing.T) {
	m := newCountingMetrics()
	sys := newTestSystem(t, WithMetrics(m))
	var failures atomic.Int32
	failures.Store(1)
	r, _ := Spawn(sys, "never", func() Actor[smsg] { return &failingStart{failures: &failures, ready: make(chan struct{})} },
		WithSupervisor(fixed(Stop)))
	waitClosed(t, r.Done())

	h := newHooks()
	h.activateErr = func(string) error { return errors.New("store down") }
	k := newVKind(sys, h, KindOptions{})
	k.Tell("v", vmsg{add: 1})
	shutdownClean(t, sys)

	if a, s, p := m.activated.Load(), m.stopped.Load(), m.passivated.Load(); a != 0 || s != 0 || p != 0 {
		t.Fatalf("activated %d, stopped %d, passivated %d; want 0 each", a, s, p)
	}
}
