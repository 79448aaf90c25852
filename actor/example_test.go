package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/crewcast/crewcast/actor"
)

// Msg is the counter's message type: add to it, or ask for its value.
type Msg struct {
	Add int
	Get actor.Reply[int]
}

// Counter is an actor; its state needs no locks.
type Counter struct{ n int }

func (c *Counter) Receive(ctx *actor.Context[Msg], m Msg) {
	c.n += m.Add
	m.Get.Send(c.n)
}

func Example() {
	sys := actor.NewSystem()
	defer sys.Shutdown(context.Background())

	ref, err := actor.Spawn(sys, "counter", func() actor.Actor[Msg] { return &Counter{} })
	if err != nil {
		panic(err)
	}
	ref.Tell(Msg{Add: 2})
	ref.Tell(Msg{Add: 3})
	// The context carries the deadline of an Ask.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	n, err := actor.Ask(ctx, ref, func(r actor.Reply[int]) Msg { return Msg{Get: r} })
	fmt.Println(n, err)

	// Virtual actors: one per key, activated on demand.
	groups := actor.NewKind(sys, "group", func(key string) actor.Actor[Msg] { return &Counter{} },
		actor.KindOptions{IdleTimeout: time.Minute})
	groups.Tell("g-1", Msg{Add: 10})
	n, err = actor.Ask(ctx, groups.Get("g-1"), func(r actor.Reply[int]) Msg { return Msg{Get: r} })
	fmt.Println(n, err, groups.Active())
	// Output:
	// 5 <nil>
	// 10 <nil> 1
}

// Total is an event-sourced actor state.
type Total struct{ Sum int }

func ExampleJournaled() {
	ctx := context.Background()
	store := actor.NewMemoryStore() // a store engine in production
	committer := actor.NewCommitter(store, actor.CommitterOptions{})

	apply := func(s *Total, e actor.Event) error {
		var n int
		_, err := fmt.Sscan(string(e.Data), &n)
		s.Sum += n
		return err
	}
	decode := func(b []byte) (Total, error) {
		var t Total
		_, err := fmt.Sscan(string(b), &t.Sum)
		return t, err
	}

	// Activation: recover, then persist new events through the shared
	// Committer (group commit with other actors).
	rec, err := actor.Recover(ctx, store, store, "acct-1", decode, apply)
	if err != nil {
		panic(err)
	}
	state := rec.State
	j := actor.NewJournaled(actor.JournaledConfig{Key: "acct-1", Committer: committer, Snapshots: store,
		Seq: rec.Seq, SnapshotSeq: rec.SnapshotSeq, SnapshotEvery: 2})
	for _, n := range []string{"5", "7", "1"} {
		e := actor.Event{Type: "added", Data: []byte(n)}
		if err := j.PersistEvents(ctx, e); err != nil {
			panic(err) // a *ConflictError or ErrFenced means: stop this instance
		}
		apply(&state, e)
		if err := j.MaybeSnapshot(ctx, func() ([]byte, error) { return []byte(fmt.Sprint(state.Sum)), nil }); err != nil {
			panic(err)
		}
	}

	// A later activation starts from the snapshot (seq 2) plus one event.
	rec, err = actor.Recover(ctx, store, store, "acct-1", decode, apply)
	fmt.Println(rec.State.Sum, rec.Seq, rec.SnapshotSeq, rec.Replayed, err)
	// Output: 13 3 2 1 <nil>
}
