package actor

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBackoffDoubles(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := b.Delay(i, 0.5); got != w*time.Millisecond {
			t.Fatalf("Delay(%d) = %v, want %v", i, got, w*time.Millisecond)
		}
	}
	if got := b.Delay(10_000, 0.5); got != time.Second {
		t.Fatalf("Delay(10000) = %v, want the cap", got)
	}
	if got := (Backoff{Base: time.Second}).Delay(80, 0.5); got <= 0 {
		t.Fatalf("uncapped huge attempt overflowed to %v", got)
	}
}

func TestBackoffJitterBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := Backoff{Base: 100 * time.Millisecond, Max: 10 * time.Second, Jitter: 0.25}
	for attempt := 0; attempt < 5; attempt++ {
		d := float64(b.Base << attempt)
		lo, hi := time.Duration(d*0.75), time.Duration(d*1.25)
		var min, max time.Duration = 1 << 62, 0
		for i := 0; i < 1000; i++ {
			got := b.Delay(attempt, rng.Float64())
			if got < lo || got >= hi {
				t.Fatalf("attempt %d: delay %v outside [%v, %v)", attempt, got, lo, hi)
			}
			if got < min {
				min = got
			}
			if got > max {
				max = got
			}
		}
		// The band is really used, not collapsed to one value.
		if span := max - min; span < time.Duration(d*0.4) {
			t.Fatalf("attempt %d: jitter spread %v too narrow", attempt, span)
		}
	}
	// Same seed, same delays: deterministic for tests.
	p1 := RestartPolicy{Backoff: b, Rand: rand.New(rand.NewPCG(7, 7)).Float64}
	p2 := RestartPolicy{Backoff: b, Rand: rand.New(rand.NewPCG(7, 7)).Float64}
	for i := 0; i < 5; i++ {
		f := Failure{Restarts: i}
		if d1, d2 := p1.Decide(f), p2.Decide(f); d1 != d2 || d1.Directive != Restart {
			t.Fatalf("seeded decisions differ: %+v vs %+v", d1, d2)
		}
	}
}

func TestRestartPolicyLimits(t *testing.T) {
	now := time.Unix(1000, 0)
	at := func(ago ...time.Duration) []time.Time {
		var ts []time.Time
		for _, a := range ago {
			ts = append(ts, now.Add(-a))
		}
		return ts
	}
	p := RestartPolicy{Backoff: Backoff{Base: time.Second, Max: time.Minute}, Window: time.Minute, MaxFailures: 3}
	// Three failures within the window: still restart, backoff attempt 2.
	d := p.Decide(Failure{Now: now, Restarts: 10, Failures: at(50*time.Second, 20*time.Second, 0)})
	if d.Directive != Restart || d.Delay != 4*time.Second {
		t.Fatalf("3 failures in window: %+v, want restart after 4s", d)
	}
	// A fourth within the window: stop.
	d = p.Decide(Failure{Now: now, Failures: at(50*time.Second, 30*time.Second, 20*time.Second, 0)})
	if d.Directive != Stop {
		t.Fatalf("4 failures in window: %+v, want stop", d)
	}
	// Old failures fall out of the window, and the backoff resets.
	d = p.Decide(Failure{Now: now, Restarts: 10, Failures: at(5*time.Minute, 4*time.Minute, 3*time.Minute, 2*time.Minute, 0)})
	if d.Directive != Restart || d.Delay != time.Second {
		t.Fatalf("failures outside window: %+v, want restart after base delay", d)
	}
	// Max restarts.
	m := RestartPolicy{MaxRestarts: 3}
	if d := m.Decide(Failure{Restarts: 2}); d.Directive != Restart || d.Delay != 0 {
		t.Fatalf("restart 3 of 3: %+v", d)
	}
	if d := m.Decide(Failure{Restarts: 3}); d.Directive != Stop {
		t.Fatalf("after 3 restarts: %+v, want stop", d)
	}
	// Classify picks other directives.
	errFatal := errors.New("fatal")
	c := RestartPolicy{Classify: func(err error) Directive {
		if errors.Is(err, errFatal) {
			return Escalate
		}
		return Restart
	}}
	if d := c.Decide(Failure{Err: errFatal}); d.Directive != Escalate {
		t.Fatalf("classified: %+v", d)
	}
	if d := AllForOne(c).Decide(Failure{Err: errors.New("x")}); d.Scope != AllForOneScope {
		t.Fatalf("AllForOne scope not applied: %+v", d)
	}
}

