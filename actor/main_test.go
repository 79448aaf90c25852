package actor

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	printBenchResults()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// Benchmarks record their figure here on every run; TestMain prints each
// name once, with the value from the final (largest b.N) run.
var (
	benchMu      sync.Mutex
	benchResults = map[string]string{}
)

func recordResult(name string, value float64, unit string) {
	benchMu.Lock()
	benchResults[name] = fmt.Sprintf("RESULT %s %.0f %s", name, value, unit)
	benchMu.Unlock()
}

func printBenchResults() {
	benchMu.Lock()
	defer benchMu.Unlock()
	names := make([]string, 0, len(benchResults))
	for n := range benchResults {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(benchResults[n])
	}
}

// waitLimit bounds every wait in the tests; reaching it is a failure, not
// a synchronisation mechanism.
const waitLimit = 10 * time.Second

func newTestSystem(tb testing.TB, opts ...SystemOption) *System {
	tb.Helper()
	sys := NewSystem(opts...)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		_, _ = sys.Shutdown(ctx)
	})
	return sys
}

func shutdownClean(t *testing.T, sys *System) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	clean, err := sys.Shutdown(ctx)
	if !clean || err != nil {
		t.Fatalf("Shutdown = %v, %v; want clean", clean, err)
	}
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for a value")
	}
	panic("unreachable")
}

func waitClosed(t testing.TB, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for close")
	}
}

// waitUntil re-checks cond, yielding the processor in between, for state
// that has no notification (runtime.NumGoroutine, internal queue lengths).
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// eventLog records lifecycle events and lets a test wait for one.
type eventLog struct {
	mu     sync.Mutex
	events []LifecycleEvent
	notify chan struct{}
}

func newEventLog() (*eventLog, SystemOption) {
	l := &eventLog{notify: make(chan struct{}, 1)}
	return l, WithLifecycleHook(func(ev LifecycleEvent) {
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.mu.Unlock()
		select {
		case l.notify <- struct{}{}:
		default:
		}
	})
}

func (l *eventLog) count(typ LifecycleType, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.events {
		if ev.Type == typ && (key == "" || ev.Key == key) {
			n++
		}
	}
	return n
}

// wait blocks until at least n events of typ for key were recorded and
// returns the n-th.
func (l *eventLog) wait(t testing.TB, typ LifecycleType, key string, n int) LifecycleEvent {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		l.mu.Lock()
		seen := 0
		for _, ev := range l.events {
			if ev.Type == typ && (key == "" || ev.Key == key) {
				seen++
				if seen == n {
					l.mu.Unlock()
					return ev
				}
			}
		}
		l.mu.Unlock()
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for event %s #%d of %q", typ, n, key)
		}
	}
}

// countingMetrics counts every hook for assertions.
type countingMetrics struct {
	activated, passivated, stopped, restarted atomic.Int64
	processed, deadLetters, timerFired        atomic.Int64
	timerPanicked, commitBatches, commitUnits atomic.Int64
	depthSamples                              atomic.Int64
	mu                                        sync.Mutex
	storeErrors                               map[string]int
}

func newCountingMetrics() *countingMetrics {
	return &countingMetrics{storeErrors: map[string]int{}}
}

func (m *countingMetrics) ActorActivated(string)             { m.activated.Add(1) }
func (m *countingMetrics) ActorPassivated(string)            { m.passivated.Add(1) }
func (m *countingMetrics) ActorStopped(string)               { m.stopped.Add(1) }
func (m *countingMetrics) ActorRestarted(string)             { m.restarted.Add(1) }
func (m *countingMetrics) MessagesProcessed(_ string, n int) { m.processed.Add(int64(n)) }
func (m *countingMetrics) MailboxDepth(string, int)          { m.depthSamples.Add(1) }
func (m *countingMetrics) DeadLetter(string)                 { m.deadLetters.Add(1) }
func (m *countingMetrics) TimerFired()                       { m.timerFired.Add(1) }
func (m *countingMetrics) TimerPanicked()                    { m.timerPanicked.Add(1) }
func (m *countingMetrics) TimersPending(int)                 {}
func (m *countingMetrics) CommitBatch(units int, _ time.Duration, _ error) {
	m.commitBatches.Add(1)
	m.commitUnits.Add(int64(units))
}
func (m *countingMetrics) StoreError(op string, _ error) {
	m.mu.Lock()
	m.storeErrors[op]++
	m.mu.Unlock()
}
func (m *countingMetrics) storeErrorCount(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.storeErrors[op]
}

// lockedBuffer is an io.Writer safe for concurrent slog handlers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	b.mu.Unlock()
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// sentinel returns a channel closed by a scheduler callback due at the
// clock's current time plus d: the scheduler runs callbacks in due order,
// so once it is closed every earlier callback has run.
func sentinel(sys *System, d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	sys.AfterFunc(d, func() { close(ch) })
	return ch
}

// settle waits until no actor holds a goroutine, so the bookkeeping at the
// end of their last batch (last-active time) is done before a test moves a
// manual clock.
func settle(t testing.TB, sys *System) {
	t.Helper()
	waitUntil(t, "actors to go idle", func() bool { return sys.RunningActors() == 0 })
}

// ctxFor is a context with deadline d, canceled when the test ends.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
