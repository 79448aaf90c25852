package actor

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// cmsg is the message type of the counter actor used across tests.
type cmsg struct {
	add   int
	get   Reply[int]
	block chan struct{} // Receive waits for it to close
	in    chan struct{} // closed when Receive starts on this message
	boom  bool          // panic
	seen  chan int      // receives the value after this message
}

type counter struct {
	n int
}

func (a *counter) Receive(c *Context[cmsg], m cmsg) {
	if m.in != nil {
		close(m.in)
	}
	if m.block != nil {
		<-m.block
	}
	if m.boom {
		panic("boom")
	}
	a.n += m.add
	m.get.Send(a.n)
	if m.seen != nil {
		m.seen <- a.n
	}
}

func newCounter() Actor[cmsg] { return &counter{} }

func askCount(t *testing.T, r *Ref[cmsg]) int {
	t.Helper()
	n, err := Ask(ctxFor(t, waitLimit), r, func(rep Reply[int]) cmsg { return cmsg{get: rep} })
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	return n
}

// blockActor spawns a counter, sends it a message that blocks until the
// returned release is called, and waits until it is inside Receive.
func blockActor(t *testing.T, r *Ref[cmsg]) (release func()) {
	t.Helper()
	in, gate := make(chan struct{}), make(chan struct{})
	if !r.Tell(cmsg{block: gate, in: in}) {
		t.Fatal("Tell of the blocking message failed")
	}
	waitClosed(t, in)
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

func TestTellAndAskTypedReply(t *testing.T) {
	sys := newTestSystem(t)
	r, err := Spawn(sys, "counter", newCounter)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if !r.Tell(cmsg{add: 1}) {
			t.Fatal("Tell returned false")
		}
	}
	if got := askCount(t, r); got != 10 {
		t.Fatalf("count = %d, want 10", got)
	}
	if r.Key() != "counter" {
		t.Fatalf("Key = %q", r.Key())
	}
	if _, err := Spawn(sys, "counter", newCounter); !errors.Is(err, ErrNameTaken) {
		t.Fatalf("duplicate name: err = %v, want ErrNameTaken", err)
	}
	if _, err := Spawn(sys, "a/b", newCounter); !errors.Is(err, ErrInvalidName) {
		t.Fatalf("name with slash: err = %v, want ErrInvalidName", err)
	}
	anon, err := Spawn(sys, "", newCounter)
	if err != nil || anon.Key() == "" {
		t.Fatalf("anonymous spawn: %v, key %q", err, anon.Key())
	}
	shutdownClean(t, sys)
}

func TestAskTimeoutAndStopped(t *testing.T) {
	sys := newTestSystem(t)
	silent, _ := Spawn(sys, "silent", func() Actor[cmsg] {
		return ActorFunc[cmsg](func(*Context[cmsg], cmsg) {}) // never replies
	})
	// The context's deadline ends an Ask that gets no answer: the error
	// says both that the Ask timed out and why.
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer dcancel()
	if _, err := Ask(dctx, silent, func(r Reply[int]) cmsg { return cmsg{get: r} }); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ask past the deadline = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	errc := make(chan error, 1)

	// Context cancellation ends an Ask too.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := Ask(cctx, silent, func(r Reply[int]) cmsg { return cmsg{get: r} }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ask with cancelled ctx = %v", err)
	}

	// An actor that stops while the Ask waits.
	r, _ := Spawn(sys, "stopper", newCounter)
	release := blockActor(t, r)
	go func() {
		_, err := Ask(context.Background(), r, func(rep Reply[int]) cmsg { return cmsg{get: rep} })
		errc <- err
	}()
	waitUntil(t, "ask queued", func() bool { return r.p.info().MailboxDepth == 2 })
	r.Stop()
	release()
	if err := recv(t, errc); !errors.Is(err, ErrStopped) {
		t.Fatalf("Ask to stopping actor = %v, want ErrStopped", err)
	}
	// And to an actor already stopped.
	if _, err := Ask(ctxFor(t, time.Second), r, func(rep Reply[int]) cmsg { return cmsg{get: rep} }); !errors.Is(err, ErrStopped) {
		t.Fatalf("Ask to stopped actor = %v, want ErrStopped", err)
	}
}

