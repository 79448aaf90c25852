package actor

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for mailboxes.
const (
	DefaultMailboxSize = 1024
	DefaultThroughput  = 128
)

// A mailbox buffer larger than this is released when the actor goes idle,
// so a burst does not pin memory in an idle actor.
const idleKeepSlots = 8

type procConfig struct {
	mailboxSize int
	throughput  int
	drain       bool
	supervisor  Supervisor
}

func (c *procConfig) fill() {
	if c.mailboxSize <= 0 {
		c.mailboxSize = DefaultMailboxSize
	}
	if c.throughput <= 0 {
		c.throughput = DefaultThroughput
	}
	if c.supervisor == nil {
		c.supervisor = DefaultSupervisor
	}
}

type envelope[M any] struct {
	msg   M
	trace string
	// timer is the instance generation a timer message belongs to; 0 for
	// ordinary messages. A timer message from an earlier instance is
	// discarded, so no stale tick reaches a restarted actor.
	timer uint32
}

// Mailbox states.
const (
	stateOpen     uint8 = iota
	stateStopping       // stop requested: user messages refused, queue drains or dies
	stateMoved          // a virtual actor left memory: senders look the key up again
	stateDead           // terminated
)

type enqResult uint8

const (
	enqOK enqResult = iota
	enqFull
	enqStopped
	enqMoved
)

func (r enqResult) reason() string {
	if r == enqFull {
		return ReasonMailboxFull
	}
	return ReasonStopped
}

func (r enqResult) err() error {
	switch r {
	case enqOK:
		return nil
	case enqFull:
		return ErrMailboxFull
	}
	return ErrStopped
}

type sysKind uint8

const (
	sysStop        sysKind = iota + 1
	sysResume              // a restart's delay is over: build the new instance
	sysRestart             // all-for-one: a sibling failed
	sysPassivate           // leave memory (virtual actors)
	sysChildFailed         // a child escalated
)

type sysMsg struct {
	kind     sysKind
	gen      uint32
	delay    time.Duration
	err      error
	force    bool
	shutdown bool
}

// procExt holds what most actors never need, allocated on first use to keep
// an idle actor small.
type procExt struct {
	children map[string]node // guarded by process.mu
	failures []time.Time     // owned by the run goroutine
	base     context.Context // guarded by process.mu
	cancel   context.CancelFunc
	forced   bool          // Shutdown gave up: contexts are born cancelled
	done     chan struct{} // guarded by process.mu
}

// process is one actor: a mailbox that is scheduled onto a goroutine only
// while it has work, plus the current instance.
type process[M any] struct {
	self     Ref[M]
	ctx      Context[M]
	sys      *System
	kind     *Kind[M] // nil for Spawn/SpawnChild actors
	cfg      *procConfig
	producer Producer[M]
	parent   node

	mu               sync.Mutex
	buf              []envelope[M] // ring; len(buf) is its capacity
	head, n          int
	sysq             []sysMsg
	state            uint8
	running          bool // a goroutine owns the mailbox
	suspended        bool // waiting for a restart delay
	startPending     bool
	passivatePending bool
	finished         bool
	room             chan struct{} // closed when space frees up, for TellBlocking
	ext              *procExt

	interrupt  atomic.Bool // stop the current batch early
	gen        atomic.Uint32
	processed  atomic.Uint64
	restarts   atomic.Uint32
	lastActive atomic.Int64 // System.since() after the last batch
	startedAt  int64

	// Owned by the goroutine that runs the mailbox.
	actor     Actor[M]
	startedOK bool
	activated bool
	stopping  bool
	noDrain   bool
	shutdown  bool
	stopCause error
	trace     string
}

func (p *process[M]) init(sys *System, key string) {
	p.sys = sys
	p.ctx.p = p
	p.gen.Store(1)
	now := sys.since()
	p.startedAt = now
	p.lastActive.Store(now)
	p.self.key = key
	p.startPending = true
	p.running = true
}

func (p *process[M]) kindName() string {
	if p.kind != nil {
		return p.kind.name
	}
	return ""
}

