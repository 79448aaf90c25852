package actor

import (
	"container/heap"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// CancelFunc cancels a scheduled timer. Cancellation is lazy: the entry
// stays in the scheduler's heap and is skipped when it comes due. Calling
// it more than once, or after the timer fired, does nothing.
type CancelFunc func()

// TimerStats is a snapshot of the central scheduler.
type TimerStats struct {
	Pending int    // entries in the heap, including lazily cancelled ones
	Fired   uint64 // callbacks run
	Panics  uint64 // callbacks that panicked (recovered)
}

// timerOwner lets a timer die with the actor instance that set it: the task
// remembers the owner's generation at scheduling time and is skipped once
// the owner has restarted, passivated or stopped.
type timerOwner interface{ timerGen() uint32 }

type timerTask struct {
	at        time.Time
	seq       uint64
	every     time.Duration
	fn        func()
	owner     timerOwner
	gen       uint32
	cancelled atomic.Bool
	index     int
}

func (t *timerTask) dead() bool {
	return t.cancelled.Load() || (t.owner != nil && t.owner.timerGen() != t.gen)
}

type taskHeap []*timerTask

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h taskHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *taskHeap) Push(x any) {
	t := x.(*timerTask)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *taskHeap) Pop() any {
	old := *h
	n := len(old)
	t := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	t.index = -1
	return t
}

// scheduler runs every in-memory timer of a System on one goroutine with one
// Timer and a min-heap ordered by due time (then by scheduling order), so
// the number of goroutines and runtime timers does not grow with the number
// of actors or timers.
type scheduler struct {
	clock   Clock
	metrics Metrics
	logger  *slog.Logger

	mu        sync.Mutex
	tasks     taskHeap
	seq       uint64
	cancelled int // cancellations since the last compaction (a hint)
	closed    bool

	wake chan struct{}
	quit chan struct{}
	done chan struct{}

	fired  atomic.Uint64
	panics atomic.Uint64
}

func newScheduler(clock Clock, metrics Metrics, logger *slog.Logger) *scheduler {
	s := &scheduler{
		clock:   clock,
		metrics: metrics,
		logger:  logger,
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go s.loop()
	return s
}

// add schedules fn at at, repeating every `every` when every > 0. An owner
// makes the task die with the owner's current generation.
func (s *scheduler) add(at time.Time, every time.Duration, owner timerOwner, gen uint32, fn func()) CancelFunc {
	t := &timerTask{at: at, every: every, fn: fn, owner: owner, gen: gen}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return func() {}
	}
	s.seq++
	t.seq = s.seq
	heap.Push(&s.tasks, t)
	first := t.index == 0
	s.mu.Unlock()
	if first {
		s.signal()
	}
	return func() {
		if t.cancelled.CompareAndSwap(false, true) {
			s.mu.Lock()
			s.cancelled++
			s.mu.Unlock()
		}
	}
}

func (s *scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) loop() {
	defer close(s.done)
	var timer Timer // created on first use, so an idle scheduler arms nothing
	var timerC <-chan time.Time
	var due []*timerTask
	for {
		now := s.clock.Now()
		s.mu.Lock()
		s.compactLocked()
		for len(s.tasks) > 0 && !s.tasks[0].at.After(now) {
			t := heap.Pop(&s.tasks).(*timerTask)
			if !t.dead() {
				due = append(due, t)
			}
		}
		pending := len(s.tasks)
		var next time.Time
		if pending > 0 {
			next = s.tasks[0].at
		}
		s.mu.Unlock()
		s.metrics.TimersPending(pending)

		if len(due) > 0 {
			for i, t := range due {
				s.run(t)
				if t.every > 0 && !t.dead() {
					s.reschedule(t, now)
				}
				due[i] = nil
			}
			due = due[:0]
			continue // rescheduled tasks may already be due
		}
		if pending > 0 {
			if timer == nil {
				timer = s.clock.NewTimer(time.Hour)
				timerC = timer.C()
			}
			s.arm(timer, next)
		}
		select {
		case <-timerC:
		case <-s.wake:
			if timer != nil {
				timer.Stop()
			}
		case <-s.quit:
			if timer != nil {
				timer.Stop()
			}
			return
		}
	}
}

// absoluteTimer is implemented by timers that can be armed for an instant
// rather than a duration (ManualClock's), which removes the race between
// reading the clock and arming the timer while a test advances time.
type absoluteTimer interface{ resetAt(t time.Time) }

func (s *scheduler) arm(timer Timer, at time.Time) {
	if a, ok := timer.(absoluteTimer); ok {
		a.resetAt(at)
		return
	}
	timer.Reset(at.Sub(s.clock.Now()))
}

// compactLocked rebuilds the heap when most of it is cancelled, so lazy
// cancellation cannot make the heap grow without bound.
func (s *scheduler) compactLocked() {
	if len(s.tasks) < 64 || s.cancelled*2 < len(s.tasks) {
		return
	}
	live := s.tasks[:0]
	for _, t := range s.tasks {
		if !t.dead() {
			live = append(live, t)
		}
	}
	for i := len(live); i < len(s.tasks); i++ {
		s.tasks[i] = nil
	}
	s.tasks = live
	for i, t := range s.tasks {
		t.index = i
	}
	heap.Init(&s.tasks)
	s.cancelled = 0
}

// reschedule keeps a fixed rate but skips missed periods instead of firing a
// burst after a stall.
func (s *scheduler) reschedule(t *timerTask, now time.Time) {
	t.at = t.at.Add(t.every)
	if !t.at.After(now) {
		t.at = now.Add(t.every)
	}
	s.mu.Lock()
	if !s.closed {
		s.seq++
		t.seq = s.seq
		heap.Push(&s.tasks, t)
	}
	s.mu.Unlock()
}

func (s *scheduler) run(t *timerTask) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.metrics.TimerPanicked()
			s.logger.Error("actor: timer callback panicked", "panic", fmt.Sprint(r))
		}
	}()
	s.fired.Add(1)
	s.metrics.TimerFired()
	t.fn()
}

func (s *scheduler) stop() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return
	}
	s.closed = true
	s.tasks = nil
	s.mu.Unlock()
	close(s.quit)
	<-s.done
}

func (s *scheduler) stats() TimerStats {
	s.mu.Lock()
	n := len(s.tasks)
	s.mu.Unlock()
	return TimerStats{Pending: n, Fired: s.fired.Load(), Panics: s.panics.Load()}
}
