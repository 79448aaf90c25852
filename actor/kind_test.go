package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type vmsg struct {
	add       int
	get       Reply[vstate]
	in, block chan struct{}
	sender    int
	seq       int
	passivate bool
	boom      bool
}

type vstate struct {
	Count    int
	Instance int
}

// vhooks is the shared test harness of vactor: a fake store of counts and
// switches for hook behaviour.
type vhooks struct {
	mu           sync.Mutex
	saved        map[string]int
	activations  map[string]int
	activateErr  func(key string) error
	passivateErr func(key string) error
	inPassivate  chan string   // receives the key when Passivate starts, if set
	holdPassive  chan struct{} // Passivate waits for it, if set
	seen         map[string][]vmsg
}

func newHooks() *vhooks {
	return &vhooks{saved: map[string]int{}, activations: map[string]int{}, seen: map[string][]vmsg{}}
}

func (h *vhooks) activationCount(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.activations[key]
}

type vactor struct {
	h        *vhooks
	key      string
	instance int
	count    int
}

func (a *vactor) Activate(c *Context[vmsg]) error {
	h := a.h
	h.mu.Lock()
	h.activations[a.key]++
	a.instance = h.activations[a.key]
	fn := h.activateErr
	a.count = h.saved[a.key]
	h.mu.Unlock()
	if fn != nil {
		return fn(a.key)
	}
	return nil
}

func (a *vactor) Passivate(c *Context[vmsg]) error {
	h := a.h
	if h.inPassivate != nil {
		h.inPassivate <- a.key
	}
	if h.holdPassive != nil {
		<-h.holdPassive
	}
	h.mu.Lock()
	fn := h.passivateErr
	h.mu.Unlock()
	if fn != nil {
		if err := fn(a.key); err != nil {
			return err
		}
	}
	h.mu.Lock()
	h.saved[a.key] = a.count
	h.mu.Unlock()
	return nil
}

func (a *vactor) Receive(c *Context[vmsg], m vmsg) {
	if m.in != nil {
		close(m.in)
	}
	if m.block != nil {
		<-m.block
	}
	if m.boom {
		panic("boom")
	}
	a.count += m.add
	if m.sender != 0 {
		a.h.mu.Lock()
		a.h.seen[a.key] = append(a.h.seen[a.key], m)
		a.h.mu.Unlock()
	}
	m.get.Send(vstate{Count: a.count, Instance: a.instance})
	if m.passivate {
		c.Passivate()
	}
}

func newVKind(sys *System, h *vhooks, opts KindOptions) *Kind[vmsg] {
	return NewKind(sys, "v", func(key string) Actor[vmsg] { return &vactor{h: h, key: key} }, opts)
}

func askV(t *testing.T, r *Ref[vmsg]) vstate {
	t.Helper()
	v, err := Ask(ctxFor(t, waitLimit), r, func(rep Reply[vstate]) vmsg { return vmsg{get: rep} })
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	return v
}