func (p *process[M]) timerGen() uint32 { return p.gen.Load() }

// enqueue appends e unless the mailbox is full or closed, and schedules the
// mailbox onto a goroutine if it was idle.
func (p *process[M]) enqueue(e envelope[M]) enqResult {
	r, _ := p.offer(e, false)
	return r
}

// offer is enqueue; with wantRoom, a full mailbox also returns a channel
// that is closed once space frees up (for TellBlocking).
func (p *process[M]) offer(e envelope[M], wantRoom bool) (enqResult, <-chan struct{}) {
	p.mu.Lock()
	if p.state != stateOpen {
		st := p.state
		p.mu.Unlock()
		if st == stateMoved {
			return enqMoved, nil
		}
		return enqStopped, nil
	}
	if p.n == len(p.buf) && !p.growLocked() {
		var room chan struct{}
		if wantRoom {
			if p.room == nil {
				p.room = make(chan struct{})
			}
			room = p.room
		}
		p.mu.Unlock()
		return enqFull, room
	}
	p.pushLocked(e)
	start := !p.running && !p.suspended
	if start {
		p.running = true
	}
	p.mu.Unlock()
	if start {
		go p.run()
	}
	return enqOK, nil
}

func (p *process[M]) pushLocked(e envelope[M]) {
	i := p.head + p.n
	if i >= len(p.buf) {
		i -= len(p.buf)
	}
	p.buf[i] = e
	p.n++
}

func (p *process[M]) growLocked() bool {
	limit := p.cfg.mailboxSize
	if len(p.buf) >= limit {
		return false
	}
	c := len(p.buf) * 2
	if c < 4 {
		c = 4
	}
	if c > limit {
		c = limit
	}
	nb := make([]envelope[M], c)
	p.copyLocked(nb)
	p.buf = nb
	p.head = 0
	return true
}

// copyLocked copies the queued messages, oldest first, to the front of dst
// (len(dst) >= p.n).
func (p *process[M]) copyLocked(dst []envelope[M]) {
	end := p.head + p.n
	if end <= len(p.buf) {
		copy(dst, p.buf[p.head:end])
		return
	}
	k := copy(dst, p.buf[p.head:])
	copy(dst[k:], p.buf[:end-len(p.buf)])
}

// releaseLocked frees the k oldest slots after they were processed.
func (p *process[M]) releaseLocked(k int) {
	if k == 0 {
		return
	}
	clear(p.buf[p.head : p.head+k])
	p.head += k
	if p.head == len(p.buf) {
		p.head = 0
	}
	p.n -= k
	if p.n == 0 {
		p.head = 0
	}
	p.closeRoomLocked()
}

// takeAllLocked empties the mailbox and returns its messages in order.
func (p *process[M]) takeAllLocked() []envelope[M] {
	if p.n == 0 {
		p.buf, p.head = nil, 0
		return nil
	}
	out := make([]envelope[M], p.n)
	p.copyLocked(out)
	p.buf, p.head, p.n = nil, 0, 0
	return out
}

func (p *process[M]) closeRoomLocked() {
	if p.room != nil {
		close(p.room)
		p.room = nil
	}
}

// postSys queues a system message; system messages run before user
// messages and also while the actor is suspended.
func (p *process[M]) postSys(s sysMsg) bool {
	p.mu.Lock()
	if p.finished || p.state == stateDead || p.state == stateMoved {
		p.mu.Unlock()
		return false
	}
	p.sysq = append(p.sysq, s)
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		go p.run()
	}
	return true
}

// requestStop refuses further user messages at once and asks the mailbox
// goroutine to drain (if configured) and terminate.
func (p *process[M]) requestStop(shutdown bool) {
	p.mu.Lock()
	if p.state != stateOpen {
		p.mu.Unlock()
		return
	}
	p.state = stateStopping
	p.sysq = append(p.sysq, sysMsg{kind: sysStop, shutdown: shutdown})
	p.interrupt.Store(true)
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		go p.run()
	}
}

