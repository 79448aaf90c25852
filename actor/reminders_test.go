package actor

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

type remMsg struct {
	set   time.Time // set reminder "check" due then, and passivate
	fired *Reminder
}

// remActor keeps its reminders through its journal, as a persistent actor
// of the service would.
type remActor struct {
	key   string
	store *MemoryStore
	com   *Committer
	j     *Journaled
	keep  bool // leave fired reminders in place
	out   chan<- Reminder
}

func (a *remActor) Activate(c *Context[remMsg]) error {
	res, err := Recover(c.Context(), a.store, a.store, a.key,
		func([]byte) (struct{}, error) { return struct{}{}, nil },
		func(*struct{}, Event) error { return nil })
	if err != nil {
		return err
	}
	a.j = NewJournaled(JournaledConfig{Key: a.key, Committer: a.com, Seq: res.Seq, Clock: c.System().Clock()})
	return nil
}

func (a *remActor) Receive(c *Context[remMsg], m remMsg) {
	ctx := c.Context()
	switch {
	case !m.set.IsZero():
		if err := a.j.Persist(ctx, Unit{Events: []Event{{Type: "reminder_set"}},
			Reminders: []ReminderOp{{Name: "check", Due: m.set}}}); err != nil {
			panic(err)
		}
		c.Passivate()
	case m.fired != nil:
		if !a.keep {
			if err := a.j.Persist(ctx, Unit{Events: []Event{{Type: "reminder_done"}},
				Reminders: []ReminderOp{{Name: m.fired.Name, Delete: true}}}); err != nil {
				panic(err)
			}
		}
		a.out <- *m.fired
	}
}

func newRemKind(sys *System, store *MemoryStore, keep bool, out chan<- Reminder, opts ReminderOptions) *Kind[remMsg] {
	com := NewCommitter(store, CommitterOptions{})
	k := NewKind(sys, "rem", func(key string) Actor[remMsg] {
		return &remActor{key: key, store: store, com: com, keep: keep, out: out}
	}, KindOptions{})
	k.EnableReminders(store, func(r Reminder) remMsg { return remMsg{fired: &r} }, opts)
	return k
}

func TestReminderWakesPassivatedActor(t *testing.T) {
	t0 := time.Unix(10_000, 0)
	clk := NewManualClock(t0)
	evs, hook := newEventLog()
	sys := newTestSystem(t, WithClock(clk), hook)
	store := NewMemoryStore()
	out := make(chan Reminder, 4)
	k := newRemKind(sys, store, false, out, ReminderOptions{PollInterval: time.Second})
	k.Tell("g1", remMsg{set: t0.Add(5 * time.Second)})
	evs.wait(t, EventPassivated, "g1", 1)
	if k.Active() != 0 {
		t.Fatal("actor still active")
	}
	clk.Advance(5 * time.Second)
	r := recv(t, out)
	if r.Key != "g1" || r.Name != "check" || !r.Due.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("fired reminder = %+v", r)
	}
	if n := evs.count(EventActivated, "g1"); n != 2 {
		t.Fatalf("activations = %d, want 2 (woken from passivation)", n)
	}
	if rs := store.Reminders("g1"); len(rs) != 0 {
		t.Fatalf("reminder not deleted by the actor's commit: %+v", rs)
	}
	waitUntil(t, "delivery count", func() bool { return k.ReminderStats().Delivered == 1 })
	if st := k.ReminderStats(); st.Errors != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestReminderPollErrorIsReportedAndRetried(t *testing.T) {
	t0 := time.Unix(10_000, 0)
	clk := NewManualClock(t0)
	var logs lockedBuffer
	m := newCountingMetrics()
	sys := newTestSystem(t, WithClock(clk), WithMetrics(m), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	store := NewMemoryStore()
	store.SetReminder(context.Background(), Reminder{Key: "g", Name: "check", Due: t0})
	errDB := errors.New("database is locked")
	store.SetFaults(MemoryFaults{DueReminders: func() error { return errDB }})
	out := make(chan Reminder, 4)
	k := newRemKind(sys, store, false, out, ReminderOptions{PollInterval: time.Second, MaxBackoff: time.Minute})
	waitUntil(t, "first failed poll", func() bool { return m.storeErrorCount("due_reminders") == 1 })
	// Retry after 1 s, then 2 s (doubling).
	clk.Advance(time.Second)
	waitUntil(t, "second failed poll", func() bool { return m.storeErrorCount("due_reminders") == 2 })
	store.SetFaults(MemoryFaults{})
	done := sentinel(sys, 1999*time.Millisecond)
	clk.Advance(1999 * time.Millisecond)
	waitClosed(t, done)
	select {
	case r := <-out:
		t.Fatalf("retried before the doubled backoff: %+v", r)
	default:
	}
	clk.Advance(time.Millisecond)
	if r := recv(t, out); r.Key != "g" {
		t.Fatalf("reminder after recovery = %+v", r)
	}
	if st := k.ReminderStats(); st.Errors != 2 {
		t.Fatalf("stats = %+v", st)
	}
	if !strings.Contains(logs.String(), "reminder poll failed") || !strings.Contains(logs.String(), errDB.Error()) {
		t.Fatalf("poll error not logged: %s", logs.String())
	}
}

func TestReminderNotRefiredWithinRefireAfter(t *testing.T) {
	t0 := time.Unix(10_000, 0)
	clk := NewManualClock(t0)
	sys := newTestSystem(t, WithClock(clk))
	store := NewMemoryStore()
	store.SetReminder(context.Background(), Reminder{Key: "g", Name: "check", Due: t0})
	out := make(chan Reminder, 8)
	k := newRemKind(sys, store, true, out, ReminderOptions{PollInterval: time.Second, RefireAfter: 10 * time.Second})
	recv(t, out)
	for i := 1; i <= 9; i++ {
		polls := k.ReminderStats().Polls
		clk.Advance(time.Second)
		waitUntil(t, "a poll", func() bool { return k.ReminderStats().Polls > polls })
	}
	select {
	case r := <-out:
		t.Fatalf("re-fired within RefireAfter: %+v", r)
	default:
	}
	clk.Advance(time.Second) // 10 s after the first delivery
	recv(t, out)
	waitUntil(t, "delivery count", func() bool { return k.ReminderStats().Delivered == 2 })
}

func TestReminderNudge(t *testing.T) {
	t0 := time.Unix(10_000, 0)
	clk := NewManualClock(t0)
	sys := newTestSystem(t, WithClock(clk))
	store := NewMemoryStore()
	out := make(chan Reminder, 4)
	k := newRemKind(sys, store, false, out, ReminderOptions{PollInterval: time.Hour})
	waitUntil(t, "initial poll", func() bool { return k.ReminderStats().Polls == 1 })
	// A reminder due now: a nudge polls at once, without an hour's wait.
	store.SetReminder(context.Background(), Reminder{Key: "a", Name: "now", Due: t0})
	k.NudgeReminders()
	if r := recv(t, out); r.Name != "now" {
		t.Fatalf("nudged reminder = %+v", r)
	}
	// A reminder due in 5 s: WakeRemindersAt brings the poll forward.
	store.SetReminder(context.Background(), Reminder{Key: "b", Name: "soon", Due: t0.Add(5 * time.Second)})
	k.WakeRemindersAt(t0.Add(5 * time.Second))
	clk.Advance(5 * time.Second)
	if r := recv(t, out); r.Name != "soon" {
		t.Fatalf("woken reminder = %+v", r)
	}
}
