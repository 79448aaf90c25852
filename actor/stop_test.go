package actor

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// recorder records the adds it processes and whether Stopped ran.
type recorder struct {
	got     chan<- int
	stopped chan<- string
}

func (a *recorder) Receive(c *Context[cmsg], m cmsg) {
	if m.in != nil {
		close(m.in)
	}
	if m.block != nil {
		<-m.block
	}
	a.got <- m.add
}

func (a *recorder) Stopped(c *Context[cmsg]) {
	if c.Context().Err() != nil {
		a.stopped <- "context already cancelled in Stopped"
		return
	}
	a.stopped <- "stopped"
}

func TestStopDrainsQueueWhenConfigured(t *testing.T) {
	for _, drain := range []bool{true, false} {
		sys := NewSystem()
		got, stopped := make(chan int, 100), make(chan string, 1)
		r, _ := Spawn(sys, "r", func() Actor[cmsg] { return &recorder{got: got, stopped: stopped} }, WithDrainOnStop(drain))
		in, gate := make(chan struct{}), make(chan struct{})
		r.Tell(cmsg{add: 0, in: in, block: gate})
		waitClosed(t, in)
		for i := 1; i <= 10; i++ {
			r.Tell(cmsg{add: i})
		}
		r.Stop()
		if r.Tell(cmsg{add: 99}) {
			t.Fatalf("drain=%v: Tell after Stop accepted", drain)
		}
		close(gate)
		waitClosed(t, r.Done())
		if s := recv(t, stopped); s != "stopped" {
			t.Fatal(s)
		}
		close(got)
		var seq []int
		for v := range got {
			seq = append(seq, v)
		}
		dl := sys.DeadLetters()
		if drain {
			if len(seq) != 11 || seq[10] != 10 || dl.Count != 1 {
				t.Fatalf("drain: processed %v, dead letters %d; want 0..10 and 1 (the late Tell)", seq, dl.Count)
			}
		} else {
			if len(seq) != 1 || dl.Count != 11 {
				t.Fatalf("no drain: processed %v, dead letters %d; want only the first and 11 dead", seq, dl.Count)
			}
			for _, d := range dl.Recent {
				if d.Reason != ReasonStopped {
					t.Fatalf("dead letter reason %q", d.Reason)
				}
			}
		}
		shutdownClean(t, sys)
	}
}

func TestContextStopFromInside(t *testing.T) {
	sys := newTestSystem(t)
	var handled atomic.Int32
	in, gate := make(chan struct{}), make(chan struct{})
	r, _ := Spawn(sys, "self", func() Actor[int] {
		return ActorFunc[int](func(c *Context[int], m int) {
			handled.Add(1)
			switch m {
			case 0:
				close(in)
				<-gate
			case 1:
				c.Stop()
			}
		})
	})
	r.Tell(0)
	waitClosed(t, in)
	r.Tell(1) // 1, 2 and 3 are handed to the next batch together
	r.Tell(2)
	r.Tell(3)
	close(gate)
	waitClosed(t, r.Done())
	if handled.Load() != 2 {
		t.Fatalf("handled %d messages; Stop inside Receive must end the batch (no drain)", handled.Load())
	}
	if st := sys.DeadLetters(); st.Count != 2 {
		t.Fatalf("dead letters = %d, want 2", st.Count)
	}
}

func TestShutdownCleanWaitsForDrain(t *testing.T) {
	sys := NewSystem()
	got, stopped := make(chan int, 200), make(chan string, 2)
	var refs []*Ref[cmsg]
	for _, n := range []string{"a", "b"} {
		r, _ := Spawn(sys, n, func() Actor[cmsg] { return &recorder{got: got, stopped: stopped} }, WithDrainOnStop(true))
		refs = append(refs, r)
	}
	in, gate := make(chan struct{}), make(chan struct{})
	refs[0].Tell(cmsg{in: in, block: gate})
	waitClosed(t, in)
	for i := 0; i < 50; i++ {
		refs[0].Tell(cmsg{add: 1})
		refs[1].Tell(cmsg{add: 1})
	}
	go func() { close(gate) }()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	clean, err := sys.Shutdown(ctx)
	if !clean || err != nil {
		t.Fatalf("Shutdown = %v, %v", clean, err)
	}
	if len(got) != 101 || len(stopped) != 2 {
		t.Fatalf("processed %d, stopped %d before Shutdown returned; want 101 and 2", len(got), len(stopped))
	}
	for _, r := range refs {
		waitClosed(t, r.Done())
	}
	if _, err := Spawn(sys, "late", newCounter); !errors.Is(err, ErrStopped) {
		t.Fatalf("Spawn after Shutdown = %v, want ErrStopped", err)
	}
	if refs[1].Tell(cmsg{}) {
		t.Fatal("Tell after Shutdown accepted")
	}
	// A second Shutdown reports the same outcome.
	if clean, err := sys.Shutdown(ctx); !clean || err != nil {
		t.Fatalf("second Shutdown = %v, %v", clean, err)
	}
}

func TestShutdownUncleanAfterDeadline(t *testing.T) {
	sys := NewSystem()
	stuck := make(chan struct{})
	ctxErr := make(chan error, 1)
	in := make(chan struct{})
	r, _ := Spawn(sys, "stuck", func() Actor[int] {
		return ActorFunc[int](func(c *Context[int], _ int) {
			actx := c.Context()
			close(in)
			select {
			case <-actx.Done(): // Shutdown cancels contexts when it gives up
				ctxErr <- actx.Err()
			case <-stuck:
				ctxErr <- nil
			}
			<-stuck
		})
	})
	r.Tell(1)
	waitClosed(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	clean, err := sys.Shutdown(ctx)
	if clean || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, %v; want unclean with DeadlineExceeded", clean, err)
	}
	if e := recv(t, ctxErr); !errors.Is(e, context.Canceled) {
		t.Fatalf("actor context after unclean shutdown: %v, want Canceled", e)
	}
	if clean2, err2 := sys.Shutdown(context.Background()); clean2 || err2 == nil {
		t.Fatalf("second Shutdown = %v, %v; want the first outcome", clean2, err2)
	}
	close(stuck)
	waitClosed(t, r.Done())
}