// requestPassivate asks a virtual actor to leave memory. Without force it
// only applies to an actor that is idle right now; the actor re-checks its
// idleness inside its own turn.
func (p *process[M]) requestPassivate(force bool) {
	p.mu.Lock()
	if p.state != stateOpen || p.passivatePending || p.suspended ||
		(!force && (p.running || p.n > 0)) {
		p.mu.Unlock()
		return
	}
	p.passivatePending = true
	p.sysq = append(p.sysq, sysMsg{kind: sysPassivate, force: force})
	start := !p.running
	p.running = true
	p.mu.Unlock()
	if start {
		go p.run()
	}
}

// run owns the mailbox until it is empty, the actor is suspended or it
// terminates. It yields the processor after cfg.throughput messages so one
// busy actor cannot starve others.
func (p *process[M]) run() {
	p.sys.running.Add(1)
	defer p.sys.running.Add(-1)
	budget := p.cfg.throughput
	kind := p.kindName()
	for {
		p.mu.Lock()
		if p.startPending {
			p.startPending = false
			p.mu.Unlock()
			if p.startInstance() {
				return
			}
			continue
		}
		if len(p.sysq) > 0 {
			s := p.sysq[0]
			if len(p.sysq) == 1 {
				p.sysq = nil
			} else {
				p.sysq[0] = sysMsg{}
				p.sysq = p.sysq[1:]
			}
			p.mu.Unlock()
			if p.handleSys(s) {
				return
			}
			continue
		}
		if p.stopping {
			if !p.cfg.drain || p.noDrain || p.actor == nil || p.suspended || p.n == 0 {
				p.mu.Unlock()
				p.terminate()
				return
			}
		} else if p.suspended || p.n == 0 || p.actor == nil {
			p.running = false
			if p.n == 0 && len(p.buf) > idleKeepSlots {
				p.buf, p.head = nil, 0
			}
			p.mu.Unlock()
			return
		}
		if budget <= 0 {
			p.mu.Unlock()
			runtime.Gosched()
			budget = p.cfg.throughput
			continue
		}
		k := p.n
		if k > budget {
			k = budget
		}
		if end := len(p.buf) - p.head; k > end {
			k = end
		}
		depth := p.n
		chunk := p.buf[p.head : p.head+k]
		p.mu.Unlock()

		p.sys.metrics.MailboxDepth(kind, depth)
		done, err := p.invoke(chunk)
		p.mu.Lock()
		p.releaseLocked(done)
		p.mu.Unlock()
		if done > 0 {
			p.processed.Add(uint64(done))
			p.sys.metrics.MessagesProcessed(kind, done)
			p.lastActive.Store(p.sys.since())
			budget -= done
		}
		if err != nil {
			p.handleFailure(err)
		}
	}
}

// invoke runs Receive for each message of chunk and reports how many were
// consumed (a failing message counts as consumed).
func (p *process[M]) invoke(chunk []envelope[M]) (done int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
			done++
		}
		p.trace = ""
	}()
	c := &p.ctx
	gen := p.gen.Load()
	a := p.actor
	for done = 0; done < len(chunk); done++ {
		if p.interrupt.Load() {
			return done, nil
		}
		e := &chunk[done]
		if e.timer != 0 && e.timer != gen {
			continue
		}
		p.trace = e.trace
		a.Receive(c, e.msg)
	}
	return done, nil
}

// protect runs a hook, turning a panic into a *PanicError.
func (p *process[M]) protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
		p.trace = ""
	}()
	return fn()
}

func (p *process[M]) handleSys(s sysMsg) (exit bool) {
	switch s.kind {
	case sysStop:
		p.stopping = true
		p.shutdown = p.shutdown || s.shutdown
		p.interrupt.Store(false)
	case sysResume:
		if s.gen != p.gen.Load() || p.stopping {
			return false
		}
		p.mu.Lock()
		p.suspended = false
		p.mu.Unlock()
		return p.startInstance()
	case sysRestart:
		if p.stopping || p.actor == nil {
			return false
		}
		p.restart(s.delay)
	case sysPassivate:
		return p.tryPassivate(s.force)
	case sysChildFailed:
		if !p.stopping {
			p.handleFailure(s.err)
		}
	}
	return false
}

