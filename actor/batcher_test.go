package actor

import (
	"context"
	"errors"
	"testing"
	"time"
)

// stuckFlush is a flush that never returns by itself and ignores its
// context, like a store wedged on a lock: it returns only when released.
type stuckFlush struct {
	started chan struct{} // receives once per flush that began
	release chan struct{}
}

func newStuckFlush(t *testing.T) *stuckFlush {
	s := &stuckFlush{started: make(chan struct{}, 16), release: make(chan struct{})}
	t.Cleanup(func() { close(s.release) })
	return s
}

func (s *stuckFlush) flush(_ context.Context, items []int) ([]int, error) {
	s.started <- struct{}{}
	<-s.release
	return items, nil
}

// doAsync runs b.Do(ctx, v) and delivers its error.
func doAsync(b *Batcher[int, int], ctx context.Context, v int) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := b.Do(ctx, v)
		errc <- err
	}()
	return errc
}

func TestBatcherFlushTimeoutSurfacesAStuckFlush(t *testing.T) {
	s := newStuckFlush(t)
	b := NewBatcher(s.flush, BatcherOptions{FlushTimeout: 20 * time.Millisecond})
	leader := doAsync(b, context.Background(), 1)
	recv(t, s.started)
	queued := doAsync(b, context.Background(), 2)
	// Both the caller whose item is in the stuck flush and the one queued
	// behind it get an error instead of waiting for ever.
	if err := recv(t, leader); !errors.Is(err, ErrFlushTimeout) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("caller in a stuck flush: %v, want ErrFlushTimeout and ErrOutcomeUnknown", err)
	}
	if err := recv(t, queued); !errors.Is(err, ErrFlushTimeout) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("caller queued behind a stuck flush: %v, want ErrFlushTimeout (not flushed)", err)
	}
	// While the flush is still stuck, new callers fail fast.
	if err := recv(t, doAsync(b, context.Background(), 3)); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("caller while stuck: %v", err)
	}
}

func TestBatcherRecoversWhenAStuckFlushReturns(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	b := NewBatcher(func(_ context.Context, items []int) ([]int, error) {
		started <- struct{}{}
		if items[0] == 1 {
			<-release
		}
		return items, nil
	}, BatcherOptions{FlushTimeout: 20 * time.Millisecond})
	first := doAsync(b, context.Background(), 1)
	recv(t, started)
	if err := recv(t, first); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("stuck flush: %v", err)
	}
	close(release)
	waitUntil(t, "the stuck flush to end", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.stuck == nil
	})
	if v, err := b.Do(context.Background(), 7); err != nil || v != 7 {
		t.Fatalf("after the flush returned: %d %v", v, err)
	}
}

func TestBatcherFlushHonoursCancelledCaller(t *testing.T) {
	s := newStuckFlush(t)
	b := NewBatcher(s.flush, BatcherOptions{FlushTimeout: time.Hour})
	ctx1, cancel1 := context.WithCancel(context.Background())
	leader := doAsync(b, ctx1, 1)
	recv(t, s.started)
	ctx2, cancel2 := context.WithCancel(context.Background())
	queued := doAsync(b, ctx2, 2)
	waitUntil(t, "a queued caller", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 1
	})
	cancel1()
	if err := recv(t, leader); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("cancelled caller whose item is being flushed: %v", err)
	}
	cancel2()
	if err := recv(t, queued); !errors.Is(err, context.Canceled) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("cancelled queued caller: %v", err)
	}
}

func TestBatcherFlushContextHasTheLimit(t *testing.T) {
	var deadline time.Time
	var ok bool
	b := NewBatcher(func(ctx context.Context, items []int) ([]int, error) {
		deadline, ok = ctx.Deadline()
		return items, nil
	}, BatcherOptions{})
	before := time.Now()
	if _, err := b.Do(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if !ok || deadline.Sub(before) < DefaultFlushTimeout || deadline.Sub(before) > DefaultFlushTimeout+time.Minute {
		t.Fatalf("flush deadline %v (set %v), want about %v from now", deadline, ok, DefaultFlushTimeout)
	}
}

func TestCommitterFlushTimeoutSurfacesAStuckJournal(t *testing.T) {
	s := newStuckFlush(t)
	c := NewCommitter(stuckJournal{s}, CommitterOptions{FlushTimeout: 20 * time.Millisecond})
	errc := make(chan error, 1)
	go func() { errc <- c.Commit(context.Background(), Unit{Key: "k"}) }()
	if err := recv(t, errc); !errors.Is(err, ErrFlushTimeout) {
		t.Fatalf("commit against a stuck journal: %v", err)
	}
}

type stuckJournal struct{ s *stuckFlush }

func (j stuckJournal) Commit(ctx context.Context, units []Unit) ([]error, error) {
	if _, err := j.s.flush(ctx, make([]int, len(units))); err != nil {
		return nil, err
	}
	return make([]error, len(units)), nil
}

func (stuckJournal) Load(context.Context, string, uint64, func(Event) error) error { return nil }
