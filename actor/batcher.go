package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultFlushTimeout bounds one flush when BatcherOptions.FlushTimeout is
// zero: a few seconds more than the SQLite store's default busy timeout
// (5 s), so a store that waits for a lock gets its chance to answer first.
const DefaultFlushTimeout = 10 * time.Second

var (
	// ErrFlushTimeout: a flush did not finish within its time limit (a
	// stuck store). When the flush failed on its deadline, nothing was
	// applied; when it did not return at all, its callers also get
	// ErrOutcomeUnknown, while callers queued behind it, or arriving while
	// it is still running, were never flushed.
	ErrFlushTimeout = errors.New("actor: flush did not finish within its time limit")
	// ErrOutcomeUnknown: the caller stopped waiting (its context ended or
	// the flush passed its limit) after its item was handed to a flush, so
	// the item may or may not have been applied. Whatever depends on it
	// must be re-read or retried idempotently — never assumed either way.
	ErrOutcomeUnknown = errors.New("actor: outcome unknown")
)

// BatcherOptions configures a Batcher.
type BatcherOptions struct {
	// MaxBatch caps the items per flush (default 256).
	MaxBatch int
	// FlushTimeout bounds one flush (default DefaultFlushTimeout; negative
	// means no bound). The flush's context carries it as a deadline, and
	// callers stop waiting for a flush that ignores the deadline. It is a
	// wall-clock bound on I/O, like a network timeout, not a decision of
	// the code under test, so it does not use the injected Clock.
	FlushTimeout time.Duration
}

// BatchStats counts a Batcher's work.
type BatchStats struct {
	Flushes uint64
	Items   uint64
}

// Batcher groups concurrent Do calls into one flush call (group commit).
// A caller that finds no flush in progress starts one at once, alone if
// need be, so an idle system adds no latency; callers that arrive during a
// flush queue up and the next flush takes everything queued so far (at most
// MaxBatch). One flush runs at a time, on a goroutine of the Batcher's own,
// so every caller can stop waiting when its context ends.
//
// A flush that passes FlushTimeout without returning marks the Batcher
// stuck: its callers and every queued caller get ErrFlushTimeout, and new
// calls fail at once with it until the flush finally returns. A stuck store
// thus surfaces as an error — never as a hang — and no second flush piles
// onto it.
type Batcher[T, R any] struct {
	flush func(ctx context.Context, items []T) ([]R, error)
	opts  BatcherOptions

	mu      sync.Mutex
	queue   []*batchCall[T, R] // waiting for a flush
	running bool               // the flush goroutine is active
	stuck   error              // non-nil while a flush is past its limit

	flushes atomic.Uint64
	items   atomic.Uint64
}

type batchCall[T, R any] struct {
	item  T
	ctx   context.Context
	res   R
	err   error
	done  chan struct{} // closed once res/err are final (guarded by Batcher.mu)
	taken bool          // handed to a flush (guarded by Batcher.mu)
	ended bool          // done is closed (guarded by Batcher.mu)
}

// finishLocked sets c's outcome once and wakes its caller.
func (c *batchCall[T, R]) finishLocked(res R, err error) {
	if c.ended {
		return
	}
	c.ended = true
	c.res, c.err = res, err
	close(c.done)
}

// NewBatcher returns a Batcher that calls flush. flush must return one
// result per item, in order; a non-nil error fails every item of the batch.
func NewBatcher[T, R any](flush func(ctx context.Context, items []T) ([]R, error), opts BatcherOptions) *Batcher[T, R] {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.FlushTimeout == 0 {
		opts.FlushTimeout = DefaultFlushTimeout
	}
	return &Batcher[T, R]{flush: flush, opts: opts}
}

// Do adds item to the next flush and returns its own result. If ctx ends
// before the item was handed to a flush, Do returns ctx's error and the
// item is not flushed. If ctx ends, or the flush passes its limit, after
// the item was handed over, Do returns an error wrapping ErrOutcomeUnknown
// (and ctx's error or ErrFlushTimeout): the item may have been applied. The
// flush runs with the context values of its first item's caller but not
// its cancellation.
func (b *Batcher[T, R]) Do(ctx context.Context, item T) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &batchCall[T, R]{item: item, ctx: ctx, done: make(chan struct{})}
	b.mu.Lock()
	if err := b.stuck; err != nil {
		b.mu.Unlock()
		return zero, err
	}
	b.queue = append(b.queue, c)
	if !b.running {
		b.running = true
		go b.loop()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case c.ended:
	case !c.taken:
		b.removeLocked(c)
		c.finishLocked(zero, ctx.Err())
	default:
		c.finishLocked(zero, fmt.Errorf("%w: stopped waiting for the flush: %w", ErrOutcomeUnknown, ctx.Err()))
	}
	return c.res, c.err
}

func (b *Batcher[T, R]) removeLocked(c *batchCall[T, R]) {
	for i, q := range b.queue {
		if q == c {
			copy(b.queue[i:], b.queue[i+1:])
			b.queue[len(b.queue)-1] = nil
			b.queue = b.queue[:len(b.queue)-1]
			return
		}
	}
}

// loop flushes batches until the queue is empty.
func (b *Batcher[T, R]) loop() {
	var batch []*batchCall[T, R]
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.opts.MaxBatch)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		batch = append(batch[:0], b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		for _, c := range batch {
			c.taken = true
		}
		b.mu.Unlock()
		b.flushBatch(batch)
		clear(batch)
	}
}

