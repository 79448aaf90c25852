package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	proto "github.com/asynkron/protoactor-go/actor"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/bench/internal/harness"
)

// msg is what the benchmark actors receive. protoactor-go boxes it into an
// interface; crewcast's typed mailboxes store it as is.
type msg struct{ n int }

// runtimeUnderTest is one actor runtime, behind the same harness.
type runtimeUnderTest struct {
	name string
	// tell sends n messages from senders goroutines to one actor and
	// returns how long it took until the actor had processed them all.
	tell func(n, senders int) (time.Duration, error)
	// idle spawns n actors, sends each one message, waits until all were
	// processed, and returns what is retained per actor afterwards.
	idle func(n int) (idleReport, error)
}

var runtimes = map[string]runtimeUnderTest{
	"ours":          {name: "crewcast actor", tell: tellOurs, idle: idleOurs},
	"ours-blocking": {name: "crewcast actor (TellBlocking, default mailbox)", tell: tellOursBlocking},
	"protoactor":    {name: "protoactor-go", tell: tellProto, idle: idleProto},
}

// compareActors runs the same two measurements on crewcast's actor
// runtime and on protoactor-go:
//   - tell: N messages from one goroutine to one actor, no replies, until
//     the actor has processed the last (best of tellRounds, after a
//     warm-up round); also from 4 sending goroutines. No message may be
//     lost. protoactor-go: Send into its default (unbounded) mailbox.
//     crewcast, the named figure: Tell (never blocks) into a mailbox
//     allowed to grow to N, the same non-blocking, nothing-dropped
//     contract; and, reported beside it, TellBlocking into the default
//     1024-slot mailbox, crewcast's own way to let a fast sender wait.
//   - idle bytes: heap retained per actor that has processed one message
//     and sits idle (neither runtime parks a goroutine on an idle actor),
//     each runtime measured in a fresh child process after two GCs. Lower
//     is better.
func compareActors(ctx context.Context, c config, rep harness.Reporter) error {
	rates := map[string]map[int]float64{}
	for _, senders := range []int{1, 4} {
		for _, key := range []string{"ours", "ours-blocking", "protoactor"} {
			rt := runtimes[key]
			if _, err := rt.tell(c.tellN/4, senders); err != nil { // warm-up
				return err
			}
			best := 0.0
			dir := c.profile
			if senders != 1 {
				dir = ""
			}
			if err := harness.Profiled(dir, "tell-"+key, func() error {
				for range c.tellRounds {
					if err := ctx.Err(); err != nil {
						return err
					}
					d, err := rt.tell(c.tellN, senders)
					if err != nil {
						return fmt.Errorf("%s tell: %w", rt.name, err)
					}
					best = max(best, float64(c.tellN)/d.Seconds())
				}
				return nil
			}); err != nil {
				return err
			}
			if rates[key] == nil {
				rates[key] = map[int]float64{}
			}
			rates[key][senders] = best
			rep.Progress("actors: %s tell from %d sender(s): %.2f M msg/s", rt.name, senders, best/1e6)
		}
	}
	idle := map[string]idleReport{}
	for _, key := range []string{"ours", "protoactor"} {
		r, err := idleChild(ctx, key, c.idleN)
		if err != nil {
			return fmt.Errorf("%s idle: %w", runtimes[key].name, err)
		}
		idle[key] = r
		rep.Progress("actors: %s idle: %.0f bytes/actor, %d goroutines for %d actors", runtimes[key].name, r.BytesPerActor, r.Goroutines, c.idleN)
	}
	rep.Result("peer_tell_ours", rates["ours"][1], "msg/s")
	rep.Result("peer_tell_protoactor", rates["protoactor"][1], "msg/s")
	rep.Result("peer_tell_ratio", rates["ours"][1]/rates["protoactor"][1], "ratio")
	rep.Result("peer_tell4_ratio", rates["ours"][4]/rates["protoactor"][4], "ratio")
	rep.Result("peer_tell_blocking_ours", rates["ours-blocking"][1], "msg/s")
	rep.Result("peer_tell_blocking_ratio", rates["ours-blocking"][1]/rates["protoactor"][1], "ratio")
	rep.Result("peer_tell4_blocking_ratio", rates["ours-blocking"][4]/rates["protoactor"][4], "ratio")
	rep.Result("peer_idle_bytes_ours", idle["ours"].BytesPerActor, "bytes")
	rep.Result("peer_idle_bytes_protoactor", idle["protoactor"].BytesPerActor, "bytes")
	rep.Result("peer_idle_bytes_ratio", idle["ours"].BytesPerActor/idle["protoactor"].BytesPerActor, "ratio")
	return nil
}

