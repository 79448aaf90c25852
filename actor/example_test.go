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
	n, err := actor.Ask(context.Background(), ref, time.Second, func(r actor.Reply[int]) Msg { return Msg{Get: r} })
	fmt.Println(n, err)

	// Virtual actors: one per key, activated on demand.
	groups := actor.NewKind(sys, "group", func(key string) actor.Actor[Msg] { return &Counter{} },
		actor.KindOptions{IdleTimeout: time.Minute})
	groups.Tell("g-1", Msg{Add: 10})
	n, err = actor.Ask(context.Background(), groups.Get("g-1"), time.Second, func(r actor.Reply[int]) Msg { return Msg{Get: r} })
	fmt.Println(n, err, groups.Active())
	// Output:
	// 5 <nil>
	// 10 <nil> 1
}
