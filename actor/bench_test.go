package actor

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/internal/stats"
)

func benchShutdown(b *testing.B, sys *System) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if clean, err := sys.Shutdown(ctx); !clean {
		b.Fatalf("shutdown: %v", err)
	}
}

// countTo returns an actor that closes done after n messages.
func countTo(n int, done chan<- struct{}) Producer[int] {
	return func() Actor[int] {
		seen := 0
		return ActorFunc[int](func(_ *Context[int], _ int) {
			seen++
			if seen == n {
				close(done)
			}
		})
	}
}

func BenchmarkTell1to1(b *testing.B) {
	sys := NewSystem()
	defer benchShutdown(b, sys)
	done := make(chan struct{})
	r, _ := Spawn(sys, "sink", countTo(b.N, done), WithMailboxSize(8192), WithThroughput(1024))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := r.TellBlocking(ctx, i); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "msgs/s")
	recordResult("actor_tell_1to1", rate, "msgs/s")
}

func BenchmarkTellNtoN(b *testing.B) {
	const n = 8 // senders and receivers
	sys := NewSystem()
	defer benchShutdown(b, sys)
	per := b.N/n + 1
	total := per * n
	refs := make([]*Ref[int], n)
	dones := make([]chan struct{}, n)
	for i := range refs {
		dones[i] = make(chan struct{})
		refs[i], _ = Spawn(sys, fmt.Sprint("sink", i), countTo(per, dones[i]), WithMailboxSize(8192), WithThroughput(1024))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for s := 0; s < n; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			// Each sender spreads its messages over all receivers; each
			// receiver gets exactly `per` messages in total.
			for i := 0; i < per; i++ {
				if err := refs[(s+i)%n].TellBlocking(ctx, i); err != nil {
					panic(err)
				}
			}
		}(s)
	}
	wg.Wait()
	for _, d := range dones {
		<-d
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(total) / elapsed.Seconds()
	b.ReportMetric(rate, "msgs/s")
	recordResult("actor_tell_nton", rate, "msgs/s")
}

func BenchmarkAskRoundtrip(b *testing.B) {
	sys := NewSystem()
	defer benchShutdown(b, sys)
	r, _ := Spawn(sys, "echo", func() Actor[Reply[int]] {
		return ActorFunc[Reply[int]](func(_ *Context[Reply[int]], m Reply[int]) { m.Send(1) })
	})
	// The deadline is generous: on a shared, loaded machine a single
	// round trip has been seen to stall for hundreds of milliseconds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := func(rep Reply[int]) Reply[int] { return rep }
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := Ask(ctx, r, build); err != nil {
			b.Fatalf("ask %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	ns := float64(elapsed.Nanoseconds()) / float64(b.N)
	recordResult("actor_ask_roundtrip", ns, "ns")
}

// emptyActor is a virtual actor with no state.
type emptyActor struct{}

func (emptyActor) Receive(*Context[int], int) {}

func BenchmarkIdleVirtualActorBytes(b *testing.B) {
	const actors = 200_000
	var perActor float64
	for i := 0; i < b.N; i++ {
		sys := NewSystem()
		k := NewKind(sys, "idle", func(string) Actor[int] { return emptyActor{} }, KindOptions{IdleTimeout: time.Hour})
		keys := make([]string, actors)
		for j := range keys {
			keys[j] = fmt.Sprintf("group-%08d", j)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for _, key := range keys {
			k.Get(key)
		}
		for sys.RunningActors() > 0 {
			runtime.Gosched()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if k.Active() != actors {
			b.Fatalf("active = %d", k.Active())
		}
		perActor = float64(after.HeapAlloc-before.HeapAlloc) / actors
		runtime.KeepAlive(keys)
		benchShutdown(b, sys)
	}
	b.ReportMetric(perActor, "bytes/actor")
	recordResult("actor_idle_bytes", perActor, "bytes/actor")
}

type snapState struct {
	Count int    `json:"count"`
	Name  string `json:"name"`
}

// snapActor recovers its state from an in-memory snapshot on activation.
type snapActor struct {
	key   string
	store *MemoryStore
	state snapState
	ready chan<- struct{}
}

func (a *snapActor) Activate(c *Context[int]) error {
	res, err := Recover(context.Background(), a.store, a.store, a.key,
		func(b []byte) (snapState, error) {
			var s snapState
			err := json.Unmarshal(b, &s)
			return s, err
		},
		func(*snapState, Event) error { return nil })
	if err != nil {
		return err
	}
	a.state = res.State
	return nil
}

func (a *snapActor) Receive(*Context[int], int) { a.ready <- struct{}{} }

func BenchmarkActivationFromSnapshot(b *testing.B) {
	sys := NewSystem()
	defer benchShutdown(b, sys)
	store := NewMemoryStore()
	ready := make(chan struct{}, 1)
	k := NewKind(sys, "snap", func(key string) Actor[int] {
		return &snapActor{key: key, store: store, ready: ready}
	}, KindOptions{})
	keys := make([]string, b.N)
	state, _ := json.Marshal(snapState{Count: 42, Name: "crew call"})
	for i := range keys {
		keys[i] = fmt.Sprintf("g-%d", i)
		store.SaveSnapshot(context.Background(), Snapshot{Key: keys[i], Seq: 10, State: state})
	}
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i, key := range keys {
		start := time.Now()
		k.Tell(key, 1)
		<-ready
		lat[i] = time.Since(start)
	}
	b.StopTimer()
	med, err := stats.Quantile(lat, 0.5)
	if err != nil {
		b.Fatal(err)
	}
	p50 := float64(med.Nanoseconds()) / 1000
	b.ReportMetric(p50, "p50-us")
	recordResult("actor_activation_p50", p50, "us")
}

// fsyncJournal stands in for a durable journal: every Commit call costs a
// fixed latency (an fsync), whatever the number of units in it. That cost
// is what group commit amortises; MemoryStore's cost is dominated by its
// own bookkeeping instead.
type fsyncJournal struct{ latency time.Duration }

func (j fsyncJournal) Commit(_ context.Context, units []Unit) ([]error, error) {
	if j.latency > 0 {
		time.Sleep(j.latency)
	}
	return make([]error, len(units)), nil
}

func (fsyncJournal) Load(context.Context, string, uint64, func(Event) error) error { return nil }

func benchPersist(b *testing.B, j Journal) (rate, perFlush float64) {
	const writers = 64
	c := NewCommitter(j, CommitterOptions{})
	per := b.N/writers + 1
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			jd := NewJournaled(JournaledConfig{Key: fmt.Sprint("actor-", w), Committer: c})
			for i := 0; i < per; i++ {
				if err := jd.PersistEvents(context.Background(), Event{Type: "tick", Data: []byte("x")}); err != nil {
					panic(err)
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	st := c.Stats()
	rate = float64(per*writers) / elapsed.Seconds()
	perFlush = float64(st.Items) / float64(st.Flushes)
	b.ReportMetric(rate, "units/s")
	b.ReportMetric(perFlush, "units/flush")
	return rate, perFlush
}

// BenchmarkPersistBatched: 64 actors persisting concurrently through one
// Committer over a journal whose commit costs 100 µs.
func BenchmarkPersistBatched(b *testing.B) {
	rate, _ := benchPersist(b, fsyncJournal{latency: 100 * time.Microsecond})
	recordResult("actor_persist_batched", rate, "units/s")
}

// BenchmarkPersistBatchedNoLatency measures the batcher's own overhead
// with a commit that costs nothing.
func BenchmarkPersistBatchedNoLatency(b *testing.B) {
	benchPersist(b, fsyncJournal{})
}