// startInstance builds a fresh instance and runs its Activate (virtual
// actors) and Started hooks. It reports whether the process terminated.
func (p *process[M]) startInstance() (exit bool) {
	var a Actor[M]
	err := p.protect(func() error {
		if p.kind != nil {
			a = p.kind.produce(p.self.key)
		} else {
			a = p.producer()
		}
		if a == nil {
			return fmt.Errorf("actor %s: producer returned nil", p.self.key)
		}
		return nil
	})
	if err != nil {
		p.handleFailure(err)
		return false
	}
	p.actor = a
	p.startedOK = false
	if p.kind != nil {
		if act, ok := a.(Activator[M]); ok {
			if err := p.protect(func() error { return act.Activate(&p.ctx) }); err != nil {
				p.activationFailed(err)
				return true
			}
		}
	}
	if st, ok := a.(Starter[M]); ok {
		if err := p.protect(func() error { return st.Started(&p.ctx) }); err != nil {
			p.handleFailure(err)
			return false
		}
	}
	p.startedOK = true
	if !p.activated {
		p.activated = true
		p.sys.metrics.ActorActivated(p.kindName())
		typ := EventStarted
		if p.kind != nil {
			typ = EventActivated
		}
		p.sys.emit(LifecycleEvent{Type: typ, Key: p.self.key, Kind: p.kindName()})
	}
	return false
}

func (p *process[M]) activationFailed(err error) {
	p.sys.metrics.StoreError("activate", err)
	p.sys.logger.Warn("actor: activation failed", "kind", p.kindName(), "actor", p.self.key, "error", err)
	p.startedOK = false
	p.finish(finDrop, err, false)
	p.sys.emit(LifecycleEvent{Type: EventActivationFailed, Key: p.self.key, Kind: p.kindName(), Err: err})
}

func (p *process[M]) extLocked() *procExt {
	if p.ext == nil {
		p.ext = &procExt{}
	}
	return p.ext
}

// handleFailure asks the supervisor what to do about err and does it; the
// run loop then terminates the actor if the decision was to stop.
func (p *process[M]) handleFailure(err error) {
	now := p.sys.clock.Now()
	p.mu.Lock()
	ext := p.extLocked()
	p.mu.Unlock()
	ext.failures = append(ext.failures, now)
	if len(ext.failures) > 64 {
		ext.failures = append(ext.failures[:0], ext.failures[len(ext.failures)-64:]...)
	}
	f := Failure{
		Key:      p.self.key,
		Kind:     p.kindName(),
		Err:      err,
		Restarts: int(p.restarts.Load()),
		Failures: append([]time.Time(nil), ext.failures...),
		Now:      now,
	}
	d := p.decide(f)
	if d.Directive == Resume && p.actor == nil {
		d.Directive = Stop // nothing to resume
	}
	p.sys.logger.Error("actor: failed", "kind", f.Kind, "actor", f.Key, "error", err, "directive", d.Directive.String())
	p.sys.emit(LifecycleEvent{Type: EventFailed, Key: f.Key, Kind: f.Kind, Err: err, Directive: d.Directive})
	switch d.Directive {
	case Resume:
		p.startedOK = true
	case Restart:
		if d.Scope == AllForOneScope && p.parent != nil {
			for _, sib := range p.parent.childNodes() {
				if sib != node(p) {
					sib.postSys(sysMsg{kind: sysRestart, delay: d.Delay})
				}
			}
		}
		p.restart(d.Delay)
	default: // Stop, Escalate
		if d.Directive == Escalate && p.parent != nil {
			p.parent.postSys(sysMsg{kind: sysChildFailed, err: &EscalatedError{Child: p.self.key, Err: err}})
		}
		if d.Directive == Stop && d.Scope == AllForOneScope && p.parent != nil {
			for _, sib := range p.parent.childNodes() {
				if sib != node(p) {
					sib.stop()
				}
			}
		}
		p.stopping = true
		p.noDrain = true
		p.stopCause = err
	}
}

