package group

import (
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// TestCountsCarrierBlocked (issue 32 item 4): a failure the carrier
// explained (spam filter, unregistered sender, unreachable, landline) is
// counted as carrier_blocked beside failed, so a board reading only the
// group's counts (the groups list) can tell "blocked by the carrier" from a
// plain failure. failed still counts every failure (the contract).
func TestCountsCarrierBlocked(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 4, nil)
	c := h.claim(t0, 0)
	for i, s := range c.Sends {
		h.outcome(s, crewcast.SendResult{MessageID: "m" + string(rune('0'+i))}, nil, t0)
	}
	fail := func(i int, code string, class crewcast.ErrorClass) {
		r := h.g.Recipients[i]
		o, ok := h.g.Observe(crewcast.Event{EventID: "f" + code, Kind: crewcast.KindStatus, MessageID: r.MessageID, To: r.Number,
			Status: crewcast.StatusFailed, ErrorCode: code, ErrorClass: class}, t0.Add(time.Second))
		if !ok {
			t.Fatalf("observe %s", code)
		}
		h.apply(o)
	}
	fail(0, "30007", crewcast.ClassCarrier) // filtered as spam
	fail(1, "30003", crewcast.ClassCarrier) // unreachable
	fail(2, "40008", crewcast.ClassCarrier) // undeliverable: no carrier verdict
	counts := h.g.Counts()
	if counts["failed"] != 3 || counts[CountCarrierBlocked] != 2 {
		t.Fatalf("failed %d carrier_blocked %d, want 3 and 2 (%v)", counts["failed"], counts[CountCarrierBlocked], counts)
	}
	if !containsKey(CountKeys, CountCarrierBlocked) {
		t.Fatalf("CountKeys lacks %s", CountCarrierBlocked)
	}
	h.replay()
}

// TestAsyncSenderFailurePausesGroup: a delivery report that blames the
// sender (Twilio 30034, an unregistered 10DLC number; Telnyx 40010) says
// every message from that number will fail: the group pauses like a
// synchronous sender refusal, so nobody else is texted through it, and the
// failed recipient can be retried once the group is resumed.
func TestAsyncSenderFailurePausesGroup(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 3, nil)
	c := h.claim(t0, 1)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m0"}, nil, t0)
	r := h.g.Recipients[c.Sends[0].Indices[0]]
	o, _ := h.g.Observe(crewcast.Event{EventID: "f", Kind: crewcast.KindStatus, MessageID: "m0", To: r.Number,
		Status: crewcast.StatusFailed, ErrorCode: "30034", ErrorClass: crewcast.ClassSender}, t0.Add(time.Second))
	h.apply(o)
	if h.g.Status != crewcast.GroupPaused || h.g.PauseReason == "" {
		t.Fatalf("status %s reason %q; want paused with a reason", h.g.Status, h.g.PauseReason)
	}
	if _, ok := h.g.Claim(t0.Add(2*time.Second), 0); ok {
		t.Fatal("claimed while paused")
	}
	if _, err := h.g.Retry(r.Number, t0.Add(2*time.Second), "op"); err == nil {
		t.Fatal("retry allowed while the group is paused")
	}
	rs, err := h.g.Resume(t0.Add(3*time.Second), "op")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(rs)
	rr, err := h.g.Retry(r.Number, t0.Add(4*time.Second), "op")
	if err != nil {
		t.Fatalf("retry after resume: %v", err)
	}
	h.apply(rr)
	if st := h.status(r.Index); st != crewcast.StatusPending {
		t.Fatalf("after retry: %s", st)
	}
	h.replay()
}

func containsKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}