// flushBatch runs one flush and hands each caller its result.
func (b *Batcher[T, R]) flushBatch(batch []*batchCall[T, R]) {
	items := make([]T, len(batch))
	for i, c := range batch {
		items[i] = c.item
	}
	finished := false // guarded by b.mu; once set, the watchdog leaves batch alone
	if limit := b.opts.FlushTimeout; limit > 0 {
		// The grace lets a flush that honours its deadline report its own
		// error (nothing committed) before callers are told "unknown".
		watchdog := time.AfterFunc(limit+min(limit/10, time.Second), func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if !finished {
				b.overdueLocked(batch)
			}
		})
		defer watchdog.Stop()
	}
	results, err := b.run(batch[0].ctx, items)
	b.flushes.Add(1)
	b.items.Add(uint64(len(batch)))
	b.mu.Lock()
	defer b.mu.Unlock()
	finished = true
	b.stuck = nil
	var zero R
	for i, c := range batch {
		if err != nil {
			c.finishLocked(zero, err)
		} else {
			c.finishLocked(results[i], nil)
		}
	}
}

// overdueLocked runs when a flush passed its limit without returning: its
// callers and the queued ones stop waiting, and new calls fail until it
// returns (its late results are dropped).
func (b *Batcher[T, R]) overdueLocked(batch []*batchCall[T, R]) {
	var zero R
	b.stuck = fmt.Errorf("%w (%v)", ErrFlushTimeout, b.opts.FlushTimeout)
	for _, c := range batch {
		c.finishLocked(zero, fmt.Errorf("%w: %w", ErrOutcomeUnknown, b.stuck))
	}
	for _, c := range b.queue {
		c.finishLocked(zero, b.stuck)
	}
	clear(b.queue)
	b.queue = b.queue[:0]
}

func (b *Batcher[T, R]) run(ctx context.Context, items []T) (results []R, err error) {
	defer func() {
		if r := recover(); r != nil {
			results, err = nil, fmt.Errorf("batcher: flush panicked: %v", r)
		}
	}()
	fctx := context.WithoutCancel(ctx)
	if b.opts.FlushTimeout > 0 {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(fctx, b.opts.FlushTimeout)
		defer cancel()
	}
	results, err = b.flush(fctx, items)
	if err != nil && errors.Is(fctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (%v): %w", ErrFlushTimeout, b.opts.FlushTimeout, err)
	}
	if err == nil && len(results) != len(items) {
		err = fmt.Errorf("batcher: flush returned %d results for %d items", len(results), len(items))
	}
	return results, err
}

// Stats returns the flush and item counts so far.
func (b *Batcher[T, R]) Stats() BatchStats {
	return BatchStats{Flushes: b.flushes.Load(), Items: b.items.Load()}
}

// CommitterOptions configures a Committer.
type CommitterOptions struct {
	MaxBatch     int           // units per Journal.Commit (default 256)
	FlushTimeout time.Duration // bound on one Journal.Commit (0 = DefaultFlushTimeout, < 0 = none)
	Metrics      Metrics       // receives CommitBatch (default NopMetrics)
	Clock        Clock         // times commits (default RealClock)
}

// Committer group-commits many actors' units through one Journal: units
// submitted concurrently share one Journal.Commit call (one transaction,
// one fsync), and each caller gets its own unit's result.
type Committer struct {
	b *Batcher[Unit, error]
}

// NewCommitter returns a Committer over j.
func NewCommitter(j Journal, opts CommitterOptions) *Committer {
	if opts.Metrics == nil {
		opts.Metrics = NopMetrics{}
	}
	if opts.Clock == nil {
		opts.Clock = RealClock()
	}
	flush := func(ctx context.Context, units []Unit) ([]error, error) {
		start := opts.Clock.Now()
		res, err := j.Commit(ctx, units)
		if err == nil && len(res) != len(units) {
			err = fmt.Errorf("journal returned %d results for %d units", len(res), len(units))
		}
		opts.Metrics.CommitBatch(len(units), opts.Clock.Now().Sub(start), err)
		if err != nil {
			return nil, fmt.Errorf("commit batch of %d units: %w", len(units), err)
		}
		return res, nil
	}
	return &Committer{b: NewBatcher(flush, BatcherOptions{MaxBatch: opts.MaxBatch, FlushTimeout: opts.FlushTimeout})}
}

// Commit commits u, possibly together with other callers' units, and
// returns u's own result: nil, a *ConflictError, ErrFenced, a batch error,
// ctx's error if ctx ended before u was handed to the journal, or an error
// wrapping ErrOutcomeUnknown if ctx ended (or the journal passed
// FlushTimeout) after that — u may then be committed or not, and the
// caller must reload rather than assume either.
func (c *Committer) Commit(ctx context.Context, u Unit) error {
	res, err := c.b.Do(ctx, u)
	if err != nil {
		return err
	}
	return res
}

// Stats returns how many Journal.Commit calls carried how many units.
func (c *Committer) Stats() BatchStats { return c.b.Stats() }

// errNoCommitter guards Journaled used without a Committer.
var errNoCommitter = errors.New("actor: Journaled has no Committer")
