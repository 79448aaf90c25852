package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// A group that finds the send backlog full is woken when the backlog
// drains — not by polling on a timer, which a manual clock that never
// moves would never fire.
func TestGroupWaitingForSendRoomIsWokenByTheDrainNotByTime(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxBacklog, c.SendWorkers = 1, 1 })
	entered, release := make(chan struct{}, 8), make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		entered <- struct{}{}
		<-release
		return crewcast.SendResult{MessageID: id}, nil
	}
	// a: its first send holds the only worker, its second fills the backlog.
	a := e.create(2, crewcast.ModeIndividual)
	<-entered
	e.waitGroup(a, "both claimed", allStatus(crewcast.StatusSending))
	// b finds no room. A refused command is a barrier: b's first kick,
	// queued by its creation, has run when the command is answered.
	b := e.create(1, crewcast.ModeIndividual)
	if err := e.tr.Resume(context.Background(), b, "op"); !errors.Is(err, group.ErrState) {
		t.Fatalf("barrier: %v", err)
	}
	open()
	e.waitGroup(a, "a sent", allStatus(crewcast.StatusSent))
	e.waitGroup(b, "b sent without the clock moving", allStatus(crewcast.StatusSent))
}

// The inbox sweep runs on the tracker's clock: an entry left unrouted (a
// crash between the inbox insert and routing) is routed when the clock
// passes SweepInterval, however little real time has gone by.
func TestSweepRunsOnTheTrackersClock(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Settings = group.Settings{CheckAfter: 5000 * time.Hour, Deadline: 10000 * time.Hour}
	})
	id := e.create(1, crewcast.ModeIndividual)
	_, rows := e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	ev := statusEvent("unrouted-1", rows[0], crewcast.StatusDelivered)
	payload, err := json.Marshal([]crewcast.Event{ev})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.InsertInbox(context.Background(), []store.InboxEntry{{Provider: ev.Provider, EventID: ev.EventID,
		MessageID: ev.MessageID, Payload: payload, ReceivedAt: e.clk.Now()}}); err != nil {
		t.Fatal(err)
	}
	// SweepInterval is an hour of the manual clock; move it an hour at a
	// time until the sweep has routed the entry.
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				e.clk.Advance(time.Hour)
			}
		}
	}()
	e.waitGroup(id, "delivered by the sweep", allStatus(crewcast.StatusDelivered))
}
