package actor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by the runtime.
var (
	// ErrStopped means the target actor (or the whole system) has stopped.
	ErrStopped = errors.New("actor stopped")
	// ErrTimeout means an Ask got no reply in time.
	ErrTimeout = errors.New("actor: ask timed out")
	// ErrMailboxFull means a message was refused because the mailbox was full.
	ErrMailboxFull = errors.New("actor: mailbox full")
	// ErrNameTaken means another live actor already has the name.
	ErrNameTaken = errors.New("actor: name taken")
	// ErrInvalidName means a name is empty after trimming or contains '/'.
	ErrInvalidName = errors.New("actor: invalid name")
)

// LifecycleType names a lifecycle event.
type LifecycleType string

// Lifecycle event types.
const (
	EventStarted           LifecycleType = "started"
	EventActivated         LifecycleType = "activated"
	EventActivationFailed  LifecycleType = "activation_failed"
	EventFailed            LifecycleType = "failed"
	EventRestarted         LifecycleType = "restarted"
	EventPassivated        LifecycleType = "passivated"
	EventPassivationFailed LifecycleType = "passivation_failed"
	EventStopped           LifecycleType = "stopped"
)

// LifecycleEvent reports a start, failure, restart, passivation or stop.
type LifecycleEvent struct {
	Type      LifecycleType
	Key       string
	Kind      string
	Err       error         // the failure or hook error, if any
	Directive Directive     // for EventFailed
	Delay     time.Duration // for EventRestarted
	Time      time.Time
}

// ActorInfo is a debug snapshot of one live actor.
type ActorInfo struct {
	Key          string    `json:"key"`
	Kind         string    `json:"kind,omitempty"`
	MailboxDepth int       `json:"mailbox_depth"`
	Processed    uint64    `json:"processed"`
	Restarts     int       `json:"restarts"`
	StartedAt    time.Time `json:"started_at"`
	LastActive   time.Time `json:"last_active"`
}

// SystemOption configures NewSystem.
type SystemOption func(*systemConfig)

type systemConfig struct {
	logger  *slog.Logger
	metrics Metrics
	deadCap int
	clock   Clock
	onEvent func(LifecycleEvent)
}

// WithLogger sets the logger actors' Context.Logger derives from. The
// default discards everything.
func WithLogger(l *slog.Logger) SystemOption { return func(c *systemConfig) { c.logger = l } }

// WithMetrics sets the metrics hooks (default NopMetrics).
func WithMetrics(m Metrics) SystemOption { return func(c *systemConfig) { c.metrics = m } }

// WithDeadLetterCapacity sets how many recent dead letters are kept as
// samples (default 256); the counter is unbounded.
func WithDeadLetterCapacity(n int) SystemOption { return func(c *systemConfig) { c.deadCap = n } }

// WithClock sets the clock used for timers, idle timeouts, backoff, Ask
// timeouts and reminder polls (default RealClock).
func WithClock(clk Clock) SystemOption { return func(c *systemConfig) { c.clock = clk } }

// WithLifecycleHook registers fn to observe lifecycle events. fn runs
// synchronously on the actor's goroutine, so it must be fast and must not
// block.
func WithLifecycleHook(fn func(LifecycleEvent)) SystemOption {
	return func(c *systemConfig) { c.onEvent = fn }
}

// System owns a set of actors, their scheduler and their dead letters.
// NewSystem starts the scheduler goroutine; Shutdown stops everything.
type System struct {
	logger  *slog.Logger
	metrics Metrics
	clock   Clock
	epoch   time.Time
	sched   *scheduler
	dead    *deadLetters
	onEvent func(LifecycleEvent)
	live    liveCounter
	running atomic.Int64 // mailbox goroutines alive

	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgMu     sync.Mutex
	bgClosed bool
	bgWG     sync.WaitGroup

	mu        sync.Mutex
	plain     map[string]node
	kinds     []kindNode
	seq       uint64
	stopping  bool
	stopErrs  []error
	shutDone  chan struct{}
	shutClean bool
	shutErr   error
}