// sendAll sends n messages from senders goroutines through send.
func sendAll(n, senders int, send func(msg) bool) error {
	var wg sync.WaitGroup
	var refused atomic.Int64
	per := n / senders
	for s := range senders {
		count := per
		if s == senders-1 {
			count = n - per*(senders-1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range count {
				if !send(msg{n: i}) {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if r := refused.Load(); r > 0 {
		return fmt.Errorf("%d messages refused", r)
	}
	return nil
}

func tellOurs(n, senders int) (time.Duration, error) {
	sys := actor.NewSystem()
	defer shutdownOurs(sys)
	done := make(chan struct{})
	count := 0
	ref, err := actor.Spawn(sys, "sink", func() actor.Actor[msg] {
		return actor.ActorFunc[msg](func(_ *actor.Context[msg], _ msg) {
			if count++; count == n {
				close(done)
			}
		})
	}, actor.WithMailboxSize(n))
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := sendAll(n, senders, ref.Tell); err != nil {
		return 0, err
	}
	<-done
	return time.Since(start), nil
}

func tellOursBlocking(n, senders int) (time.Duration, error) {
	sys := actor.NewSystem()
	defer shutdownOurs(sys)
	done := make(chan struct{})
	count := 0
	ref, err := actor.Spawn(sys, "sink", func() actor.Actor[msg] {
		return actor.ActorFunc[msg](func(_ *actor.Context[msg], _ msg) {
			if count++; count == n {
				close(done)
			}
		})
	})
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	start := time.Now()
	if err := sendAll(n, senders, func(m msg) bool { return ref.TellBlocking(ctx, m) == nil }); err != nil {
		return 0, err
	}
	<-done
	return time.Since(start), nil
}

func shutdownOurs(sys *actor.System) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = sys.Shutdown(ctx)
}

func newProtoSystem() *proto.ActorSystem {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return proto.NewActorSystem(proto.WithLoggerFactory(func(*proto.ActorSystem) *slog.Logger { return quiet }))
}

func tellProto(n, senders int) (time.Duration, error) {
	sys := newProtoSystem()
	defer sys.Shutdown()
	done := make(chan struct{})
	count := 0
	pid := sys.Root.Spawn(proto.PropsFromFunc(func(ctx proto.Context) {
		if _, ok := ctx.Message().(msg); ok {
			if count++; count == n {
				close(done)
			}
		}
	}))
	root := sys.Root
	start := time.Now()
	if err := sendAll(n, senders, func(m msg) bool { root.Send(pid, m); return true }); err != nil {
		return 0, err
	}
	<-done
	return time.Since(start), nil
}

// idleReport is what an idle-actor child process measured.
type idleReport struct {
	Actors        int     `json:"actors"`
	BytesPerActor float64 `json:"bytes_per_actor"`
	Goroutines    int     `json:"goroutines"`
}

// idleChild measures runtime key's idle actors in a fresh process.
func idleChild(ctx context.Context, key string, n int) (idleReport, error) {
	exe, err := os.Executable()
	if err != nil {
		return idleReport{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-worker", key, "-idle-n", fmt.Sprint(n))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return idleReport{}, err
	}
	if err := cmd.Start(); err != nil {
		return idleReport{}, err
	}
	var last []byte
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		last = append(last[:0], sc.Bytes()...)
	}
	if err := cmd.Wait(); err != nil {
		return idleReport{}, err
	}
	var r idleReport
	if err := json.Unmarshal(last, &r); err != nil {
		return r, fmt.Errorf("child output %q: %w", last, err)
	}
	return r, nil
}

// idleWorker is the child process side of idleChild.
func idleWorker(c config, stdout io.Writer) error {
	rt, ok := runtimes[c.worker]
	if !ok || rt.idle == nil {
		return fmt.Errorf("unknown runtime %q", c.worker)
	}
	r, err := rt.idle(c.idleN)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(r)
}

// heapInUse returns the live heap after two collections.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func idleOurs(n int) (idleReport, error) {
	sys := actor.NewSystem()
	defer shutdownOurs(sys)
	var wg sync.WaitGroup
	producer := func() actor.Actor[msg] {
		return actor.ActorFunc[msg](func(*actor.Context[msg], msg) { wg.Done() })
	}
	refs := make([]*actor.Ref[msg], n)
	before := heapInUse()
	wg.Add(n)
	for i := range refs {
		ref, err := actor.Spawn(sys, "", producer)
		if err != nil {
			return idleReport{}, err
		}
		if !ref.Tell(msg{n: i}) {
			return idleReport{}, fmt.Errorf("tell to idle actor %d refused", i)
		}
		refs[i] = ref
	}
	wg.Wait()
	return idleMeasure(n, before, sys.RunningActors, func() { runtime.KeepAlive(refs) })
}

func idleProto(n int) (idleReport, error) {
	sys := newProtoSystem()
	defer sys.Shutdown()
	var wg sync.WaitGroup
	props := proto.PropsFromFunc(func(ctx proto.Context) {
		if _, ok := ctx.Message().(msg); ok {
			wg.Done()
		}
	})
	pids := make([]*proto.PID, n)
	before := heapInUse()
	wg.Add(n)
	for i := range pids {
		pids[i] = sys.Root.Spawn(props)
		sys.Root.Send(pids[i], msg{n: i})
	}
	wg.Wait()
	return idleMeasure(n, before, func() int { return 0 }, func() { runtime.KeepAlive(pids) })
}

// idleMeasure waits (bounded) until the runtime reports no actor running a
// turn, then measures the heap retained since before.
func idleMeasure(n int, before uint64, running func() int, keep func()) (idleReport, error) {
	deadline := time.Now().Add(10 * time.Second)
	for running() > 0 {
		if time.Now().After(deadline) {
			return idleReport{}, fmt.Errorf("%d actors still running after 10s", running())
		}
		runtime.Gosched()
	}
	// Goroutines that finish a turn may still be on their way out.
	for g := runtime.NumGoroutine(); time.Now().Before(deadline); g = runtime.NumGoroutine() {
		runtime.Gosched()
		if runtime.NumGoroutine() >= g {
			break
		}
	}
	after := heapInUse()
	keep()
	return idleReport{Actors: n, BytesPerActor: (float64(after) - float64(before)) / float64(n), Goroutines: runtime.NumGoroutine()}, nil
}