// stateful counts its own messages; a fresh instance starts from zero.
type stateful struct {
	id    int
	count int
}

type smsg struct {
	boom bool
	get  Reply[[2]int]
}

func (a *stateful) Receive(c *Context[smsg], m smsg) {
	if m.boom {
		panic("boom")
	}
	a.count++
	m.get.Send([2]int{a.id, a.count})
}

func askState(t *testing.T, r *Ref[smsg]) [2]int {
	t.Helper()
	v, err := Ask(ctxFor(t, waitLimit), r, func(rep Reply[[2]int]) smsg { return smsg{get: rep} })
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	return v
}

func fixed(d Directive) Supervisor {
	return SupervisorFunc(func(Failure) Decision { return Decision{Directive: d} })
}

func TestRestartBuildsFreshInstance(t *testing.T) {
	evs, hook := newEventLog()
	m := newCountingMetrics()
	sys := newTestSystem(t, hook, WithMetrics(m))
	var produced atomic.Int32
	r, _ := Spawn(sys, "s", func() Actor[smsg] { return &stateful{id: int(produced.Add(1))} }, WithSupervisor(fixed(Restart)))
	askState(t, r)
	askState(t, r)
	r.Tell(smsg{boom: true})
	if got := askState(t, r); got != [2]int{2, 1} {
		t.Fatalf("after restart: instance/count = %v, want fresh instance 2 with count 1", got)
	}
	fail := evs.wait(t, EventFailed, "s", 1)
	var pe *PanicError
	if !errors.As(fail.Err, &pe) || pe.Value != "boom" || fail.Directive != Restart {
		t.Fatalf("failed event = %+v", fail)
	}
	evs.wait(t, EventRestarted, "s", 1)
	if m.restarted.Load() != 1 {
		t.Fatalf("metrics restarts = %d", m.restarted.Load())
	}
	if info := r.p.info(); info.Restarts != 1 {
		t.Fatalf("info restarts = %d", info.Restarts)
	}
}

func TestResumeKeepsState(t *testing.T) {
	sys := newTestSystem(t)
	r, _ := Spawn(sys, "s", func() Actor[smsg] { return &stateful{id: 1} }, WithSupervisor(fixed(Resume)))
	askState(t, r)
	r.Tell(smsg{boom: true})
	if got := askState(t, r); got != [2]int{1, 2} {
		t.Fatalf("after resume: %v, want same instance with count 2", got)
	}
}

func TestStopDirectiveDeadLettersQueue(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	r, _ := Spawn(sys, "c", newCounter, WithSupervisor(fixed(Stop)), WithDrainOnStop(true))
	release := blockActor(t, r)
	r.Tell(cmsg{boom: true})
	r.Tell(cmsg{add: 1})
	r.Tell(cmsg{add: 1})
	release()
	waitClosed(t, r.Done())
	ev := evs.wait(t, EventStopped, "c", 1)
	if ev.Err == nil {
		t.Fatal("stopped event must carry the failure")
	}
	if st := sys.DeadLetters(); st.Count != 2 {
		t.Fatalf("dead letters = %d, want the 2 queued messages (no drain after a failure)", st.Count)
	}
}