// node is the type-erased view of a process that parents, the registry and
// Shutdown use.
type node interface {
	isRoot() bool
	stop()
	doneCh() <-chan struct{}
	postSys(s sysMsg) bool
	addChild(key string, c node)
	removeChild(key string)
	childNodes() []node
	info() ActorInfo
	forceCancel()
}

type kindNode interface {
	shutdown()
	infos(into []ActorInfo) []ActorInfo
	forceCancel()
	closeDone()
}

// NewSystem creates a System and starts its scheduler goroutine. Call
// Shutdown to release it.
func NewSystem(opts ...SystemOption) *System {
	cfg := systemConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.metrics == nil {
		cfg.metrics = NopMetrics{}
	}
	if cfg.clock == nil {
		cfg.clock = RealClock()
	}
	s := &System{
		logger:  cfg.logger,
		metrics: cfg.metrics,
		clock:   cfg.clock,
		epoch:   cfg.clock.Now(),
		dead:    newDeadLetters(cfg.deadCap),
		onEvent: cfg.onEvent,
		plain:   map[string]node{},
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	s.sched = newScheduler(s.clock, s.metrics, s.logger)
	return s
}

// Clock returns the system's clock.
func (s *System) Clock() Clock { return s.clock }

// Logger returns the system's logger.
func (s *System) Logger() *slog.Logger { return s.logger }

// AfterFunc runs fn on the scheduler goroutine after d. fn must not block;
// a panic in it is recovered and counted.
func (s *System) AfterFunc(d time.Duration, fn func()) CancelFunc {
	return s.sched.add(s.clock.Now().Add(d), 0, nil, 0, fn)
}

// Every runs fn on the scheduler goroutine every d, first after d. fn must
// not block; a panic in it is recovered and counted and the schedule goes
// on.
func (s *System) Every(d time.Duration, fn func()) CancelFunc {
	if d <= 0 {
		return func() {}
	}
	return s.sched.add(s.clock.Now().Add(d), d, nil, 0, fn)
}

// RunningActors returns how many actors hold a goroutine right now (are
// processing or about to); idle actors hold none.
func (s *System) RunningActors() int { return int(s.running.Load()) }

// TimerStats returns a snapshot of the central scheduler.
func (s *System) TimerStats() TimerStats { return s.sched.stats() }

// DeadLetters returns the dead-letter count and the recent samples.
func (s *System) DeadLetters() DeadLetterStats { return s.dead.stats() }

// Actors returns a snapshot of every live actor, sorted by kind and key.
func (s *System) Actors() []ActorInfo {
	s.mu.Lock()
	nodes := make([]node, 0, len(s.plain))
	for _, n := range s.plain {
		nodes = append(nodes, n)
	}
	kinds := append([]kindNode(nil), s.kinds...)
	s.mu.Unlock()
	out := make([]ActorInfo, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.info())
	}
	for _, k := range kinds {
		out = k.infos(out)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// since measures runtime-relative time so idle checks use the monotonic
// clock when the clock is real.
func (s *System) since() int64 { return int64(s.clock.Now().Sub(s.epoch)) }

func (s *System) at(since int64) time.Time { return s.epoch.Add(time.Duration(since)) }

func (s *System) emit(ev LifecycleEvent) {
	if s.onEvent == nil {
		return
	}
	ev.Time = s.clock.Now()
	s.onEvent(ev)
}

func (s *System) deadLetter(target, reason string, msg any, trace string) {
	s.dead.record(DeadLetter{
		Target:      target,
		Reason:      reason,
		MessageType: fmt.Sprintf("%T", msg),
		TraceID:     trace,
		Time:        s.clock.Now(),
	})
	s.metrics.DeadLetter(reason)
	s.logger.Debug("actor: dead letter", "target", target, "reason", reason, "trace_id", trace)
}

func (s *System) recordStopErr(err error) {
	s.mu.Lock()
	s.stopErrs = append(s.stopErrs, err)
	s.mu.Unlock()
}

// register reserves key for a plain actor and counts it live. name "" gets
// a generated name.
func (s *System) register(parentKey, name string, mk func(key string) node) (node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, ErrStopped
	}
	if name == "" {
		s.seq++
		name = "$" + strconv.FormatUint(s.seq, 10)
	} else if strings.TrimSpace(name) == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	key := name
	if parentKey != "" {
		key = parentKey + "/" + name
	}
	if _, ok := s.plain[key]; ok {
		return nil, fmt.Errorf("%w: %q", ErrNameTaken, key)
	}
	n := mk(key)
	s.plain[key] = n
	s.live.add()
	return n, nil
}

func (s *System) unregister(key string, n node) {
	s.mu.Lock()
	if s.plain[key] == n {
		delete(s.plain, key)
	}
	s.mu.Unlock()
}

// startBackground runs fn on its own goroutine unless Shutdown has passed
// the point of waiting for background work.
func (s *System) startBackground(fn func()) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return false
	}
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		fn()
	}()
	return true
}

