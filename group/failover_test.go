package group

import (
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// TestFailoverReconcileFindsSentAndNeverResends: after a failover the
// recipients still waiting are the candidates; one the provider's record
// shows becomes sent with its message id, one it does not show stays
// claimable (it certainly did not go out), and without a record every
// candidate becomes unconfirmed. The event replays, and is needed once.
func TestFailoverReconcileFindsSentAndNeverResends(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 4, nil)
	c := h.claim(t0, 1) // recipient 0 claimed and sent, as the new primary knows
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m0"}, nil, t0)
	detected := t0.Add(time.Minute)
	if !h.g.NeedsReconcile("sys/00000002", detected) {
		t.Fatal("a group created before the failover needs reconciling")
	}
	cands := h.g.FailoverCandidates(detected)
	if len(cands) != 3 || cands[0] != 1 {
		t.Fatalf("candidates %v, want 1 2 3", cands)
	}
	record := []crewcast.SentMessage{
		{MessageID: "m0", To: h.g.Recipients[0].Number, CreatedAt: t0},
		{MessageID: "m1", To: h.g.Recipients[1].Number, CreatedAt: t0.Add(time.Second)},                        // no text: Telnyx MDRs
		{MessageID: "m2", To: h.g.Recipients[2].Number, Text: "Crew call 7am", CreatedAt: t0.Add(time.Second)}, // Twilio-like
		{MessageID: "old", To: h.g.Recipients[3].Number, CreatedAt: t0.Add(-time.Hour)},                        // before the group
	}
	ev := h.g.ReconcileFailover("sys/00000002", cands, record, true, detected)
	h.apply(ev)
	if h.status(1) != crewcast.StatusSent || h.g.Recipients[1].MessageID != "m1" || h.status(2) != crewcast.StatusSent {
		t.Fatalf("found sends: %s %s", h.status(1), h.status(2))
	}
	if h.status(3) != crewcast.StatusPending || !h.g.HasClaimable(detected) {
		t.Fatalf("recipient 3 (not in the record): %s, claimable %v", h.status(3), h.g.HasClaimable(detected))
	}
	if h.g.Recipients[1].Attempts != 1 {
		t.Errorf("attempts %d: the lost claim spent one", h.g.Recipients[1].Attempts)
	}
	if h.g.NeedsReconcile("sys/00000002", detected) {
		t.Error("reconciled twice")
	}
	h.replay()

	// Without the provider's record nothing can be known.
	h2 := newHarness(t, crewcast.ModeIndividual, 2, nil)
	ev2 := h2.g.ReconcileFailover("sys/00000002", h2.g.FailoverCandidates(detected), nil, false, detected)
	h2.apply(ev2)
	if h2.status(0) != crewcast.StatusUnconfirmed || h2.status(1) != crewcast.StatusUnconfirmed || h2.g.HasClaimable(detected.Add(time.Hour)) {
		t.Fatalf("without a record: %s %s", h2.status(0), h2.status(1))
	}
	// A group created after the failover has nothing to reconcile.
	if h2.g.NeedsReconcile("sys/00000002", t0.Add(-time.Second)) {
		t.Error("a group created on the new primary reconciles")
	}
}
