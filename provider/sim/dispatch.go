package sim

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"
)

// errQueueFull refuses work beyond Config.MaxPending.
var errQueueFull = errors.New("webhook queue full")

// ErrStopped is returned by calls made after Stop.
var ErrStopped = errors.New("simulator stopped")

// dispatcher runs delayed jobs on a fixed pool of workers. One scheduler
// goroutine owns a min-heap of due times and one timer; workers only run
// jobs, and jobs only push more jobs, so nothing waits in a cycle.
//
// Work is counted in units (one per recipient event chain, one per extra
// duplicate post): reserve admits new units up to a cap, release ends one,
// and waitIdle returns when none is left.
type dispatcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	work   chan *job
	wake   chan struct{}

	mu      sync.Mutex
	jobs    jobHeap
	seq     uint64
	units   int
	cap     int
	idle    chan struct{} // closed while units == 0
	stopped bool
}

type job struct {
	due time.Time
	seq uint64
	run func(ctx context.Context)
}

type jobHeap []*job

func (h jobHeap) Len() int { return len(h) }
func (h jobHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h jobHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)   { *h = append(*h, x.(*job)) }
func (h *jobHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return j
}

func newDispatcher(workers, maxUnits int) *dispatcher {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dispatcher{
		ctx: ctx, cancel: cancel,
		work: make(chan *job),
		wake: make(chan struct{}, 1),
		cap:  maxUnits,
		idle: make(chan struct{}),
	}
	close(d.idle)
	d.wg.Add(1 + workers)
	go d.schedule()
	for range workers {
		go d.worker()
	}
	return d
}

// reserve admits n new units of work, or refuses them all.
func (d *dispatcher) reserve(n int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return ErrStopped
	}
	if d.units+n > d.cap {
		return errQueueFull
	}
	d.addLocked(n)
	return nil
}

// add admits n units regardless of the cap; for duplicates of admitted
// work, which the cap already bounds.
func (d *dispatcher) add(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addLocked(n)
}

func (d *dispatcher) addLocked(n int) {
	if d.units == 0 && n > 0 {
		d.idle = make(chan struct{})
	}
	d.units += n
}

// release ends one unit of work.
func (d *dispatcher) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.units--
	if d.units == 0 {
		close(d.idle)
	}
}

// pending returns the number of outstanding units.
func (d *dispatcher) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.units
}

// waitIdle blocks until no unit is outstanding, ctx ends, or the
// dispatcher stops.
func (d *dispatcher) waitIdle(ctx context.Context) error {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-d.ctx.Done():
		return ErrStopped
	}
}

// after runs f on a worker once delay has passed.
func (d *dispatcher) after(delay time.Duration, f func(ctx context.Context)) {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.seq++
	heap.Push(&d.jobs, &job{due: time.Now().Add(delay), seq: d.seq, run: f})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) schedule() {
	defer d.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d.mu.Lock()
		var next *job
		wait := time.Hour
		if len(d.jobs) > 0 {
			if w := time.Until(d.jobs[0].due); w <= 0 {
				next = heap.Pop(&d.jobs).(*job)
			} else {
				wait = w
			}
		}
		d.mu.Unlock()
		if next != nil {
			select {
			case d.work <- next:
			case <-d.ctx.Done():
				return
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-d.wake:
		case <-timer.C:
		case <-d.ctx.Done():
			return
		}
	}
}

func (d *dispatcher) worker() {
	defer d.wg.Done()
	for {
		select {
		case j := <-d.work:
			j.run(d.ctx)
		case <-d.ctx.Done():
			return
		}
	}
}

// stop cancels running jobs, abandons queued ones and waits for every
// goroutine, or for ctx.
func (d *dispatcher) stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopped = true
	d.jobs = nil
	d.mu.Unlock()
	d.cancel()
	done := make(chan struct{})
	go func() {
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