func TestDeadLettersOnFullMailbox(t *testing.T) {
	sys := newTestSystem(t, WithDeadLetterCapacity(4))
	r, _ := Spawn(sys, "small", newCounter, WithMailboxSize(3))
	release := blockActor(t, r) // holds one of the three slots
	ctx := WithTraceID(context.Background(), "t-accepted")
	for i := range 2 {
		if !r.TellCtx(ctx, cmsg{add: 1}) {
			t.Fatalf("message %d within the bound was refused", i+1)
		}
	}
	for i := 0; i < 10; i++ {
		tctx := WithTraceID(context.Background(), "t-"+string(rune('a'+i)))
		if r.TellCtx(tctx, cmsg{add: 100}) {
			t.Fatalf("Tell #%d beyond the bound returned true", i)
		}
	}
	st := sys.DeadLetters()
	if st.Count != 10 {
		t.Fatalf("dead letter count = %d, want 10", st.Count)
	}
	if len(st.Recent) != 4 {
		t.Fatalf("ring holds %d samples, want 4 (bounded)", len(st.Recent))
	}
	for i, dl := range st.Recent { // the last four, oldest first
		want := "t-" + string(rune('a'+6+i))
		if dl.TraceID != want || dl.Target != "small" || dl.Reason != ReasonMailboxFull ||
			dl.MessageType != "actor.cmsg" || dl.Time.IsZero() {
			t.Fatalf("sample %d = %+v, want trace %s, target small, reason %q, type actor.cmsg", i, dl, want, ReasonMailboxFull)
		}
	}
	release()
	seen := make(chan int, 1)
	if err := r.TellBlocking(context.Background(), cmsg{seen: seen}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, seen); got != 2 {
		t.Fatalf("count = %d, want 2 (refused messages must not be processed)", got)
	}
}

func TestTellAfterStopIsDeadLetter(t *testing.T) {
	sys := newTestSystem(t)
	r, _ := Spawn(sys, "gone", newCounter)
	r.Stop()
	waitClosed(t, r.Done())
	if r.Tell(cmsg{add: 1}) {
		t.Fatal("Tell to a stopped actor returned true")
	}
	if err := r.TellBlocking(context.Background(), cmsg{add: 1}); !errors.Is(err, ErrStopped) {
		t.Fatalf("TellBlocking to a stopped actor = %v, want ErrStopped", err)
	}
	st := sys.DeadLetters()
	if st.Count != 2 || st.Recent[0].Reason != ReasonStopped || st.Recent[1].Reason != ReasonStopped {
		t.Fatalf("dead letters = %+v, want 2 with reason %q", st, ReasonStopped)
	}
}

func TestTellBlockingWaitsForRoom(t *testing.T) {
	sys := newTestSystem(t)
	r, _ := Spawn(sys, "tight", newCounter, WithMailboxSize(2))
	release := blockActor(t, r)
	if !r.Tell(cmsg{add: 1}) {
		t.Fatal("second slot refused")
	}
	// Full: a deadline ends the wait and the message is not delivered.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	err := r.TellBlocking(ctx, cmsg{add: 100})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("TellBlocking on a full mailbox = %v, want DeadlineExceeded", err)
	}
	// Room appears once the actor moves on.
	done := make(chan error, 1)
	go func() { done <- r.TellBlocking(context.Background(), cmsg{add: 10}) }()
	waitUntil(t, "blocked sender waits on room", func() bool {
		r.p.mu.Lock()
		defer r.p.mu.Unlock()
		return r.p.room != nil
	})
	release()
	if err := recv(t, done); err != nil {
		t.Fatalf("TellBlocking = %v", err)
	}
	seen := make(chan int, 1)
	if err := r.TellBlocking(context.Background(), cmsg{seen: seen}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, seen); got != 11 {
		t.Fatalf("count = %d, want 11", got)
	}
	if sys.DeadLetters().Count != 0 {
		t.Fatal("TellBlocking must not produce dead letters while waiting")
	}
}

// relay forwards to next with the package-level Tell and logs.
type relay struct {
	next *Ref[string]
	out  chan<- string
}

func (a *relay) Receive(c *Context[string], m string) {
	c.Logger().Info("relaying", "step", m)
	if TraceID(c.Context()) != c.TraceID() {
		panic("Context() does not carry the trace id")
	}
	if a.next != nil {
		Tell(c, a.next, m+">"+c.Key())
		return
	}
	a.out <- c.TraceID()
}

func TestTraceIDPropagationAndLogger(t *testing.T) {
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	sys := newTestSystem(t, WithLogger(logger))
	out := make(chan string, 2)
	last, _ := Spawn(sys, "last", func() Actor[string] { return &relay{out: out} })
	first, _ := Spawn(sys, "first", func() Actor[string] { return &relay{next: last} })

	first.TellCtx(WithTraceID(context.Background(), "trace-42"), "go")
	if got := recv(t, out); got != "trace-42" {
		t.Fatalf("trace at the end of the chain = %q, want trace-42", got)
	}
	// Without a trace id the receiver gets a fresh one that it propagates.
	first.Tell("again")
	generated := recv(t, out)
	if generated == "" || generated == "trace-42" {
		t.Fatalf("generated trace id = %q", generated)
	}
	shutdownClean(t, sys)

	type line struct {
		Msg     string `json:"msg"`
		Actor   string `json:"actor"`
		TraceID string `json:"trace_id"`
	}
	seen := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ln line
		if err := json.Unmarshal([]byte(l), &ln); err != nil {
			t.Fatalf("bad log line %q: %v", l, err)
		}
		if ln.Msg == "relaying" {
			seen[ln.Actor+"/"+ln.TraceID] = ln.Msg
		}
	}
	for _, want := range []string{"first/trace-42", "last/trace-42", "first/" + generated, "last/" + generated} {
		if _, ok := seen[want]; !ok {
			t.Fatalf("no log line with actor/trace %s; got %v", want, seen)
		}
	}
}

