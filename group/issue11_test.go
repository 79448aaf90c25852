package group

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// expireAll sends every recipient, accepts it and lets its deadline pass,
// so each ends "unknown".
func expireAll(h *harness) {
	h.t.Helper()
	c := h.claim(t0, 0)
	for i, s := range c.Sends {
		h.outcome(s, crewcast.SendResult{MessageID: "m" + string(rune('a'+i))}, nil, t0)
	}
	at := t0.Add(25 * time.Hour)
	for i := range h.g.Recipients {
		h.apply(h.g.CheckResult(i, crewcast.MessageStatus{}, nil, at))
	}
	for i := range h.g.Recipients {
		if h.status(i) != crewcast.StatusUnknown {
			h.t.Fatalf("recipient %d is %s, want unknown", i, h.status(i))
		}
	}
}

// Issue 11: unknown recipients were a dead end ("only unconfirmed
// recipients can be resolved").
func TestResolveUnknownRecipients(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 3, nil)
	expireAll(h)
	n := func(i int) string { return h.g.Recipients[i].Number }

	res, err := h.g.Resolve(n(0), ResolveDelivered, t0.Add(26*time.Hour), "key_1")
	if err != nil {
		t.Fatalf("resolve delivered of an unknown recipient: %v", err)
	}
	if res.From != crewcast.StatusUnknown || res.By != "key_1" {
		t.Fatalf("resolved event %+v: want the audit to say from unknown, by key_1", res)
	}
	h.apply(res)
	if h.status(0) != crewcast.StatusDelivered || h.g.Recipients[0].DeliveredAt.IsZero() {
		t.Fatalf("after delivered: %s", h.status(0))
	}

	res, err = h.g.Resolve(n(1), ResolveNotDelivered, t0.Add(26*time.Hour), "key_1")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(res)
	if h.status(1) != crewcast.StatusPending || h.g.Status != crewcast.GroupSending {
		t.Fatalf("after not_delivered: recipient %s, group %s; want one more attempt", h.status(1), h.g.Status)
	}
	c := h.claim(t0.Add(26*time.Hour), 0)
	if len(c.Sends) != 1 || c.Sends[0].Indices[0] != 1 || h.g.Recipients[1].Attempts != 2 {
		t.Fatalf("the new attempt: %+v, attempts %d", c, h.g.Recipients[1].Attempts)
	}
	// A resolved recipient cannot be resolved again.
	if _, err := h.g.Resolve(n(0), ResolveNotDelivered, t0, "op"); !errors.Is(err, ErrState) {
		t.Fatalf("resolve a delivered recipient: %v", err)
	}
	h.replay()
}

func TestResolveMessageNamesBothResolvableStatuses(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	_, err := h.g.Resolve(h.g.Recipients[0].Number, ResolveDelivered, t0, "op")
	if !errors.Is(err, ErrState) || !strings.Contains(err.Error(), "unconfirmed or unknown") {
		t.Fatalf("resolve a pending recipient: %v", err)
	}
}

// Issue 11: one "acknowledged" count added YES and NO together.
func TestCountsSplitYesNoAndNoReply(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 4, nil)
	c := h.claim(t0, 0)
	for _, s := range c.Sends {
		h.outcome(s, crewcast.SendResult{MessageID: "m" + s.ID}, nil, t0)
	}
	reply := func(id string, i int, text string) {
		r, ok := h.g.Reply(crewcast.Event{EventID: id, Kind: crewcast.KindInbound, From: h.g.Recipients[i].Number, To: sender, Text: text}, t0)
		if !ok {
			t.Fatalf("reply %s not matched", id)
		}
		h.apply(r)
	}
	reply("r1", 0, "YES")
	reply("r2", 1, "no")
	reply("r3", 2, "running late")
	want := map[string]int{"replied": 3, "acknowledged": 2, "ack_yes": 1, "ack_no": 1, "no_reply": 1}
	check := func(when string) {
		got := h.g.Counts()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: counts[%q] = %d, want %d (all %v)", when, k, got[k], v, got)
			}
		}
	}
	check("live")
	// A later answer replaces the earlier one.
	reply("r4", 0, "N")
	want["ack_yes"], want["ack_no"] = 0, 2
	check("after a change of mind")
	// From scratch (a snapshot or replay) gives the same.
	g := &Group{}
	for _, e := range h.events {
		if err := g.Apply(e); err != nil {
			t.Fatal(err)
		}
	}
	h.g = g
	check("replayed")
}
