package group

import (
	"slices"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

var calloutOptions = []Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Can't make it", Ack: crewcast.AckNo}}

// newCallout is a group of n with waves of size every `every`, an exact
// quota of count for option "1", and a confirmed_text.
func newCallout(t *testing.T, n, size int, every time.Duration, count int) *harness {
	t.Helper()
	q := &Quorum{Response: "1", Count: count, Exact: true}
	c, errs := Plan("g1", Request{From: sender, To: numbers(n), Text: "Callout", Responses: calloutOptions, Quorum: q}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	c.Policy = &Policy{Waves: &Waves{Size: size, Every: every}, ConfirmedText: "You're on"}
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	return h
}

// wave sends the wave due at now and has the provider accept every send.
func (h *harness) wave(now time.Time) WaveSent {
	h.t.Helper()
	w, ok := h.g.NextWave(now)
	if !ok {
		h.t.Fatalf("no wave due at %s", now)
	}
	h.apply(w)
	c := h.claim(now, 0)
	for _, s := range c.Sends {
		h.outcome(s, crewcast.SendResult{MessageID: "m-" + s.ID}, nil, now)
	}
	return w
}

// answer applies recipient i's reply of option key, received by the
// provider at sent, then runs Select at now.
func (h *harness) answer(i int, key string, sent, now time.Time) {
	h.t.Helper()
	h.apply(Replied{At: now, EventID: "in-" + key + "-" + sent.Format(time.RFC3339Nano) + "-" + numbers(i + 1)[i], Index: i,
		Text: key, Response: key, SentAt: sent})
	h.selectAt(now)
}

func (h *harness) selectAt(now time.Time) {
	h.t.Helper()
	evs, _ := h.g.Select(now, 0)
	for _, e := range evs {
		h.apply(e)
	}
}

func (h *harness) flags() (selected, standby []int) {
	for i, r := range h.g.Recipients {
		if r.Selected {
			selected = append(selected, i)
		}
		if r.Standby {
			standby = append(standby, i)
		}
	}
	return selected, standby
}

func TestWavesTextInOrderOneWaveAtATime(t *testing.T) {
	h := newCallout(t, 10, 4, 5*time.Minute, 3)
	if h.g.HasClaimable(t0) {
		t.Fatal("a recipient is claimable before any wave")
	}
	w := h.wave(t0)
	if w.Wave != 1 || !slices.Equal(w.Indices, []int{0, 1, 2, 3}) {
		t.Fatalf("wave 1 = %+v, want recipients 0-3", w)
	}
	if _, ok := h.g.Claim(t0, 0); ok {
		t.Fatal("recipients outside wave 1 were claimable")
	}
	if _, ok := h.g.NextWave(t0.Add(4 * time.Minute)); ok {
		t.Fatal("wave 2 before every passed")
	}
	if got := h.g.NextWaveAt(); !got.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("NextWaveAt = %s, want t0+5m", got)
	}
	w = h.wave(t0.Add(5 * time.Minute))
	if w.Wave != 2 || !slices.Equal(w.Indices, []int{4, 5, 6, 7}) {
		t.Fatalf("wave 2 = %+v", w)
	}
	w = h.wave(t0.Add(10 * time.Minute))
	if !slices.Equal(w.Indices, []int{8, 9}) {
		t.Fatalf("wave 3 = %+v", w)
	}
	if _, ok := h.g.NextWave(t0.Add(time.Hour)); ok {
		t.Fatal("a wave with nobody left")
	}
	h.replay()
}

func TestNextWaveAtOnceWhenEveryoneTextedAnsweredOrFailed(t *testing.T) {
	h := newCallout(t, 8, 2, 5*time.Minute, 1)
	h.wave(t0)
	h.answer(0, "2", t0.Add(time.Second), t0.Add(time.Second))
	if _, ok := h.g.NextWave(t0.Add(2 * time.Second)); ok {
		t.Fatal("next wave while recipient 1 has not answered")
	}
	h.apply(Observed{At: t0.Add(3 * time.Second), Source: SourceWebhook, Index: 1, MessageID: "m-s2", Status: crewcast.StatusFailed,
		Class: crewcast.ClassRecipient})
	w, ok := h.g.NextWave(t0.Add(3 * time.Second))
	if !ok || !slices.Equal(w.Indices, []int{2, 3}) {
		t.Fatalf("no early wave after one NO and one definite failure: %+v %v", w, ok)
	}
}

func TestExactQuotaSelectsFirstCountThenStandbyAndNotNeeded(t *testing.T) {
	h := newCallout(t, 12, 4, 3*time.Second, 2)
	h.wave(t0)
	h.answer(2, "1", t0.Add(1*time.Second), t0.Add(1*time.Second))
	h.answer(0, "1", t0.Add(2*time.Second), t0.Add(2*time.Second))
	h.answer(1, "1", t0.Add(3*time.Second), t0.Add(3*time.Second))
	sel, sb := h.flags()
	if !slices.Equal(sel, []int{0, 2}) || !slices.Equal(sb, []int{1}) {
		t.Fatalf("selected %v standby %v, want [0 2] and [1]", sel, sb)
	}
	if !h.g.QuorumMet() {
		t.Fatal("quota filled but quorum not met")
	}
	for i := 4; i < 12; i++ {
		if h.status(i) != crewcast.StatusNotNeeded {
			t.Fatalf("untexted recipient %d is %s, want not_needed", i, h.status(i))
		}
	}
	if _, ok := h.g.NextWave(t0.Add(time.Hour)); ok {
		t.Fatal("a wave after the quota filled")
	}
	if n := h.g.Counts()[string(crewcast.StatusNotNeeded)]; n != 8 {
		t.Fatalf("counts not_needed = %d", n)
	}
	if n := h.g.Counts()[CountNoReply]; n != 1 {
		t.Fatalf("no_reply = %d, want 1 (recipient 3; the not_needed were never texted)", n)
	}
	h.replay()
}

func TestAutoRepliesClaimedOnceAndSpentWhenUncertain(t *testing.T) {
	h := newCallout(t, 4, 4, time.Minute, 1)
	h.wave(t0)
	h.answer(0, "1", t0.Add(time.Second), t0.Add(time.Second))
	h.answer(1, "1", t0.Add(2*time.Second), t0.Add(2*time.Second))
	now := t0.Add(3 * time.Second)
	c, ok := h.g.ClaimAutoReplies(now, 0)
	want := []AutoReplySend{{ID: "c0", Index: 0, Kind: AutoConfirmed}, {ID: "x1", Index: 1, Kind: AutoFilled}}
	if !ok || !slices.Equal(c.Sends, want) {
		t.Fatalf("auto-replies = %+v, want %+v", c.Sends, want)
	}
	h.apply(c)
	if c2, ok := h.g.ClaimAutoReplies(now, 0); ok {
		t.Fatalf("claimed again while in flight: %+v", c2)
	}
	// A crash: both are uncertain, spent, never claimed again.
	rec, ok := h.g.RecoverAutoReplies(now, nil)
	if !ok || len(rec.Outcomes) != 2 {
		t.Fatalf("recover = %+v", rec)
	}
	h.apply(rec)
	if c2, ok := h.g.ClaimAutoReplies(now.Add(time.Hour), 0); ok {
		t.Fatalf("an uncertain auto-reply was claimed again: %+v", c2)
	}
	if h.g.AutoReplyText(AutoFilled) != DefaultFilledText || h.g.AutoReplyText(AutoConfirmed) != "You're on" {
		t.Fatal("auto-reply texts")
	}
	h.replay()
}

func TestAutoReplyRetryAndOptOut(t *testing.T) {
	h := newCallout(t, 4, 4, time.Minute, 1)
	h.wave(t0)
	h.answer(0, "1", t0.Add(time.Second), t0.Add(time.Second))
	h.answer(1, "1", t0.Add(2*time.Second), t0.Add(2*time.Second))
	h.apply(Replied{At: t0.Add(3 * time.Second), EventID: "stop1", Index: 1, Text: "STOP", Keyword: KeywordStop})
	now := t0.Add(4 * time.Second)
	c, _ := h.g.ClaimAutoReplies(now, 0)
	if len(c.Sends) != 1 || c.Sends[0].ID != "c0" {
		t.Fatalf("an opted-out standby got an auto-reply: %+v", c.Sends)
	}
	h.apply(c)
	o := h.g.AutoReplyOutcome(c.Sends[0].Send(), crewcast.SendResult{}, sendErr(500, "x", crewcast.ClassNotSent), now)
	h.apply(AutoReplyOutcomes{At: now, Outcomes: []Outcome{o}})
	if _, ok := h.g.ClaimAutoReplies(now, 0); ok {
		t.Fatal("a retry was claimed before its backoff")
	}
	c, ok := h.g.ClaimAutoReplies(o.RetryAt, 0)
	if !ok || c.Sends[0].ID != "c0" {
		t.Fatalf("certainly-not-sent auto-reply not claimed again: %+v", c)
	}
	h.apply(c)
	h.apply(AutoReplyOutcomes{At: o.RetryAt, Outcomes: []Outcome{{SendID: "c0", Indices: []int{0}, Result: ResultAccepted}}})
	if _, ok := h.g.ClaimAutoReplies(o.RetryAt.Add(time.Hour), 0); ok {
		t.Fatal("a sent confirmation was claimed again")
	}
	h.replay()
}

func TestSelectedChangingAnswerIsReplacedByEarliestStandby(t *testing.T) {
	h := newCallout(t, 8, 4, time.Minute, 1)
	h.wave(t0)
	h.answer(0, "1", t0.Add(1*time.Second), t0.Add(1*time.Second))
	h.answer(2, "1", t0.Add(2*time.Second), t0.Add(2*time.Second))
	h.answer(1, "1", t0.Add(3*time.Second), t0.Add(3*time.Second))
	h.answer(0, "2", t0.Add(4*time.Second), t0.Add(4*time.Second))
	sel, sb := h.flags()
	if !slices.Equal(sel, []int{2}) || !slices.Equal(sb, []int{1}) {
		t.Fatalf("selected %v standby %v, want [2] [1]", sel, sb)
	}
	if !h.g.QuorumMet() {
		t.Fatal("quota should still be met")
	}
	h.replay()
}

func TestQuotaReopensWithoutStandbyAndWavesResume(t *testing.T) {
	h := newCallout(t, 8, 4, time.Minute, 1)
	h.wave(t0)
	h.answer(0, "1", t0.Add(time.Second), t0.Add(time.Second))
	if h.status(5) != crewcast.StatusNotNeeded {
		t.Fatalf("recipient 5 is %s", h.status(5))
	}
	h.answer(0, "2", t0.Add(2*time.Second), t0.Add(2*time.Second))
	if h.g.QuorumMet() {
		t.Fatal("quota still met after the only selected person said no")
	}
	if h.status(5) != crewcast.StatusPending {
		t.Fatalf("after re-opening recipient 5 is %s, want pending", h.status(5))
	}
	if _, ok := h.g.NextWave(t0.Add(30 * time.Second)); ok {
		t.Fatal("wave 2 before every although 1-3 have not answered")
	}
	w, ok := h.g.NextWave(t0.Add(time.Minute))
	if !ok || w.Wave != 2 || !slices.Equal(w.Indices, []int{4, 5, 6, 7}) {
		t.Fatalf("waves did not resume: %+v %v", w, ok)
	}
	h.replay()
}

func TestRacingAnswersSelectedInProviderOrder(t *testing.T) {
	h := newCallout(t, 6, 6, time.Minute, 2)
	h.wave(t0)
	same := t0.Add(10 * time.Second)
	// Webhooks arrive in reverse order of the provider's timestamps;
	// recipients 4 and 1 answered at the same instant.
	for _, a := range []struct {
		i    int
		sent time.Time
	}{{5, same.Add(time.Second)}, {4, same}, {1, same}, {3, same.Add(-time.Second)}} {
		h.apply(Replied{At: same.Add(time.Second), EventID: "in" + numbers(6)[a.i], Index: a.i, Text: "1", Response: "1", SentAt: a.sent})
		evs, wake := h.g.Select(same.Add(time.Second), 3*time.Second)
		if len(evs) != 0 || wake.IsZero() {
			t.Fatalf("selected before answers settled: %+v", evs)
		}
	}
	h.selectAt(same.Add(5 * time.Second))
	h.selectAt(same.Add(5 * time.Second)) // a second look changes nothing
	sel, sb := h.flags()
	if !slices.Equal(sel, []int{1, 3}) || !slices.Equal(sb, []int{4, 5}) {
		t.Fatalf("selected %v standby %v, want [1 3] (earliest, tie by roster order) and [4 5]", sel, sb)
	}
	h.replay()
}
