package actor

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSchedulerUsesOneGoroutineForManyTimers(t *testing.T) {
	sys := newTestSystem(t)
	base := runtime.NumGoroutine()
	cancels := make([]CancelFunc, 0, 10000)
	for i := 0; i < 10000; i++ {
		cancels = append(cancels, sys.AfterFunc(time.Hour+time.Duration(i), func() {}))
	}
	if got := runtime.NumGoroutine(); got > base {
		t.Fatalf("goroutines went from %d to %d after scheduling 10k timers", base, got)
	}
	if st := sys.TimerStats(); st.Pending != 10000 {
		t.Fatalf("Pending = %d, want 10000", st.Pending)
	}
	for _, c := range cancels {
		c()
	}
	// Mostly-cancelled heaps are compacted on the next loop iteration.
	<-sentinel(sys, 0)
	if st := sys.TimerStats(); st.Pending > 1 {
		t.Fatalf("Pending after cancelling everything = %d, want compaction", st.Pending)
	}
}

func TestSchedulerFiresInDueOrder(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	sys := newTestSystem(t, WithClock(clk))
	var mu sync.Mutex
	var order []string
	add := func(d time.Duration, name string) {
		sys.AfterFunc(d, func() {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		})
	}
	add(30*time.Millisecond, "30")
	add(10*time.Millisecond, "10a")
	add(20*time.Millisecond, "20")
	add(10*time.Millisecond, "10b") // same due time: scheduling order
	add(time.Hour, "later")
	done := sentinel(sys, 50*time.Millisecond)
	clk.Advance(50 * time.Millisecond)
	waitClosed(t, done)
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(order, ","); got != "10a,10b,20,30" {
		t.Fatalf("order = %s, want 10a,10b,20,30 (and nothing due later)", got)
	}
}

func TestSchedulerLazyCancelAndRepeat(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	sys := newTestSystem(t, WithClock(clk))
	fired := make(chan string, 16)
	cancel := sys.AfterFunc(10*time.Millisecond, func() { fired <- "once" })
	cancel()
	cancel() // idempotent
	if st := sys.TimerStats(); st.Pending != 1 {
		t.Fatalf("Pending = %d: cancellation must be lazy (entry stays until due)", st.Pending)
	}
	ticks := make(chan time.Time, 16)
	stopRepeat := sys.Every(10*time.Millisecond, func() { ticks <- clk.Now() })
	for i := 1; i <= 3; i++ {
		clk.Advance(10 * time.Millisecond)
		at := recv(t, ticks)
		if want := time.Unix(0, 0).Add(time.Duration(i) * 10 * time.Millisecond); !at.Equal(want) {
			t.Fatalf("tick %d at %v, want %v", i, at, want)
		}
	}
	stopRepeat()
	done := sentinel(sys, 10*time.Millisecond)
	clk.Advance(10 * time.Millisecond)
	waitClosed(t, done)
	select {
	case v := <-fired:
		t.Fatalf("cancelled timer fired: %v", v)
	case at := <-ticks:
		t.Fatalf("cancelled repeat ticked at %v", at)
	default:
	}
	if st := sys.TimerStats(); st.Pending != 0 {
		t.Fatalf("Pending = %d after everything fired or was cancelled", st.Pending)
	}
}

func TestSchedulerRecoversPanickingCallback(t *testing.T) {
	m := newCountingMetrics()
	clk := NewManualClock(time.Unix(0, 0))
	sys := newTestSystem(t, WithClock(clk), WithMetrics(m))
	sys.AfterFunc(time.Millisecond, func() { panic("timer bug") })
	ran := make(chan struct{})
	sys.AfterFunc(2*time.Millisecond, func() { close(ran) })
	clk.Advance(5 * time.Millisecond)
	waitClosed(t, ran)
	if st := sys.TimerStats(); st.Panics != 1 || st.Fired != 2 {
		t.Fatalf("stats = %+v, want 1 panic of 2 fired", st)
	}
	if m.timerPanicked.Load() != 1 {
		t.Fatalf("metrics TimerPanicked = %d", m.timerPanicked.Load())
	}
	// A panicking repeating callback keeps its schedule.
	var calls int
	stop := sys.Every(time.Second, func() {
		calls++
		panic("again")
	})
	defer stop()
	for i := 0; i < 3; i++ {
		done := sentinel(sys, time.Second)
		clk.Advance(time.Second)
		waitClosed(t, done)
	}
	if calls != 3 || sys.TimerStats().Panics != 4 {
		t.Fatalf("repeating panicking callback ran %d times, panics %d; want 3 and 4", calls, sys.TimerStats().Panics)
	}
}

// ticker schedules a tick in Started and reports ticks with its instance
// number; "boom" makes it panic.
type ticker struct {
	instance int
	ticks    chan<- int
	repeat   bool
}