func TestBackoffDelaysRestart(t *testing.T) {
	clk := NewManualClock(time.Unix(0, 0))
	evs, hook := newEventLog()
	sys := newTestSystem(t, WithClock(clk), hook)
	var produced atomic.Int32
	r, _ := Spawn(sys, "slow", func() Actor[smsg] { return &stateful{id: int(produced.Add(1))} },
		WithSupervisor(RestartPolicy{Backoff: Backoff{Base: time.Second, Max: time.Minute}}))
	r.Tell(smsg{boom: true})
	got := make(chan [2]int, 1)
	go func() {
		v, err := Ask(context.Background(), r, func(rep Reply[[2]int]) smsg { return smsg{get: rep} })
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	ev := evs.wait(t, EventRestarted, "slow", 1)
	if ev.Delay != time.Second {
		t.Fatalf("first restart delay = %v, want 1s", ev.Delay)
	}
	waitUntil(t, "ask queued", func() bool { return r.p.info().MailboxDepth == 1 })
	done := sentinel(sys, 999*time.Millisecond)
	clk.Advance(999 * time.Millisecond)
	waitClosed(t, done)
	if produced.Load() != 1 {
		t.Fatal("restarted before the backoff delay elapsed")
	}
	clk.Advance(time.Millisecond)
	if v := recv(t, got); v != [2]int{2, 1} {
		t.Fatalf("after backoff: %v", v)
	}
	// Second failure: the delay doubles.
	r.Tell(smsg{boom: true})
	if ev := evs.wait(t, EventRestarted, "slow", 2); ev.Delay != 2*time.Second {
		t.Fatalf("second restart delay = %v, want 2s", ev.Delay)
	}
}

func TestMaxRestartsStops(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	var produced atomic.Int32
	r, _ := Spawn(sys, "flaky", func() Actor[smsg] { return &stateful{id: int(produced.Add(1))} },
		WithSupervisor(RestartPolicy{MaxRestarts: 2}))
	for i := 0; i < 3; i++ {
		r.Tell(smsg{boom: true})
	}
	waitClosed(t, r.Done())
	if produced.Load() != 3 || evs.count(EventRestarted, "flaky") != 2 {
		t.Fatalf("instances = %d, restarts = %d; want 3 and 2", produced.Load(), evs.count(EventRestarted, "flaky"))
	}
	if ev := evs.wait(t, EventFailed, "flaky", 3); ev.Directive != Stop {
		t.Fatalf("third failure directive = %v, want stop", ev.Directive)
	}
}

// failingStart fails Started a given number of times.
type failingStart struct {
	failures *atomic.Int32
	ready    chan<- struct{}
}

func (a *failingStart) Started(*Context[smsg]) error {
	if a.failures.Add(-1) >= 0 {
		return errors.New("not yet")
	}
	close(a.ready)
	return nil
}

func (a *failingStart) Receive(*Context[smsg], smsg) {}

func TestStartedErrorIsSupervised(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	var failures atomic.Int32
	failures.Store(2)
	ready := make(chan struct{})
	Spawn(sys, "starter", func() Actor[smsg] { return &failingStart{failures: &failures, ready: ready} },
		WithSupervisor(fixed(Restart)))
	waitClosed(t, ready)
	if n := evs.count(EventRestarted, "starter"); n != 2 {
		t.Fatalf("restarts = %d, want 2", n)
	}
	if ev := evs.wait(t, EventFailed, "starter", 1); ev.Err == nil || ev.Err.Error() != "not yet" {
		t.Fatalf("failure = %+v", ev)
	}
}

// parent spawns children in Started and reports them.
type parent struct {
	names    []string
	childSup Supervisor
	produce  func(name string) Producer[smsg]
	refs     chan<- map[string]*Ref[smsg]
	id       int
}

func (a *parent) Started(c *Context[string]) error {
	refs := map[string]*Ref[smsg]{}
	for _, n := range a.names {
		r, err := SpawnChild(c, n, a.produce(n), WithSupervisor(a.childSup))
		if err != nil {
			return err
		}
		refs[n] = r
	}
	a.refs <- refs
	return nil
}

func (a *parent) Receive(*Context[string], string) {}

func TestAllForOneRestartsSiblings(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	var mu sync.Mutex
	produced := map[string]int{}
	refs := make(chan map[string]*Ref[smsg], 1)
	Spawn(sys, "p", func() Actor[string] {
		return &parent{
			names:    []string{"a", "b", "c"},
			childSup: AllForOne(fixed(Restart)),
			refs:     refs,
			produce: func(name string) Producer[smsg] {
				return func() Actor[smsg] {
					mu.Lock()
					defer mu.Unlock()
					produced[name]++
					return &stateful{id: produced[name]}
				}
			},
		}
	})
	kids := recv(t, refs)
	for _, r := range kids {
		askState(t, r)
	}
	kids["b"].Tell(smsg{boom: true})
	for _, k := range []string{"p/a", "p/b", "p/c"} {
		evs.wait(t, EventRestarted, k, 1)
	}
	for n, r := range kids {
		if got := askState(t, r); got != [2]int{2, 1} {
			t.Fatalf("child %s after all-for-one: %v, want fresh instance 2", n, got)
		}
	}
	if kids["a"].Key() != "p/a" {
		t.Fatalf("child key = %q", kids["a"].Key())
	}
}

func TestOneForOneRestartsOnlyTheFailedChild(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	refs := make(chan map[string]*Ref[smsg], 1)
	var ids sync.Map
	Spawn(sys, "p", func() Actor[string] {
		return &parent{
			names: []string{"a", "b"}, childSup: fixed(Restart), refs: refs,
			produce: func(name string) Producer[smsg] {
				return func() Actor[smsg] {
					v, _ := ids.LoadOrStore(name, new(atomic.Int32))
					return &stateful{id: int(v.(*atomic.Int32).Add(1))}
				}
			},
		}
	})
	kids := recv(t, refs)
	kids["a"].Tell(smsg{boom: true})
	evs.wait(t, EventRestarted, "p/a", 1)
	if got := askState(t, kids["b"]); got[0] != 1 {
		t.Fatalf("sibling restarted under one-for-one: %v", got)
	}
}

func TestEscalateFailsParent(t *testing.T) {
	evs, hook := newEventLog()
	sys := newTestSystem(t, hook)
	refs := make(chan map[string]*Ref[smsg], 2)
	var parents atomic.Int32
	parentFailure := make(chan Failure, 1)
	Spawn(sys, "boss", func() Actor[string] {
		return &parent{
			id: int(parents.Add(1)), names: []string{"worker"}, childSup: fixed(Escalate), refs: refs,
			produce: func(string) Producer[smsg] {
				return func() Actor[smsg] { return &stateful{id: 1} }
			},
		}
	}, WithSupervisor(SupervisorFunc(func(f Failure) Decision {
		parentFailure <- f
		return Decision{Directive: Restart}
	})))
	first := recv(t, refs)["worker"]
	first.Tell(smsg{boom: true})
	f := recv(t, parentFailure)
	var esc *EscalatedError
	var pe *PanicError
	if !errors.As(f.Err, &esc) || esc.Child != "boss/worker" || !errors.As(f.Err, &pe) {
		t.Fatalf("parent failure = %v, want an EscalatedError from boss/worker wrapping the panic", f.Err)
	}
	evs.wait(t, EventRestarted, "boss", 1)
	waitClosed(t, first.Done()) // the escalating child stopped
	second := recv(t, refs)["worker"]
	if parents.Load() != 2 {
		t.Fatalf("parent instances = %d, want 2", parents.Load())
	}
	if got := askState(t, second); got != [2]int{1, 1} {
		t.Fatalf("new child: %v", got)
	}
}

func TestChildrenStopWithParent(t *testing.T) {
	sys := newTestSystem(t)
	refs := make(chan map[string]*Ref[smsg], 1)
	p, _ := Spawn(sys, "p", func() Actor[string] {
		return &parent{names: []string{"x", "y"}, childSup: fixed(Restart), refs: refs,
			produce: func(string) Producer[smsg] { return func() Actor[smsg] { return &stateful{} } }}
	})
	kids := recv(t, refs)
	p.Stop()
	waitClosed(t, p.Done())
	for n, r := range kids {
		select {
		case <-r.Done():
		default:
			t.Fatalf("child %s still running after its parent's Done", n)
		}
	}
	if len(sys.Actors()) != 0 {
		t.Fatalf("actors left: %+v", sys.Actors())
	}
}
