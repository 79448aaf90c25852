package actor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// BatcherOptions configures a Batcher.
type BatcherOptions struct {
	// MaxBatch caps the items per flush (default 256).
	MaxBatch int
	// FlushTimeout bounds one flush; 0 means no bound beyond the flush
	// function's own.
	FlushTimeout time.Duration
}

// BatchStats counts a Batcher's work.
type BatchStats struct {
	Flushes uint64
	Items   uint64
}

// Batcher groups concurrent Do calls into one flush call (group commit).
// It is leader-based: a caller that finds no flush in progress flushes at
// once, alone if need be, so an idle system adds no latency; callers that
// arrive during a flush queue up and the next of them leads the following
// flush with everything queued so far (at most MaxBatch). One flush runs at
// a time.
type Batcher[T, R any] struct {
	flush func(ctx context.Context, items []T) ([]R, error)
	opts  BatcherOptions

	mu      sync.Mutex
	queue   []*batchCall[T, R]
	leading bool
	batch   []*batchCall[T, R] // reused by the current leader

	flushes atomic.Uint64
	items   atomic.Uint64
}

type batchCall[T, R any] struct {
	item     T
	ctx      context.Context
	res      R
	err      error
	ch       chan bool // true: lead the next flush; false: result is ready
	taken    bool      // in a flush (guarded by Batcher.mu)
	promoted bool      // told to lead (guarded by Batcher.mu)
}

// NewBatcher returns a Batcher that calls flush. flush must return one
// result per item, in order; a non-nil error fails every item of the batch.
func NewBatcher[T, R any](flush func(ctx context.Context, items []T) ([]R, error), opts BatcherOptions) *Batcher[T, R] {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	return &Batcher[T, R]{flush: flush, opts: opts}
}

// Do adds item to the next flush and returns its own result. If ctx ends
// before the item was handed to a flush, Do returns ctx's error and the
// item is not flushed; once handed over, Do waits for the flush's outcome
// so the caller never loses track of an item that may have been applied.
// The flush runs with the leader's context values but not its
// cancellation.
func (b *Batcher[T, R]) Do(ctx context.Context, item T) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &batchCall[T, R]{item: item, ctx: ctx}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.leading
	if lead {
		b.leading = true
		c.promoted = true
	} else {
		c.ch = make(chan bool, 1) // only waiters need a channel
	}
	b.mu.Unlock()
	if !lead {
		select {
		case lead = <-c.ch:
		case <-ctx.Done():
			b.mu.Lock()
			if !c.taken {
				b.removeLocked(c)
				if c.promoted {
					b.promoteLocked()
				}
				b.mu.Unlock()
				return zero, ctx.Err()
			}
			b.mu.Unlock()
			lead = <-c.ch
		}
		if !lead {
			return c.res, c.err
		}
	}
	b.lead(c)
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

// promoteLocked hands leadership to the oldest waiter, or ends it.
func (b *Batcher[T, R]) promoteLocked() {
	if len(b.queue) == 0 {
		b.leading = false
		return
	}
	next := b.queue[0]
	next.promoted = true
	next.ch <- true
}

// lead flushes one batch that starts with self, then passes leadership on.
func (b *Batcher[T, R]) lead(self *batchCall[T, R]) {
	b.mu.Lock()
	n := len(b.queue)
	if n > b.opts.MaxBatch {
		n = b.opts.MaxBatch
	}
	// Only the leader touches b.batch, and there is one leader at a time.
	batch := append(b.batch[:0], b.queue[:n]...)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	for _, c := range batch {
		c.taken = true
	}
	b.mu.Unlock()

	items := make([]T, n)
	for i, c := range batch {
		items[i] = c.item
	}
	results, err := b.run(self.ctx, items)
	b.flushes.Add(1)
	b.items.Add(uint64(n))
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.res = results[i]
		}
		if c != self {
			c.ch <- false
		}
	}
	clear(batch)
	b.batch = batch
	b.mu.Lock()
	b.promoteLocked()
	b.mu.Unlock()
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
	FlushTimeout time.Duration // bound on one Journal.Commit (0 = none)
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
// or ctx's error if ctx ended before u was handed to the journal.
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