type tickMsg struct {
	boom     bool
	tick     bool
	instance int
	started  chan struct{}
	in       chan struct{}
	block    chan struct{}
}

func (a *ticker) Started(c *Context[tickMsg]) error {
	msg := tickMsg{tick: true, instance: a.instance}
	if a.repeat {
		c.ScheduleRepeat(10*time.Millisecond, msg)
	} else {
		c.Schedule(10*time.Millisecond, msg)
	}
	return nil
}

func (a *ticker) Receive(c *Context[tickMsg], m tickMsg) {
	if m.in != nil {
		close(m.in)
		<-m.block
		return
	}
	switch {
	case m.boom:
		panic("boom")
	case m.tick:
		a.ticks <- m.instance
	case m.started != nil:
		close(m.started)
	}
}

// spawnRestartingTicker spawns a non-repeating ticker whose instances are
// numbered from 1 and whose every failure is a restart.
func spawnRestartingTicker(sys *System, ticks chan<- int) *Ref[tickMsg] {
	instances := 0
	r, _ := Spawn(sys, "ticker", func() Actor[tickMsg] {
		instances++
		return &ticker{instance: instances, ticks: ticks}
	}, WithSupervisor(fixed(Restart)))
	return r
}

// roundTrip returns once the ticker has handled everything sent before.
func roundTrip(t *testing.T, r *Ref[tickMsg]) {
	t.Helper()
	started := make(chan struct{})
	r.Tell(tickMsg{started: started})
	waitClosed(t, started)
}

func TestTimersCancelledOnStop(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	sys := newTestSystem(t, WithClock(clk))
	ticks := make(chan int, 16)
	r, _ := Spawn(sys, "ticker", func() Actor[tickMsg] { return &ticker{instance: 1, ticks: ticks, repeat: true} })
	roundTrip(t, r)
	clk.Advance(10 * time.Millisecond)
	if got := recv(t, ticks); got != 1 {
		t.Fatalf("tick from instance %d", got)
	}
	r.Stop()
	waitClosed(t, r.Done())
	for i := 0; i < 3; i++ {
		done := sentinel(sys, 10*time.Millisecond)
		clk.Advance(10 * time.Millisecond)
		waitClosed(t, done)
	}
	select {
	case v := <-ticks:
		t.Fatalf("tick %d after stop", v)
	default:
	}
	if st := sys.DeadLetters(); st.Count != 0 {
		t.Fatalf("timers of a stopped actor produced dead letters: %+v", st)
	}
	if st := sys.TimerStats(); st.Pending != 0 {
		t.Fatalf("stopped actor's repeating timer still pending: %+v", st)
	}
}

func TestTimersCancelledOnRestart(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	sys := newTestSystem(t, WithClock(clk), hook)
	ticks := make(chan int, 16)
	r := spawnRestartingTicker(sys, ticks)
	roundTrip(t, r)
	// Instance 1's tick is due at 10ms. Restart at 5ms: instance 2 schedules
	// its own tick for 15ms.
	clk.Advance(5 * time.Millisecond)
	r.Tell(tickMsg{boom: true})
	evs.wait(t, EventRestarted, "ticker", 1)
	roundTrip(t, r)
	// Both due times pass; only the new instance may be ticked.
	done := sentinel(sys, 20*time.Millisecond)
	clk.Advance(20 * time.Millisecond)
	waitClosed(t, done)
	if got := recv(t, ticks); got != 2 {
		t.Fatalf("tick from instance %d reached the restarted actor", got)
	}
	// The stale tick may be discarded at fire time or at processing time;
	// a round trip through the mailbox makes sure it was not delivered.
	roundTrip(t, r)
	select {
	case v := <-ticks:
		t.Fatalf("extra tick from instance %d", v)
	default:
	}
}

// A timer message already in the mailbox when the instance changes is
// dropped at processing time.
func TestStaleTimerInMailboxIsDropped(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	sys := newTestSystem(t, WithClock(clk), hook)
	ticks := make(chan int, 16)
	r := spawnRestartingTicker(sys, ticks)
	// Instance 1 is busy while its tick fires into the mailbox behind a
	// failing message; the restart then happens before the tick is read.
	in, gate := make(chan struct{}), make(chan struct{})
	r.Tell(tickMsg{in: in, block: gate})
	waitClosed(t, in)
	r.Tell(tickMsg{boom: true})
	done := sentinel(sys, 10*time.Millisecond)
	clk.Advance(10 * time.Millisecond)
	waitClosed(t, done)
	if d := r.p.info().MailboxDepth; d != 3 {
		t.Fatalf("mailbox depth = %d, want 3 (blocker, boom, tick)", d)
	}
	close(gate)
	evs.wait(t, EventRestarted, "ticker", 1)
	roundTrip(t, r)
	select {
	case v := <-ticks:
		t.Fatalf("tick from instance %d reached the restarted actor", v)
	default:
	}
}
