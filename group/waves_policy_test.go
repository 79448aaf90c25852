package group

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// withPolicy adds follow-ups (after 1m, max 1) and an escalation (after
// 3m) to a callout's frozen policy.
func withPolicy(h *harness) *harness {
	c := h.events[0].(Created)
	p := *c.Policy
	p.Followup = &Followup{After: time.Minute, Max: 1}
	p.Escalate = &Escalate{After: 3 * time.Minute, To: []string{"+15550109999"}}
	c.Policy = &p
	h.g, h.events = &Group{}, nil
	h.apply(c)
	return h
}

func followupIndices(c FollowupClaimed) []int {
	var out []int
	for _, s := range c.Sends {
		out = append(out, s.Index)
	}
	return out
}

func TestWavesFollowupsOnlyToTextedNonRespondersAndEscalationNamesThem(t *testing.T) {
	h := withPolicy(newCallout(t, 8, 4, 5*time.Minute, 2))
	h.wave(t0)
	h.answer(0, "1", t0.Add(time.Second), t0.Add(time.Second))
	c, _ := h.g.ClaimFollowups(t0.Add(time.Minute), 0)
	if got := followupIndices(c); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("follow-ups to %v, want [1 2 3] (wave 1 without an answer)", got)
	}
	e, ok := h.g.Escalate(t0.Add(3 * time.Minute))
	if !ok || e.Skipped != "" {
		t.Fatalf("escalation with the quota open: %+v %v", e, ok)
	}
	for i := 4; i < 8; i++ {
		if strings.Contains(e.Text, h.g.Recipients[i].Number) {
			t.Fatalf("escalation names recipient %d, never texted: %q", i, e.Text)
		}
	}
	if !strings.Contains(e.Text, h.g.Recipients[1].Number) || !strings.Contains(e.Text, "1 of 4") {
		t.Fatalf("escalation text %q should name recipient 1 and count 1 of 4 texted", e.Text)
	}
}

func TestWavesQuotaFilledStopsFollowupsAndEscalation(t *testing.T) {
	h := withPolicy(newCallout(t, 8, 4, 5*time.Minute, 1))
	h.wave(t0)
	h.answer(2, "1", t0.Add(time.Second), t0.Add(time.Second))
	if c, ok := h.g.ClaimFollowups(t0.Add(time.Minute), 0); ok {
		t.Fatalf("follow-ups after the quota filled: %+v", c)
	}
	if e, _ := h.g.Escalate(t0.Add(3 * time.Minute)); e.Skipped != "quorum met" {
		t.Fatalf("escalation after fill: %+v", e)
	}
}

func TestQuietHoursHoldOnlyRecipientsOfSentWaves(t *testing.T) {
	h := newCallout(t, 6, 2, 5*time.Minute, 1)
	c := h.events[0].(Created)
	c.Policy.Quiet = &QuietHours{Start: 11 * 60, End: 13 * 60} // t0 is 12:00 UTC
	c.Policy.Timezone = "UTC"
	h.g, h.events = &Group{}, nil
	h.apply(c)
	w, _ := h.g.NextWave(t0)
	h.apply(w)
	held, ok := h.g.Hold(t0)
	if !ok {
		t.Fatal("nothing held in quiet hours")
	}
	for _, r := range held.Recipients {
		if r.Index > 1 {
			t.Fatalf("recipient %d held although no wave reached it: %+v", r.Index, held)
		}
	}
}

func TestAutoReplyHaltedPausesGroup(t *testing.T) {
	h := newCallout(t, 2, 2, time.Minute, 1)
	h.wave(t0)
	h.answer(0, "1", t0.Add(time.Second), t0.Add(time.Second))
	now := t0.Add(2 * time.Second)
	c, _ := h.g.ClaimAutoReplies(now, 0)
	h.apply(c)
	o := h.g.AutoReplyOutcome(c.Sends[0].Send(), crewcast.SendResult{}, sendErr(403, "10002", crewcast.ClassSender), now)
	h.apply(AutoReplyOutcomes{At: now, Outcomes: []Outcome{o}})
	if h.g.Status != crewcast.GroupPaused {
		t.Fatalf("a sender failure on an auto-reply left the group %s", h.g.Status)
	}
	if _, ok := h.g.ClaimAutoReplies(now, 0); ok {
		t.Fatal("auto-reply claimed again while paused")
	}
	h.apply(Resumed{At: now.Add(time.Minute)})
	if _, ok := h.g.ClaimAutoReplies(now.Add(time.Minute), 0); !ok {
		t.Fatal("auto-reply not claimed after resume")
	}
	h.replay()
}