// Shutdown stops every actor and waits until all have terminated or ctx is
// done. Root actors stop gracefully (draining if configured; children stop
// with their parents); virtual actors drain if their kind says so, then run
// their Passivate hook. Anything sent after Shutdown begins is a dead
// letter. clean reports that everything stopped in time and no Passivate
// hook failed; err says why not. When ctx expires first, the contexts of
// the actors still running are cancelled and Shutdown returns without
// waiting for them. Calling Shutdown again waits for the first call.
func (s *System) Shutdown(ctx context.Context) (clean bool, err error) {
	s.mu.Lock()
	if s.stopping {
		done := s.shutDone
		s.mu.Unlock()
		select {
		case <-done:
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.shutClean, s.shutErr
		case <-ctx.Done():
			return false, fmt.Errorf("actor: shutdown: %w", ctx.Err())
		}
	}
	s.stopping = true
	s.shutDone = make(chan struct{})
	var roots []node
	for _, n := range s.plain {
		if n.isRoot() {
			roots = append(roots, n)
		}
	}
	kinds := append([]kindNode(nil), s.kinds...)
	s.mu.Unlock()

	s.bgCancel()
	for _, k := range kinds {
		k.shutdown()
	}
	for _, n := range roots {
		n.stop()
	}
	clean = true
	var errs []error
	select {
	case <-s.live.wait():
	case <-ctx.Done():
		clean = false
		errs = append(errs, fmt.Errorf("actor: shutdown: %d actors still running: %w", s.live.count(), ctx.Err()))
		s.mu.Lock()
		for _, n := range s.plain {
			n.forceCancel()
		}
		s.mu.Unlock()
		for _, k := range kinds {
			k.forceCancel()
		}
	}
	s.bgMu.Lock()
	s.bgClosed = true
	s.bgMu.Unlock()
	s.bgWG.Wait()
	s.sched.stop()
	for _, k := range kinds {
		k.closeDone()
	}

	s.mu.Lock()
	if len(s.stopErrs) > 0 {
		clean = false
		errs = append(errs, s.stopErrs...)
	}
	err = errors.Join(errs...)
	s.shutClean, s.shutErr = clean, err
	close(s.shutDone)
	s.mu.Unlock()
	if clean {
		s.logger.Info("actor: system shut down cleanly")
	} else {
		s.logger.Error("actor: system shutdown was not clean", "error", err)
	}
	return clean, err
}

// liveCounter counts actors that have not terminated, so Shutdown can wait
// for zero without a goroutine per actor.
type liveCounter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (l *liveCounter) add() {
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
}

func (l *liveCounter) done() {
	l.mu.Lock()
	l.n--
	if l.n == 0 && l.zero != nil {
		close(l.zero)
		l.zero = nil
	}
	l.mu.Unlock()
}

func (l *liveCounter) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *liveCounter) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return closedChan
	}
	if l.zero == nil {
		l.zero = make(chan struct{})
	}
	return l.zero
}

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()
