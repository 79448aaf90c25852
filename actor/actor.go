package actor

import (
	"context"
	"log/slog"
	"time"
)

// Actor handles the messages of one actor, one at a time.
type Actor[M any] interface {
	Receive(c *Context[M], msg M)
}

// Producer makes a fresh actor instance; a restart calls it again, so no
// state survives a failure unless the actor reloads it.
type Producer[M any] func() Actor[M]

// ActorFunc adapts a function to Actor, for stateless actors and tests.
type ActorFunc[M any] func(c *Context[M], msg M)

// Receive calls f.
func (f ActorFunc[M]) Receive(c *Context[M], msg M) { f(c, msg) }

// Starter is implemented by actors that set up in their own turn before
// the first message. An error is a failure the supervisor decides on.
type Starter[M any] interface {
	Started(c *Context[M]) error
}

// Stopper is implemented by actors that clean up when an instance leaves:
// on stop, restart (the old instance) and passivation. It runs in the
// actor's turn; Context.Context is still live.
type Stopper[M any] interface {
	Stopped(c *Context[M])
}

// Activator is implemented by virtual actors that load their state when
// activated (before Started and before any message). An error fails the
// activation: the messages queued for it become dead letters (reason
// ReasonActivationFailed) and the next message for the key tries a fresh
// activation.
type Activator[M any] interface {
	Activate(c *Context[M]) error
}

// Passivator is implemented by virtual actors that persist their state
// before leaving memory. An error keeps the actor active; an idle actor is
// tried again at a later sweep. At Shutdown the error is reported and the
// actor leaves anyway.
type Passivator[M any] interface {
	Passivate(c *Context[M]) error
}

// SpawnOption configures Spawn and SpawnChild.
type SpawnOption func(*procConfig)

// WithMailboxSize bounds the mailbox to n messages (default 1024), counting
// those queued and those in the batch being processed; a Tell beyond it
// becomes a dead letter and TellBlocking waits.
func WithMailboxSize(n int) SpawnOption { return func(c *procConfig) { c.mailboxSize = n } }

// WithThroughput sets how many messages an actor handles before yielding
// the processor to other actors (default 128).
func WithThroughput(n int) SpawnOption { return func(c *procConfig) { c.throughput = n } }

// WithDrainOnStop makes a stop process the already queued messages first
// (default false: they become dead letters).
func WithDrainOnStop(drain bool) SpawnOption { return func(c *procConfig) { c.drain = drain } }

// WithSupervisor sets how the actor's failures are handled (default
// DefaultSupervisor).
func WithSupervisor(s Supervisor) SpawnOption { return func(c *procConfig) { c.supervisor = s } }

// Spawn starts a root actor named name ("" picks a unique name). It
// returns ErrStopped after Shutdown began, and ErrNameTaken or
// ErrInvalidName for a bad name.
func Spawn[M any](s *System, name string, p Producer[M], opts ...SpawnOption) (*Ref[M], error) {
	return spawn(s, nil, "", name, p, opts)
}

// SpawnChild starts an actor supervised by the actor owning c. Its key is
// the parent's key, "/", name. Children stop when their parent stops or
// restarts (a restarted parent's new instance spawns them again if it
// wants them).
func SpawnChild[T, M any](c *Context[M], name string, p Producer[T], opts ...SpawnOption) (*Ref[T], error) {
	parent := c.p
	if parent.stopping {
		return nil, ErrStopped
	}
	return spawn(parent.sys, parent, parent.self.key, name, p, opts)
}

func spawn[M any](s *System, parent node, parentKey, name string, p Producer[M], opts []SpawnOption) (*Ref[M], error) {
	cfg := &procConfig{}
	for _, o := range opts {
		o(cfg)
	}
	cfg.fill()
	var proc *process[M]
	_, err := s.register(parentKey, name, func(key string) node {
		proc = &process[M]{cfg: cfg, producer: p, parent: parent}
		proc.init(s, key)
		proc.self.p = proc
		return proc
	})
	if err != nil {
		return nil, err
	}
	if parent != nil {
		parent.addChild(proc.self.key, proc)
	}
	go proc.run()
	return &proc.self, nil
}