func (p *process[M]) decide(f Failure) (d Decision) {
	defer func() {
		if r := recover(); r != nil {
			d = Decision{Directive: Stop}
		}
	}()
	return p.cfg.supervisor.Decide(f)
}

// dropInstance retires the current instance: its timers die (generation
// bump), its children stop, its Stopped hook runs and its context is
// cancelled.
func (p *process[M]) dropInstance() {
	p.gen.Add(1)
	p.stopChildren()
	if p.startedOK {
		if st, ok := p.actor.(Stopper[M]); ok {
			if err := p.protect(func() error { st.Stopped(&p.ctx); return nil }); err != nil {
				p.sys.logger.Error("actor: Stopped hook panicked", "actor", p.self.key, "error", err)
			}
		}
	}
	p.mu.Lock()
	if p.ext != nil && p.ext.cancel != nil {
		p.ext.cancel()
		p.ext.base, p.ext.cancel = nil, nil
	}
	p.mu.Unlock()
	p.actor = nil
	p.startedOK = false
}

func (p *process[M]) restart(delay time.Duration) {
	p.dropInstance()
	p.restarts.Add(1)
	gen := p.gen.Load()
	p.mu.Lock()
	p.suspended = true
	if delay <= 0 {
		p.sysq = append(p.sysq, sysMsg{kind: sysResume, gen: gen})
	}
	p.mu.Unlock()
	if delay > 0 {
		p.sys.sched.add(p.sys.clock.Now().Add(delay), 0, p, gen, func() {
			p.postSys(sysMsg{kind: sysResume, gen: gen})
		})
	}
	p.sys.metrics.ActorRestarted(p.kindName())
	p.sys.emit(LifecycleEvent{Type: EventRestarted, Key: p.self.key, Kind: p.kindName(), Delay: delay})
}

func (p *process[M]) tryPassivate(force bool) (exit bool) {
	p.interrupt.Store(false)
	p.mu.Lock()
	p.passivatePending = false
	busy := p.n > 0
	p.mu.Unlock()
	if p.stopping || p.actor == nil || p.kind == nil {
		return false
	}
	if !force && (busy || p.sys.since()-p.lastActive.Load() < int64(p.kind.idle)) {
		return false
	}
	if pa, ok := p.actor.(Passivator[M]); ok && p.startedOK {
		if err := p.protect(func() error { return pa.Passivate(&p.ctx) }); err != nil {
			p.sys.metrics.StoreError("passivate", err)
			p.sys.logger.Warn("actor: passivation failed; staying active", "kind", p.kind.name, "actor", p.self.key, "error", err)
			p.sys.emit(LifecycleEvent{Type: EventPassivationFailed, Key: p.self.key, Kind: p.kind.name, Err: err})
			return false
		}
	}
	p.finish(finMove, nil, true)
	return true
}

func (p *process[M]) terminate() {
	mode := finStop
	if p.kind != nil {
		if p.shutdown && p.stopCause == nil && p.startedOK {
			if pa, ok := p.actor.(Passivator[M]); ok {
				if err := p.protect(func() error { return pa.Passivate(&p.ctx) }); err != nil {
					p.sys.metrics.StoreError("passivate", err)
					p.sys.emit(LifecycleEvent{Type: EventPassivationFailed, Key: p.self.key, Kind: p.kind.name, Err: err})
					p.sys.recordStopErr(fmt.Errorf("actor: passivate %s/%s: %w", p.kind.name, p.self.key, err))
				}
			}
		}
		if !p.shutdown {
			mode = finMove
		}
	}
	p.finish(mode, p.stopCause, false)
}

type finishMode uint8

const (
	finStop finishMode = iota // queued messages become dead letters
	finMove                   // virtual actor: queued messages go to the next activation
	finDrop                   // virtual actor failed to activate: queued messages become dead letters, new ones reactivate
)

