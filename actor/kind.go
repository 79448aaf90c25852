package actor

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// KindOptions configures a kind of virtual actors.
type KindOptions struct {
	// IdleTimeout passivates an actor that has processed nothing for this
	// long; 0 keeps actors in memory until Shutdown or Ref.Stop. Pending
	// in-memory timers (Context.Schedule) do not keep an actor active and
	// die with it; use durable reminders for work that must outlive
	// passivation.
	IdleTimeout time.Duration
	// SweepInterval is how often idle actors are looked for (default
	// IdleTimeout/4, at least 1 ms), so an actor passivates between
	// IdleTimeout and IdleTimeout+SweepInterval after its last message.
	SweepInterval time.Duration
	// MailboxSize and Throughput are as WithMailboxSize and WithThroughput.
	MailboxSize int
	Throughput  int
	// DrainOnStop makes Shutdown process queued messages before the
	// Passivate hook runs.
	DrainOnStop bool
	// Supervisor handles failures (default DefaultSupervisor). A restart
	// builds a fresh instance and runs Activate again.
	Supervisor Supervisor
}

const kindShards = 32

type kindShard[M any] struct {
	mu sync.RWMutex
	m  map[string]*process[M]
	_  [40]byte // keep shards' locks on separate cache lines
}

// Kind is a family of virtual actors addressed by key: an actor exists in
// memory only while it is used, is activated on demand by the first message
// or Get for its key, exactly once per key per System, and passivates when
// idle.
type Kind[M any] struct {
	sys     *System
	name    string
	produce func(key string) Actor[M]
	cfg     procConfig
	idle    time.Duration
	seed    maphash.Seed
	shards  [kindShards]kindShard[M]
	active  atomic.Int64
	closed  atomic.Bool
	done    chan struct{}
	doneMu  sync.Once
	sweep   CancelFunc

	remMu sync.Mutex
	rem   *reminderPoller[M]
}

// NewKind registers a kind named name whose actors p creates per key.
func NewKind[M any](s *System, name string, p func(key string) Actor[M], opts KindOptions) *Kind[M] {
	k := &Kind[M]{
		sys:     s,
		name:    name,
		produce: p,
		cfg: procConfig{
			mailboxSize: opts.MailboxSize,
			throughput:  opts.Throughput,
			drain:       opts.DrainOnStop,
			supervisor:  opts.Supervisor,
		},
		idle: opts.IdleTimeout,
		seed: maphash.MakeSeed(),
		done: make(chan struct{}),
	}
	k.cfg.fill()
	for i := range k.shards {
		k.shards[i].m = map[string]*process[M]{}
	}
	s.mu.Lock()
	if s.stopping {
		k.closed.Store(true)
		k.closeDone()
	} else {
		s.kinds = append(s.kinds, k)
	}
	s.mu.Unlock()
	if k.idle > 0 && !k.closed.Load() {
		every := opts.SweepInterval
		if every <= 0 {
			every = k.idle / 4
		}
		if every < time.Millisecond {
			every = time.Millisecond
		}
		k.sweep = s.Every(every, k.sweepIdle)
	}
	return k
}

// Name returns the kind's name.
func (k *Kind[M]) Name() string { return k.name }

// Active returns the number of actors of this kind in memory.
func (k *Kind[M]) Active() int { return int(k.active.Load()) }

// Get returns the virtual reference of key, activating the actor if it is
// not in memory.
func (k *Kind[M]) Get(key string) *Ref[M] {
	k.activate(key)
	return &Ref[M]{k: k, key: key}
}

// Tell sends msg to key's actor, activating it on demand. It returns false
// when the message became a dead letter.
func (k *Kind[M]) Tell(key string, msg M) bool {
	return k.deliver(key, envelope[M]{msg: msg}) == enqOK
}

// TellCtx is Tell carrying ctx's trace id.
func (k *Kind[M]) TellCtx(ctx context.Context, key string, msg M) bool {
	return k.deliver(key, envelope[M]{msg: msg, trace: TraceID(ctx)}) == enqOK
}

func (k *Kind[M]) shard(key string) *kindShard[M] {
	return &k.shards[maphash.String(k.seed, key)%kindShards]
}