func TestKindConcurrentGetActivatesOnce(t *testing.T) {
	sys := newTestSystem(t)
	h := newHooks()
	k := newVKind(sys, h, KindOptions{})
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			if i%2 == 0 {
				k.Get("one").Tell(vmsg{add: 1})
			} else {
				k.Tell("one", vmsg{add: 1})
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if got := askV(t, k.Get("one")); got.Count != 100 || got.Instance != 1 {
		t.Fatalf("state = %+v, want count 100 in activation 1", got)
	}
	if n := h.activationCount("one"); n != 1 {
		t.Fatalf("Activate ran %d times, want exactly 1", n)
	}
	if k.Active() != 1 {
		t.Fatalf("Active = %d", k.Active())
	}
}

func TestKindIdlePassivation(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	m := newCountingMetrics()
	sys := newTestSystem(t, WithClock(clk), hook, WithMetrics(m))
	h := newHooks()
	k := newVKind(sys, h, KindOptions{IdleTimeout: time.Minute, SweepInterval: 10 * time.Second})
	ref := k.Get("a")
	ref.Tell(vmsg{add: 5})
	askV(t, ref)
	settle(t, sys)

	// 50 s idle: the sweeps at 10..50 s leave it alone.
	done := sentinel(sys, 50*time.Second)
	clk.Advance(50 * time.Second)
	waitClosed(t, done)
	if got := askV(t, ref); got.Instance != 1 { // the round trip also renews it
		t.Fatalf("passivated before the idle timeout: %+v", got)
	}
	settle(t, sys)
	if n := evs.count(EventPassivated, "a"); n != 0 {
		t.Fatalf("passivated %d times too early", n)
	}
	// A full minute idle: the next sweep passivates it, after Passivate.
	clk.Advance(70 * time.Second)
	evs.wait(t, EventPassivated, "a", 1)
	if k.Active() != 0 {
		t.Fatalf("Active = %d after passivation", k.Active())
	}
	h.mu.Lock()
	saved := h.saved["a"]
	h.mu.Unlock()
	if saved != 5 {
		t.Fatalf("Passivate saved %d, want 5", saved)
	}
	if m.passivated.Load() != 1 {
		t.Fatalf("metrics passivations = %d", m.passivated.Load())
	}
	// The same ref reactivates it with the saved state.
	if got := askV(t, ref); got.Instance != 2 || got.Count != 5 {
		t.Fatalf("after reactivation: %+v, want instance 2 with count 5", got)
	}
}

func TestKindNoPassivationWhileProcessing(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	sys := newTestSystem(t, WithClock(clk), hook)
	h := newHooks()
	k := newVKind(sys, h, KindOptions{IdleTimeout: time.Minute, SweepInterval: 10 * time.Second})
	in, gate := make(chan struct{}), make(chan struct{})
	k.Tell("busy", vmsg{in: in, block: gate})
	waitClosed(t, in)
	// Time passes far beyond the idle timeout while the message runs.
	for i := 0; i < 30; i++ {
		done := sentinel(sys, 10*time.Second)
		clk.Advance(10 * time.Second)
		waitClosed(t, done)
	}
	close(gate)
	// Processing just ended, so the actor counts as active now.
	if got := askV(t, k.Get("busy")); got.Instance != 1 {
		t.Fatalf("actor was passivated while processing: %+v", got)
	}
	settle(t, sys)
	done := sentinel(sys, 30*time.Second)
	clk.Advance(30 * time.Second)
	waitClosed(t, done)
	if got := askV(t, k.Get("busy")); got.Instance != 1 || evs.count(EventPassivated, "busy") != 0 {
		t.Fatalf("passivated within the idle timeout after a long message: %+v", got)
	}
	settle(t, sys)
	clk.Advance(2 * time.Minute)
	evs.wait(t, EventPassivated, "busy", 1)
}

func TestKindMessagesDuringPassivationReachNextActivation(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	h := newHooks()
	h.inPassivate = make(chan string, 1)
	h.holdPassive = make(chan struct{})
	k := newVKind(sys, h, KindOptions{})
	ref := k.Get("p")
	ref.Tell(vmsg{add: 1, passivate: true})
	recv(t, h.inPassivate) // Passivate is running and holds
	for i := 1; i <= 100; i++ {
		if !ref.Tell(vmsg{add: 1, sender: 1, seq: i}) {
			t.Fatalf("Tell %d during passivation refused", i)
		}
	}
	h.mu.Lock()
	h.inPassivate = nil
	h.mu.Unlock()
	close(h.holdPassive)
	evs.wait(t, EventPassivated, "p", 1)
	got := askV(t, ref)
	if got.Instance != 2 || got.Count != 101 {
		t.Fatalf("next activation: %+v, want instance 2 with 1 saved + 100 queued", got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, m := range h.seen["p"] {
		if m.seq != i+1 {
			t.Fatalf("message %d has seq %d: reordered", i, m.seq)
		}
	}
	if len(h.seen["p"]) != 100 {
		t.Fatalf("next activation saw %d messages, want 100", len(h.seen["p"]))
	}
	if sys.DeadLetters().Count != 0 {
		t.Fatalf("dead letters during passivation: %+v", sys.DeadLetters())
	}
}

// TestKindPassivationChurnKeepsOrder makes actors passivate every few
// messages while several senders stream numbered messages to them.
func TestKindPassivationChurnKeepsOrder(t *testing.T) {
	sys := newTestSystem(t)
	h := newHooks()
	k := newVKind(sys, h, KindOptions{MailboxSize: 1 << 16})
	const keys, senders, perSender = 4, 4, 2000
	var wg sync.WaitGroup
	for s := 1; s <= senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 1; i <= perSender; i++ {
				key := fmt.Sprintf("k%d", i%keys)
				ref := k.Get(key)
				if err := ref.TellBlocking(context.Background(), vmsg{add: 1, sender: s, seq: i, passivate: i%7 == 0}); err != nil {
					t.Error(err)
					return
				}
			}
		}(s)
	}
	wg.Wait()
	total := 0
	for i := 0; i < keys; i++ {
		total += askV(t, k.Get(fmt.Sprintf("k%d", i))).Count
	}
	if total != senders*perSender {
		t.Fatalf("total count %d, want %d: messages lost or duplicated across activations", total, senders*perSender)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	activations := 0
	for key, msgs := range h.seen {
		last := map[int]int{}
		for _, m := range msgs {
			if m.seq <= last[m.sender] {
				t.Fatalf("key %s: sender %d seq %d after %d", key, m.sender, m.seq, last[m.sender])
			}
			last[m.sender] = m.seq
		}
		activations += h.activations[key]
	}
	if activations < 100 {
		t.Fatalf("only %d activations: the test did not churn", activations)
	}
	if sys.DeadLetters().Count != 0 {
		t.Fatalf("dead letters: %+v", sys.DeadLetters())
	}
}

func TestKindActivateError(t *testing.T) {
	evs, hook := newEventLog()
	m := newCountingMetrics()
	sys := newTestSystem(t, hook, WithMetrics(m))
	h := newHooks()
	errLoad := errors.New("store down")
	hold := make(chan struct{})
	h.activateErr = func(string) error {
		<-hold
		return errLoad
	}
	k := newVKind(sys, h, KindOptions{})
	ref := k.Get("x")
	ref.Tell(vmsg{add: 1}) // queued behind the failing activation
	ref.Tell(vmsg{add: 1})
	close(hold)
	ev := evs.wait(t, EventActivationFailed, "x", 1)
	if !errors.Is(ev.Err, errLoad) {
		t.Fatalf("event error = %v", ev.Err)
	}
	st := sys.DeadLetters()
	if st.Count != 2 || st.Recent[0].Reason != ReasonActivationFailed {
		t.Fatalf("dead letters = %+v, want the 2 queued messages with reason %q", st, ReasonActivationFailed)
	}
	if m.storeErrorCount("activate") != 1 {
		t.Fatalf("StoreError(activate) = %d", m.storeErrorCount("activate"))
	}
	// The store recovers; the next message activates afresh.
	h.mu.Lock()
	h.activateErr = nil
	h.mu.Unlock()
	if got := askV(t, ref); got.Instance != 2 || got.Count != 0 {
		t.Fatalf("after recovery: %+v", got)
	}
}

func TestKindPassivateErrorKeepsActorActive(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	m := newCountingMetrics()
	sys := newTestSystem(t, WithClock(clk), hook, WithMetrics(m))
	h := newHooks()
	errSave := errors.New("disk full")
	h.passivateErr = func(string) error { return errSave }
	k := newVKind(sys, h, KindOptions{IdleTimeout: time.Minute, SweepInterval: 10 * time.Second})
	k.Tell("x", vmsg{add: 3})
	askV(t, k.Get("x"))
	settle(t, sys)
	clk.Advance(time.Minute)
	ev := evs.wait(t, EventPassivationFailed, "x", 1)
	if !errors.Is(ev.Err, errSave) || m.storeErrorCount("passivate") != 1 {
		t.Fatalf("event %+v, StoreError(passivate) = %d", ev, m.storeErrorCount("passivate"))
	}
	if k.Active() != 1 {
		t.Fatal("actor left memory although Passivate failed")
	}
	// Retried at a later sweep; once the store works, it passivates.
	settle(t, sys)
	clk.Advance(10 * time.Second)
	evs.wait(t, EventPassivationFailed, "x", 2)
	h.mu.Lock()
	h.passivateErr = nil
	h.mu.Unlock()
	settle(t, sys)
	clk.Advance(10 * time.Second)
	evs.wait(t, EventPassivated, "x", 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.saved["x"] != 3 {
		t.Fatalf("saved = %d", h.saved["x"])
	}
}

func TestKindRestartReactivates(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	h := newHooks()
	h.saved["r"] = 40
	k := newVKind(sys, h, KindOptions{Supervisor: fixed(Restart)})
	k.Tell("r", vmsg{add: 2})
	k.Tell("r", vmsg{boom: true})
	evs.wait(t, EventRestarted, "r", 1)
	// The fresh instance ran Activate again and reloaded the saved state
	// (the unsaved +2 is lost with the failed instance).
	if got := askV(t, k.Get("r")); got.Instance != 2 || got.Count != 40 {
		t.Fatalf("after restart: %+v", got)
	}
}

func TestKindStopAndShutdownPassivate(t *testing.T) {
	evs, hook := newEventLog()
	sys := NewSystem(hook)
	h := newHooks()
	k := newVKind(sys, h, KindOptions{DrainOnStop: true})
	ref := k.Get("s")
	ref.Tell(vmsg{add: 7})
	askV(t, ref)
	ref.Stop() // passivate now
	evs.wait(t, EventPassivated, "s", 1)
	if k.Active() != 0 {
		t.Fatal("Ref.Stop did not passivate")
	}
	// Shutdown passivates the active ones and reports hook errors.
	for _, key := range []string{"s", "t"} {
		k.Tell(key, vmsg{add: 1})
	}
	errSave := errors.New("cannot save t")
	h.mu.Lock()
	h.passivateErr = func(key string) error {
		if key == "t" {
			return errSave
		}
		return nil
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	clean, err := sys.Shutdown(ctx)
	if clean || !errors.Is(err, errSave) {
		t.Fatalf("Shutdown = %v, %v; want unclean with the passivation error", clean, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.saved["s"] != 8 {
		t.Fatalf("s saved %d at shutdown, want 8", h.saved["s"])
	}
	waitClosed(t, ref.Done())
	if k.Tell("s", vmsg{}) {
		t.Fatal("Tell after Shutdown accepted")
	}
}