// finish tears the actor down and hands over or dead-letters what is left
// in its mailbox.
func (p *process[M]) finish(mode finishMode, cause error, passivated bool) {
	p.dropInstance()
	var left []envelope[M]
	var next *process[M]
	if p.kind != nil {
		left, next = p.kind.release(p, mode)
	} else {
		p.mu.Lock()
		p.state = stateDead
		left = p.takeAllLocked()
		p.closeRoomLocked()
		p.sysq = nil
		p.mu.Unlock()
		p.sys.unregister(p.self.key, p)
		if p.parent != nil {
			p.parent.removeChild(p.self.key)
		}
	}
	reason := ReasonStopped
	if mode == finDrop {
		reason = ReasonActivationFailed
	}
	for i := range left {
		p.sys.deadLetter(p.self.key, reason, any(left[i].msg), left[i].trace)
	}
	if next != nil {
		go next.run()
	}
	kind := p.kindName()
	// Departures are counted only for actors counted in by ActorActivated,
	// so one whose start never succeeded (producer or Started failed, then
	// stopped) cannot drive an in-memory gauge below zero.
	if passivated {
		if p.activated {
			p.sys.metrics.ActorPassivated(kind)
		}
		p.sys.emit(LifecycleEvent{Type: EventPassivated, Key: p.self.key, Kind: kind})
	} else if mode != finDrop {
		if p.activated {
			p.sys.metrics.ActorStopped(kind)
		}
		p.sys.emit(LifecycleEvent{Type: EventStopped, Key: p.self.key, Kind: kind, Err: cause})
	}
	p.mu.Lock()
	p.finished = true
	p.sysq = nil
	if p.ext != nil && p.ext.done != nil {
		close(p.ext.done)
	}
	p.mu.Unlock()
	p.sys.live.done()
}

func (p *process[M]) stopChildren() {
	kids := p.childNodes()
	for _, c := range kids {
		c.stop()
	}
	for _, c := range kids {
		<-c.doneCh()
	}
}

// context returns the instance's base context, creating it on first use.
func (p *process[M]) context() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	ext := p.extLocked()
	if ext.base == nil {
		ext.base, ext.cancel = context.WithCancel(context.Background())
		if p.finished || ext.forced {
			ext.cancel()
		}
	}
	return ext.base
}

// node interface.

func (p *process[M]) isRoot() bool { return p.parent == nil }
func (p *process[M]) stop()        { p.requestStop(false) }

func (p *process[M]) doneCh() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return closedChan
	}
	ext := p.extLocked()
	if ext.done == nil {
		ext.done = make(chan struct{})
	}
	return ext.done
}

func (p *process[M]) addChild(key string, c node) {
	p.mu.Lock()
	ext := p.extLocked()
	if ext.children == nil {
		ext.children = map[string]node{}
	}
	ext.children[key] = c
	p.mu.Unlock()
}

func (p *process[M]) removeChild(key string) {
	p.mu.Lock()
	if p.ext != nil {
		delete(p.ext.children, key)
	}
	p.mu.Unlock()
}

func (p *process[M]) childNodes() []node {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ext == nil || len(p.ext.children) == 0 {
		return nil
	}
	out := make([]node, 0, len(p.ext.children))
	for _, c := range p.ext.children {
		out = append(out, c)
	}
	return out
}

func (p *process[M]) info() ActorInfo {
	p.mu.Lock()
	depth := p.n
	p.mu.Unlock()
	return ActorInfo{
		Key:          p.self.key,
		Kind:         p.kindName(),
		MailboxDepth: depth,
		Processed:    p.processed.Load(),
		Restarts:     int(p.restarts.Load()),
		StartedAt:    p.sys.at(p.startedAt),
		LastActive:   p.sys.at(p.lastActive.Load()),
	}
}

func (p *process[M]) forceCancel() {
	p.mu.Lock()
	ext := p.extLocked()
	ext.forced = true
	if ext.cancel != nil {
		ext.cancel()
	}
	p.mu.Unlock()
}
