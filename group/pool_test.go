package group

import (
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

var testPool = []PoolSender{
	{Number: "+15550200001", Provider: "telnyx"},
	{Number: "+15550200002", Provider: "telnyx"},
	{Number: "+15550200003", Provider: "twilio"},
	{Number: "+15550200004", Provider: "twilio"},
}

func allHealthy(string) bool { return true }

func newPoolHarness(t *testing.T, n int) *harness {
	t.Helper()
	c, errs := Plan("g1", Request{From: testPool[0].Number, To: numbers(n), Text: "Crew call 7am"}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	people := make([]string, n)
	for i, r := range c.Recipients {
		people[i] = r.Number
	}
	c.Pool = "dispatch"
	c.Senders = AssignSenders(people, testPool, nil, nil, allHealthy)
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	return h
}

func TestAssignSendersSpreadsStickyAndFree(t *testing.T) {
	people := numbers(8)
	got := AssignSenders(people, testPool, nil, nil, allHealthy)
	load := map[string]int{}
	for _, s := range got {
		load[s]++
	}
	for _, s := range testPool {
		if load[s.Number] != 2 {
			t.Fatalf("8 people over 4 numbers: want 2 each, got %v", load)
		}
	}
	// A sticky number is kept when it is free.
	sticky := map[string]string{people[0]: testPool[3].Number}
	if got := AssignSenders(people[:1], testPool, sticky, nil, allHealthy); got[0] != testPool[3].Number {
		t.Fatalf("sticky number not kept: %v", got)
	}
	// An open group from the sticky number: another free number.
	busy := map[string]map[string]bool{people[0]: {testPool[3].Number: true}}
	if got := AssignSenders(people[:1], testPool, sticky, busy, allHealthy); got[0] == testPool[3].Number {
		t.Fatalf("person with an open group from their sticky number got it again: %v", got)
	}
	// Every number busy: the sticky one (reply codes tell them apart).
	all := map[string]map[string]bool{people[0]: {}}
	for _, s := range testPool {
		all[people[0]][s.Number] = true
	}
	if got := AssignSenders(people[:1], testPool, sticky, all, allHealthy); got[0] != testPool[3].Number {
		t.Fatalf("no free number: want the sticky one, got %v", got)
	}
	// An unhealthy sticky number is not used; nor are unhealthy numbers.
	telnyxDown := func(n string) bool { return n == testPool[2].Number || n == testPool[3].Number }
	sticky = map[string]string{people[0]: testPool[0].Number}
	for _, s := range AssignSenders(people, testPool, sticky, nil, telnyxDown) {
		if !telnyxDown(s) {
			t.Fatalf("assigned a number whose provider is down: %s", s)
		}
	}
	// A sticky number that left the pool is ignored.
	sticky = map[string]string{people[0]: "+15559999999"}
	if got := AssignSenders(people[:1], testPool, sticky, nil, allHealthy); got[0] == "+15559999999" {
		t.Fatal("a number outside the pool was assigned")
	}
}

func TestFailoverMovesOnlyCertainlyUnsentRecipients(t *testing.T) {
	h := newPoolHarness(t, 8)
	g := h.g
	cl := h.claim(t0, 0)
	byIdx := map[int]Send{}
	for _, s := range cl.Sends {
		byIdx[s.Indices[0]] = s
	}
	refused := &crewcast.SendError{Provider: "telnyx", Class: crewcast.ClassNotSent, Err: errors.New("connection refused")}
	telnyx := map[int]bool{}
	for i := range g.Recipients {
		if g.FromFor(i) == testPool[0].Number || g.FromFor(i) == testPool[1].Number {
			telnyx[i] = true
		}
	}
	if len(telnyx) != 4 {
		t.Fatalf("want 4 recipients on telnyx numbers, got %d", len(telnyx))
	}
	// Of the Telnyx recipients: two refused (certainly not sent), one
	// timed out (ambiguous), one still in flight.
	var refusedIdx, ambiguous, inflight []int
	for i := range g.Recipients {
		if !telnyx[i] {
			h.outcome(byIdx[i], crewcast.SendResult{MessageID: "m" + byIdx[i].ID}, nil, t0.Add(time.Second))
			continue
		}
		switch {
		case len(refusedIdx) < 2:
			h.outcome(byIdx[i], crewcast.SendResult{}, refused, t0.Add(time.Second))
			refusedIdx = append(refusedIdx, i)
		case len(ambiguous) == 0:
			h.outcome(byIdx[i], crewcast.SendResult{}, &crewcast.SendError{Provider: "telnyx", Class: crewcast.ClassUncertain, Err: errors.New("timeout")}, t0.Add(time.Second))
			ambiguous = append(ambiguous, i)
		default:
			inflight = append(inflight, i)
		}
	}
	for _, i := range refusedIdx {
		if r := g.Recipients[i]; r.Status != crewcast.StatusPending || !r.RetryAt.After(t0.Add(time.Minute)) {
			t.Fatalf("refused recipient %d: %s retry %s", i, r.Status, r.RetryAt)
		}
	}
	twilioOnly := func(n string) bool { return n == testPool[2].Number || n == testPool[3].Number }
	now := t0.Add(2 * time.Second)
	ch, ok := g.Failover(now, testPool, twilioOnly, "telnyx down")
	if !ok || len(ch.Changes) != len(refusedIdx) {
		t.Fatalf("failover: want the %d refused recipients moved, got %+v", len(refusedIdx), ch)
	}
	h.apply(ch)
	for _, i := range refusedIdx {
		if !twilioOnly(g.FromFor(i)) || !g.claimable(g.Recipients[i], now) {
			t.Fatalf("recipient %d not moved to a twilio number and claimable now: %s", i, g.FromFor(i))
		}
	}
	for _, i := range append(ambiguous, inflight...) {
		if twilioOnly(g.FromFor(i)) {
			t.Fatalf("recipient %d (%s) was moved: an ambiguous or in-flight attempt must never fail over", i, g.Recipients[i].Status)
		}
	}
	if g.Recipients[ambiguous[0]].Status != crewcast.StatusUnconfirmed {
		t.Fatalf("ambiguous attempt: %s", g.Recipients[ambiguous[0]].Status)
	}
	// Nowhere healthy to go: nobody moves.
	if _, ok := g.Failover(now, testPool, func(string) bool { return false }, "all down"); ok {
		t.Fatal("failover with no healthy number moved someone")
	}
	h.replay()
}

func TestClaimWhereKeepsSendIDsInSequence(t *testing.T) {
	h := newPoolHarness(t, 6)
	g := h.g
	only := g.FromFor(1)
	cl, ok := g.ClaimWhere(t0, 0, func(i int) bool { return g.FromFor(i) == only })
	if !ok {
		t.Fatal("nothing claimed")
	}
	h.apply(cl)
	cl2, ok := g.ClaimWhere(t0, 0, func(int) bool { return true })
	if !ok {
		t.Fatal("nothing claimed the second time")
	}
	h.apply(cl2)
	seen := map[string]bool{}
	for _, c := range []Claimed{cl, cl2} {
		for _, s := range c.Sends {
			if seen[s.ID] {
				t.Fatalf("send id %s claimed twice", s.ID)
			}
			seen[s.ID] = true
		}
	}
	if len(seen) != 6 {
		t.Fatalf("want 6 sends, got %d", len(seen))
	}
	h.replay()
}
