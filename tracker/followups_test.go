package tracker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

func (e *env) createPolicy(n int, in group.PolicyInput) string {
	e.t.Helper()
	id, created, err := e.tr.Create(context.Background(), group.Request{From: from, To: nums(n), Text: "Crew call 7am", PolicyInput: in}, CreateOptions{})
	if err != nil || !created {
		e.t.Fatalf("create: %v %v", created, err)
	}
	return id
}

// waitSends waits (real time) until cond holds for the provider's sends.
func (e *env) waitSends(what string, cond func([]crewcast.SendRequest) bool) []crewcast.SendRequest {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := e.prov.sent()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; %d sends", what, len(s))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func countText(prefix string) func([]crewcast.SendRequest) int {
	return func(s []crewcast.SendRequest) int {
		n := 0
		for _, r := range s {
			if strings.HasPrefix(r.Text, prefix) {
				n++
			}
		}
		return n
	}
}

func (e *env) reply(num, text, evID string) {
	e.t.Helper()
	if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{{Provider: "fake", EventID: evID, Kind: crewcast.KindInbound, From: num, To: from, Text: text}}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) journalTypes(id string) map[string]int {
	e.t.Helper()
	types := map[string]int{}
	if err := e.st.Load(context.Background(), id, 0, func(ev actor.Event) error { types[ev.Type]++; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return types
}

// settle returns once the actors have finished everything the last clock
// move (and the test's last calls) set in motion. waitIdle alone is not a
// barrier: it sees only the work queue (sends in flight, outcomes and
// webhooks not yet committed). When it returns there can still be timers
// due that the scheduler has not run (a policy kick), reminders due that
// the poller has not read or delivered (follow-ups, escalations, checks),
// messages in a group's mailbox (the kick a commit told its own actor, a
// delivered reminder), and status lookups in the send pool, which the work
// queue does not hold. So each round of settle waits for
//  1. the timers due by now (timersRan);
//  2. the reminder poller (pollBarrier): what is due now was delivered;
//  3. a barrier through the mailbox of every group actor in memory;
//  4. the send pool idle, then waitIdle: what the pool answered is
//     committed;
//
// and settle repeats rounds until one commits nothing and delivers no
// reminder: nothing was left to set anything else in motion.
func (e *env) settle() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	progress := func() [2]uint64 {
		return [2]uint64{e.tr.committer.Stats().Items, e.tr.groups.ReminderStats().Delivered}
	}
	for before := progress(); ; {
		// Webhooks between the inbox and their group (the router reads
		// routes, with no commit to count) first reach their group's queue.
		for e.tr.routed.done.Load() != e.tr.routed.queued.Load() {
			if ctx.Err() != nil {
				e.t.Fatal("settle: the router did not catch up")
			}
			time.Sleep(time.Millisecond)
		}
		e.timersRan(ctx)
		e.pollBarrier(ctx)
		for _, a := range e.tr.sys.Actors() {
			if a.Kind == "group" {
				e.barrier(a.Key)
			}
		}
		for !e.tr.pool.idle() {
			if ctx.Err() != nil {
				e.t.Fatal("settle: the send pool did not go idle")
			}
			time.Sleep(time.Millisecond)
		}
		if err := e.tr.waitIdle(ctx); err != nil {
			e.t.Fatal(err)
		}
		after := progress()
		if after == before {
			return
		}
		before = after
	}
}

// timersRan returns once the scheduler ran every timer due by now: it runs
// them in due, then scheduling, order, one at a time, so a timer due now
// and scheduled after them runs after them. What they told an actor is in
// its mailbox then (barrier waits for it to be handled).
func (e *env) timersRan(ctx context.Context) {
	e.t.Helper()
	ran := make(chan struct{})
	e.tr.sys.AfterFunc(0, func() { close(ran) })
	select {
	case <-ran:
	case <-ctx.Done():
		e.t.Fatal("the timers due did not run")
	}
}

// pollBarrier returns once the reminder poller has delivered every
// reminder due when it was called. Polls run one at a time, and each is
// counted when its read returns, before it delivers: so the poll counted
// p+2 (p read now) started after the poll p+1 was counted, reading
// reminders due by now, and it has delivered them when p+3 is counted. A
// nudge makes sure each of those polls happens (one running polls again).
func (e *env) pollBarrier(ctx context.Context) {
	e.t.Helper()
	p := e.tr.groups.ReminderStats().Polls
	for i := uint64(1); i <= 3; i++ {
		e.tr.groups.NudgeReminders()
		for e.tr.groups.ReminderStats().Polls < p+i {
			if ctx.Err() != nil {
				e.t.Fatal("settle: the reminder poller did not poll")
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestFollowupsSentUntilAnswerAtMostMax(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createPolicy(3, group.PolicyInput{Followup: &group.FollowupInput{After: "1m", Max: 2}})
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	n := nums(3)
	e.reply(n[1], "yes", "r1")
	e.waitGroup(id, "reply", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		return slices.ContainsFunc(rows, func(d store.DeliveryRow) bool { return d.Ack == crewcast.AckYes })
	})
	reminders := countText("Reminder: Crew call 7am")
	e.clk.Advance(time.Minute)
	e.waitSends("first follow-ups", func(s []crewcast.SendRequest) bool { return reminders(s) == 2 })
	e.settle()
	e.clk.Advance(time.Minute)
	e.waitSends("second follow-ups", func(s []crewcast.SendRequest) bool { return reminders(s) == 4 })
	e.settle()
	for range 3 {
		e.clk.Advance(time.Minute)
		e.settle()
	}
	sent := e.prov.sent()
	if reminders(sent) != 4 {
		t.Fatalf("%d follow-ups, want 4", reminders(sent))
	}
	per := e.prov.sentTo()
	if per[n[0]] != 3 || per[n[1]] != 1 || per[n[2]] != 3 {
		t.Fatalf("sends per person %v", per)
	}
	keys := map[string]bool{}
	for _, s := range sent {
		if keys[s.IdempotencyKey] {
			t.Fatalf("claim key %s used twice", s.IdempotencyKey)
		}
		keys[s.IdempotencyKey] = true
	}
	if !keys[group.ClaimKey(id, "f0-1")] || !keys[group.ClaimKey(id, "f2-2")] {
		t.Fatalf("claim keys %v do not name the follow-ups", keys)
	}
	types := e.journalTypes(id)
	if types[group.TypeFollowupClaimed] < 2 || types[group.TypeFollowupOutcomes] != 4 {
		t.Fatalf("journal %v", types)
	}
}

// TestAnswerWhileFollowupWaitsStopsTheCall: recipient 1's follow-up is
// claimed and waits behind recipient 0's (one worker, held by the
// provider); recipient 1 answers; the follow-up must not be sent.
func TestAnswerWhileFollowupWaitsStopsTheCall(t *testing.T) {
	hold := make(chan struct{})
	e := newEnv(t, func(c *Config) { c.SendWorkers = 1 })
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if strings.HasPrefix(req.Text, "Reminder") && req.To[0] == nums(2)[0] {
			<-hold
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	id := e.createPolicy(2, group.PolicyInput{Followup: &group.FollowupInput{After: "1m", Max: 1}})
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(time.Minute)
	// Both follow-ups claimed; recipient 0's call holds the only worker.
	e.waitSends("first follow-up in flight", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 1 })
	e.reply(nums(2)[1], "on my way", "r1")
	e.waitGroup(id, "answer recorded", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		return slices.ContainsFunc(rows, func(d store.DeliveryRow) bool { return d.LastReply == "on my way" })
	})
	close(hold)
	e.settle()
	if got := e.prov.sentTo()[nums(2)[1]]; got != 1 {
		t.Fatalf("recipient who answered got %d messages, want 1 (no follow-up)", got)
	}
	var stopped bool
	_ = e.st.Load(context.Background(), id, 0, func(ev actor.Event) error {
		if ev.Type == group.TypeFollowupOutcomes && strings.Contains(string(ev.Data), `"result":"stopped"`) {
			stopped = true
		}
		return nil
	})
	if !stopped {
		t.Fatal("no stopped follow-up in the journal")
	}
}

func TestFollowupSkipsNumberSuppressedAfterTheFirstSend(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createPolicy(2, group.PolicyInput{Followup: &group.FollowupInput{After: "1m", Max: 1}})
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	if err := e.tr.AddSuppression(context.Background(), store.Suppression{Number: nums(2)[0], Reason: "manual", CreatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute)
	e.waitSends("follow-up", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 1 })
	e.settle()
	if per := e.prov.sentTo(); per[nums(2)[0]] != 1 || per[nums(2)[1]] != 2 {
		t.Fatalf("sends %v", per)
	}
	if e.journalTypes(id)[group.TypeFollowupsStopped] != 1 {
		t.Fatalf("journal %v", e.journalTypes(id))
	}
}

func TestSendAtHoldsUntilThenCancelSendsNothing(t *testing.T) {
	e := newEnv(t, nil)
	at := e.clk.Now().Add(time.Hour).Format(time.RFC3339)
	id := e.createPolicy(2, group.PolicyInput{SendAt: at})
	id2 := e.createPolicy(2, group.PolicyInput{SendAt: at})
	e.waitGroup(id, "scheduled", allStatus(crewcast.StatusScheduled))
	if err := e.tr.Cancel(context.Background(), id2, "op"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(59 * time.Minute)
	e.settle()
	if len(e.prov.sent()) != 0 {
		t.Fatal("sent before send_at")
	}
	e.clk.Advance(time.Minute)
	e.waitGroup(id, "sent at send_at", allStatus(crewcast.StatusSent))
	e.settle()
	if len(e.prov.sent()) != 2 {
		t.Fatalf("%d sends, want 2 (the canceled group sends nothing)", len(e.prov.sent()))
	}
	e.waitGroup(id2, "canceled", allStatus(crewcast.StatusCanceled))
}

func TestQuietHoursHoldRecipientsAsScheduled(t *testing.T) {
	// 12:00 UTC is 07:00 in New York: quiet until 07:30 local.
	e := newEnv(t, func(c *Config) {
		c.PolicyDefaults = group.PolicyDefaults{Quiet: &group.QuietHours{Start: 21 * 60, End: 7*60 + 30}, Timezone: "America/New_York"}
	})
	id := e.createPolicy(2, group.PolicyInput{})
	e.waitGroup(id, "held", allStatus(crewcast.StatusScheduled))
	idc := e.createPolicy(1, group.PolicyInput{Priority: group.PriorityCritical})
	e.waitGroup(idc, "critical sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(30 * time.Minute)
	e.waitGroup(id, "sent after quiet hours", allStatus(crewcast.StatusSent))
	if e.journalTypes(id)[group.TypeHeld] != 1 {
		t.Fatalf("journal %v", e.journalTypes(id))
	}
}

func TestEscalationOnceToNumbers(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createPolicy(2, group.PolicyInput{Escalate: &group.EscalateInput{After: "30m", To: []string{"+15550109999"}, Crews: []string{"Supervisors"}}})
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	e.reply(nums(2)[0], "yes", "r1")
	e.waitGroup(id, "the answer", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		return slices.ContainsFunc(rows, func(d store.DeliveryRow) bool { return d.Ack == crewcast.AckYes })
	})
	e.clk.Advance(30 * time.Minute)
	s := e.waitSends("escalation", func(s []crewcast.SendRequest) bool { return e.prov.sentTo()["+15550109999"] == 1 })
	e.settle()
	e.clk.Advance(time.Hour)
	e.settle()
	if e.prov.sentTo()["+15550109999"] != 1 {
		t.Fatal("escalated twice")
	}
	var text string
	for _, r := range s {
		if r.To[0] == "+15550109999" {
			text = r.Text
		}
	}
	if !strings.Contains(text, nums(2)[1]) || strings.Contains(text, nums(2)[0]) || !strings.Contains(text, "1 of 2 answered") {
		t.Fatalf("escalation text %q", text)
	}
	if types := e.journalTypes(id); types[group.TypeEscalated] != 1 || types[group.TypeEscalationResult] != 1 {
		t.Fatalf("journal %v", types)
	}
}

func TestNudgeAndRetryAllFailed(t *testing.T) {
	e := newEnv(t, nil)
	var failOnce atomic.Bool
	failOnce.Store(true)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if req.To[0] == nums(3)[2] && failOnce.CompareAndSwap(true, false) {
			return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", HTTPStatus: 200, Code: "30003", Class: crewcast.ClassCarrier}
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	id := e.createPolicy(3, group.PolicyInput{Followup: &group.FollowupInput{After: "1h", Max: 1}})
	e.waitGroup(id, "sent or failed", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		n := 0
		for _, d := range rows {
			if d.Status == crewcast.StatusSent || d.Status == crewcast.StatusFailed {
				n++
			}
		}
		return n == 3
	})
	ctx := context.Background()
	if err := e.tr.Nudge(ctx, id, "key_ops"); err != nil {
		t.Fatal(err)
	}
	e.waitSends("nudged follow-ups", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 2 })
	e.settle()
	if err := e.tr.Nudge(ctx, id, "key_ops"); !errors.Is(err, group.ErrState) {
		t.Fatalf("second nudge past max: %v", err)
	}
	retried, skipped, err := e.tr.RetryFailed(ctx, id, "key_ops")
	if err != nil || retried != 1 || skipped != 0 {
		t.Fatalf("retry failed: %d %d %v", retried, skipped, err)
	}
	e.waitSends("retried send", func(s []crewcast.SendRequest) bool { return e.prov.sentTo()[nums(3)[2]] == 2 })
	e.settle()
	if got := countText("Reminder")(e.prov.sent()); got != 2 {
		t.Fatalf("%d follow-ups after the nudge, want 2", got)
	}
	if _, _, err := e.tr.RetryFailed(ctx, "nope", "key_ops"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing group: %v", err)
	}
	types := e.journalTypes(id)
	if types[group.TypeNudged] != 1 || types[group.TypeRetry] != 1 {
		t.Fatalf("journal %v", types)
	}
}

// TestCrashedFollowupIsUnconfirmedNeverResent: the process dies while a
// follow-up's provider call is in flight, with every first message
// delivered (so no check reminder would wake the group). A second process
// on the same database wakes the group, records the follow-up as
// unconfirmed (spent), never sends it again, and sends the next one.
func TestCrashedFollowupIsUnconfirmedNeverResent(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	e := newEnv(t, nil)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if strings.HasPrefix(req.Text, "Reminder") {
			<-block
			return crewcast.SendResult{}, errors.New("process gone")
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	id := e.createPolicy(1, group.PolicyInput{Followup: &group.FollowupInput{After: "1m", Max: 2}})
	_, rows := e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{statusEvent("d1", rows[0], crewcast.StatusDelivered)}); err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "delivered", allStatus(crewcast.StatusDelivered))
	e.clk.Advance(time.Minute)
	e.waitSends("follow-up in flight", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 1 })

	prov2 := &fakeProvider{}
	st2, _ := e.secondProcess(Config{Provider: prov2})
	e.clk.Advance(time.Minute) // the in-flight wake-up falls due
	deadline := time.Now().Add(10 * time.Second)
	for {
		var outcome string
		_ = st2.Load(context.Background(), id, 0, func(ev actor.Event) error {
			if ev.Type == group.TypeFollowupOutcomes {
				outcome = string(ev.Data)
			}
			return nil
		})
		if strings.Contains(outcome, `"result":"uncertain"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the crashed follow-up was not recovered: %q", outcome)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The next follow-up (the second) goes out from the new process: f0-1
	// is never sent again.
	e.clk.Advance(time.Minute)
	deadline = time.Now().Add(10 * time.Second)
	for len(prov2.sent()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	sent := prov2.sent()
	if len(sent) != 1 || sent[0].IdempotencyKey != group.ClaimKey(id, "f0-2") {
		t.Fatalf("the new process sent %+v; want only follow-up 2", sent)
	}
}