func TestIdleActorsHoldNoGoroutine(t *testing.T) {
	sys := newTestSystem(t)
	base := runtime.NumGoroutine()
	const n = 10000
	var wg sync.WaitGroup
	wg.Add(n)
	refs := make([]*Ref[cmsg], n)
	for i := range refs {
		r, err := Spawn(sys, "", func() Actor[cmsg] {
			return ActorFunc[cmsg](func(*Context[cmsg], cmsg) { wg.Done() })
		})
		if err != nil {
			t.Fatal(err)
		}
		refs[i] = r
		r.Tell(cmsg{})
	}
	wg.Wait()
	waitUntil(t, "mailboxes to go idle", func() bool { return sys.RunningActors() == 0 })
	waitUntil(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= base+10 })

	// Virtual actors: activated and idle, no goroutines either.
	k := NewKind(sys, "idle", func(string) Actor[cmsg] { return newCounter() }, KindOptions{})
	for i := 0; i < n; i++ {
		k.Get("k" + strconv.Itoa(i))
	}
	if k.Active() != n {
		t.Fatalf("Active = %d, want %d", k.Active(), n)
	}
	waitUntil(t, "virtual actors to go idle", func() bool { return sys.RunningActors() == 0 })
	waitUntil(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= base+10 })
	// And they still work.
	wg.Add(1)
	refs[0].Tell(cmsg{})
	wg.Wait()
	if got := askCount(t, k.Get("k1")); got != 0 {
		t.Fatalf("count = %d", got)
	}
	shutdownClean(t, sys)
}

// TestFloodedActorYields runs on one P: the flooded actor hands the
// processor over after its throughput, so a message it sends to another
// actor is handled long before it works through its backlog.
func TestFloodedActorYields(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	sys := newTestSystem(t)
	const throughput, backlog = 10, 1000
	var floodDone atomic.Int64
	observed := make(chan int64, 1)
	other, _ := Spawn(sys, "other", func() Actor[int] {
		return ActorFunc[int](func(*Context[int], int) { observed <- floodDone.Load() })
	})
	gate := make(chan struct{})
	flooded, _ := Spawn(sys, "flooded", func() Actor[int] {
		return ActorFunc[int](func(c *Context[int], m int) {
			if m == -1 {
				<-gate
				Tell(c, other, 0)
				return
			}
			floodDone.Add(1)
		})
	}, WithThroughput(throughput), WithMailboxSize(backlog+10))
	flooded.Tell(-1)
	for i := 0; i < backlog; i++ {
		flooded.Tell(i)
	}
	close(gate)
	got := recv(t, observed)
	if got >= backlog {
		t.Fatalf("other actor ran only after the flooded one processed %d messages; want a yield after ~%d", got, throughput)
	}
	if got > 4*throughput {
		t.Fatalf("other actor waited for %d messages, want at most a few turns of %d", got, throughput)
	}
}

func TestActorsAndDebugSnapshots(t *testing.T) {
	clk := NewManualClock(time.Unix(1000, 0))
	sys := newTestSystem(t, WithClock(clk))
	r, _ := Spawn(sys, "snap", newCounter)
	r.Tell(cmsg{add: 1})
	askCount(t, r)
	// Counters are updated at the end of each batch.
	waitUntil(t, "batch bookkeeping", func() bool { return r.p.info().Processed == 2 })
	k := NewKind(sys, "things", func(string) Actor[cmsg] { return newCounter() }, KindOptions{})
	release := blockActor(t, k.Get("x"))
	k.Tell("x", cmsg{add: 1})
	infos := sys.Actors()
	if len(infos) != 2 {
		t.Fatalf("Actors() = %+v, want 2", infos)
	}
	if a := infos[0]; a.Key != "snap" || a.Kind != "" || a.Processed != 2 || a.MailboxDepth != 0 || !a.StartedAt.Equal(time.Unix(1000, 0)) {
		t.Fatalf("plain actor info = %+v", a)
	}
	if a := infos[1]; a.Key != "x" || a.Kind != "things" || a.MailboxDepth != 2 {
		t.Fatalf("virtual actor info = %+v (depth counts the message in progress)", a)
	}
	release()
	shutdownClean(t, sys)
}

func TestReplySendNeverBlocks(t *testing.T) {
	var zero Reply[int]
	zero.Send(1) // no asker: dropped
	ch := make(chan int, 1)
	r := Reply[int]{ch: ch}
	r.Send(1)
	r.Send(2) // second answer: dropped, must not block
	if v := <-ch; v != 1 {
		t.Fatalf("got %d, want the first answer", v)
	}
}