// Context is an actor's view of the runtime during its turn. It is valid
// only inside Receive and the lifecycle hooks of the instance it was given
// to.
type Context[M any] struct {
	p *process[M]
}

// Self returns the actor's own reference; for a virtual actor it is the
// virtual reference of its key.
func (c *Context[M]) Self() *Ref[M] { return &c.p.self }

// Key returns the actor's key (its name path, or a virtual actor's key).
func (c *Context[M]) Key() string { return c.p.self.key }

// Kind returns the virtual actor's kind name, or "".
func (c *Context[M]) Kind() string { return c.p.kindName() }

// System returns the actor's system.
func (c *Context[M]) System() *System { return c.p.sys }

// Restarts returns how many times this actor has been restarted.
func (c *Context[M]) Restarts() int { return int(c.p.restarts.Load()) }

// TraceID returns the trace id of the message being processed; a message
// sent without one gets a fresh id the first time it is asked for.
func (c *Context[M]) TraceID() string {
	if c.p.trace == "" {
		c.p.trace = NewTraceID()
	}
	return c.p.trace
}

// Logger returns the system logger with the actor's key, kind (for virtual
// actors) and the current trace id attached.
func (c *Context[M]) Logger() *slog.Logger {
	if k := c.p.kindName(); k != "" {
		return c.p.sys.logger.With("kind", k, "actor", c.p.self.key, "trace_id", c.TraceID())
	}
	return c.p.sys.logger.With("actor", c.p.self.key, "trace_id", c.TraceID())
}

// Context returns a context that carries the current trace id and is
// cancelled when this instance stops, restarts or passivates.
func (c *Context[M]) Context() context.Context {
	return WithTraceID(c.p.context(), c.TraceID())
}

// Schedule delivers msg to this actor after d, through the system's
// central scheduler. The timer dies with this instance: it is cancelled
// when the actor stops, restarts or passivates.
func (c *Context[M]) Schedule(d time.Duration, msg M) CancelFunc {
	return c.schedule(d, 0, msg)
}

// ScheduleRepeat delivers msg every `every` (first after `every`) until
// cancelled or until this instance ends. every must be positive.
func (c *Context[M]) ScheduleRepeat(every time.Duration, msg M) CancelFunc {
	if every <= 0 {
		return func() {}
	}
	return c.schedule(every, every, msg)
}

func (c *Context[M]) schedule(d, every time.Duration, msg M) CancelFunc {
	p := c.p
	gen := p.gen.Load()
	env := envelope[M]{msg: msg, trace: p.trace, timer: gen}
	return p.sys.sched.add(p.sys.clock.Now().Add(d), every, p, gen, func() {
		if r := p.enqueue(env); r == enqFull {
			p.sys.deadLetter(p.self.key, ReasonMailboxFull, any(env.msg), env.trace)
		}
	})
}

// Stop stops the actor after the current message (gracefully, per its
// drain option). For a virtual actor it means passivate now.
func (c *Context[M]) Stop() {
	if c.p.kind != nil {
		c.Passivate()
		return
	}
	c.p.requestStop(false)
}

// Passivate asks a virtual actor to leave memory after the current
// message: its Passivate hook runs, and messages still queued go to its
// next activation. It does nothing for other actors.
func (c *Context[M]) Passivate() {
	if c.p.kind == nil {
		return
	}
	c.p.requestPassivate(true)
	c.p.interrupt.Store(true)
}

// Tell sends msg from inside an actor, propagating the current trace id.
func Tell[T, M any](c *Context[M], to *Ref[T], msg T) bool {
	return to.send(envelope[T]{msg: msg, trace: c.TraceID()}) == enqOK
}