func (k *Kind[M]) lookup(key string) *process[M] {
	sh := k.shard(key)
	sh.mu.RLock()
	p := sh.m[key]
	sh.mu.RUnlock()
	return p
}

// activate returns key's process, creating it if needed; nil once the kind
// has shut down. The shard lock makes creation exactly-once per key.
func (k *Kind[M]) activate(key string) *process[M] {
	if p := k.lookup(key); p != nil {
		return p
	}
	sh := k.shard(key)
	sh.mu.Lock()
	if p := sh.m[key]; p != nil {
		sh.mu.Unlock()
		return p
	}
	if k.closed.Load() {
		sh.mu.Unlock()
		return nil
	}
	p := k.newProcessLocked(sh, key, nil)
	sh.mu.Unlock()
	go p.run()
	return p
}

func (k *Kind[M]) newProcessLocked(sh *kindShard[M], key string, queued []envelope[M]) *process[M] {
	p := &process[M]{kind: k, cfg: &k.cfg}
	p.init(k.sys, key)
	p.self.k = k
	if len(queued) > 0 {
		p.buf = queued
		p.n = len(queued)
	}
	sh.m[key] = p
	k.active.Add(1)
	k.sys.live.add()
	return p
}

func (k *Kind[M]) deliver(key string, e envelope[M]) enqResult {
	for {
		p := k.activate(key)
		if p == nil {
			k.sys.deadLetter(key, ReasonStopped, any(e.msg), e.trace)
			return enqStopped
		}
		res := p.enqueue(e)
		if res == enqMoved {
			continue // it just passivated; the map already points past it
		}
		if res != enqOK {
			k.sys.deadLetter(key, res.reason(), any(e.msg), e.trace)
		}
		return res
	}
}

// release removes p from the map and seals its mailbox in one critical
// section with the shard lock held, so a sender either enqueued before
// (and its message is in `left`) or finds the map already updated. With
// finMove, leftovers seed the next activation in their original order,
// ahead of anything sent later.
func (k *Kind[M]) release(p *process[M], mode finishMode) (left []envelope[M], next *process[M]) {
	sh := k.shard(p.self.key)
	sh.mu.Lock()
	closed := k.closed.Load()
	p.mu.Lock()
	if closed {
		p.state = stateDead
	} else {
		p.state = stateMoved
	}
	left = p.takeAllLocked()
	p.closeRoomLocked()
	p.sysq = nil
	p.mu.Unlock()
	if sh.m[p.self.key] == p {
		delete(sh.m, p.self.key)
		k.active.Add(-1)
	}
	if mode == finMove && len(left) > 0 && !closed {
		next = k.newProcessLocked(sh, p.self.key, left)
		left = nil
	}
	sh.mu.Unlock()
	return left, next
}

// sweepIdle runs on the scheduler goroutine and asks idle actors to
// passivate; each re-checks in its own turn, so a message being processed
// is never cut short.
func (k *Kind[M]) sweepIdle() {
	now := k.sys.since()
	idle := int64(k.idle)
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.RLock()
		for _, p := range sh.m {
			if now-p.lastActive.Load() >= idle {
				p.requestPassivate(false)
			}
		}
		sh.mu.RUnlock()
	}
}

func (k *Kind[M]) each(fn func(p *process[M])) {
	for i := range k.shards {
		sh := &k.shards[i]
		sh.mu.RLock()
		ps := make([]*process[M], 0, len(sh.m))
		for _, p := range sh.m {
			ps = append(ps, p)
		}
		sh.mu.RUnlock()
		for _, p := range ps {
			fn(p)
		}
	}
}

func (k *Kind[M]) shutdown() {
	k.closed.Store(true)
	if k.sweep != nil {
		k.sweep()
	}
	k.remMu.Lock()
	if k.rem != nil {
		k.rem.stop()
	}
	k.remMu.Unlock()
	k.each(func(p *process[M]) { p.requestStop(true) })
}

func (k *Kind[M]) infos(into []ActorInfo) []ActorInfo {
	k.each(func(p *process[M]) { into = append(into, p.info()) })
	return into
}

func (k *Kind[M]) forceCancel() { k.each(func(p *process[M]) { p.forceCancel() }) }

func (k *Kind[M]) closeDone() { k.doneMu.Do(func() { close(k.done) }) }
