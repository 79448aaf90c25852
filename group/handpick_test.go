package group

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A dispatcher releases a selected person: the earliest standby takes the
// place, and the released person's yes does not bring them back; selected
// by hand again they count again. Someone who did not say yes cannot be
// selected by hand.
func TestReleaseAndSelectByHand(t *testing.T) {
	h := newCallout(t, 4, 4, time.Minute, 2)
	h.wave(t0)
	h.answer(0, "1", t0.Add(time.Second), t0.Add(2*time.Second))
	h.answer(1, "1", t0.Add(2*time.Second), t0.Add(3*time.Second))
	h.answer(2, "1", t0.Add(3*time.Second), t0.Add(4*time.Second))
	if sel, sb := h.flags(); !slices.Equal(sel, []int{0, 1}) || !slices.Equal(sb, []int{2}) {
		t.Fatalf("selected %v standby %v", sel, sb)
	}
	n := h.g.Recipients
	if _, err := h.g.SelectByHand(n[3].Number, t0, "ana"); !errors.Is(err, ErrState) {
		t.Fatalf("selecting someone who did not answer yes: %v", err)
	}
	rel, err := h.g.ReleaseByHand(n[0].Number, t0.Add(5*time.Second), "ana")
	if err != nil || rel.By != "ana" {
		t.Fatalf("release: %+v %v", rel, err)
	}
	h.apply(rel)
	h.selectAt(t0.Add(6 * time.Second))
	if sel, sb := h.flags(); !slices.Equal(sel, []int{1, 2}) || len(sb) != 0 {
		t.Fatalf("after the release: selected %v standby %v", sel, sb)
	}
	sel, err := h.g.SelectByHand(n[0].Number, t0.Add(7*time.Second), "ana")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(sel)
	h.selectAt(t0.Add(8 * time.Second))
	if sel, _ := h.flags(); !slices.Equal(sel, []int{0, 1, 2}) {
		t.Fatalf("after selecting by hand: selected %v (beyond count is the dispatcher's call)", sel)
	}
	if _, err := h.g.ReleaseByHand(n[3].Number, t0, "ana"); !errors.Is(err, ErrState) {
		t.Fatalf("releasing someone neither selected nor standby: %v", err)
	}
}

// The next wave started by hand goes before every, and not once the quota
// is met.
func TestWaveNowByHand(t *testing.T) {
	h := newCallout(t, 6, 2, time.Hour, 1)
	h.wave(t0)
	w, err := h.g.WaveNow(t0.Add(time.Second), "ana")
	if err != nil || w.Wave != 2 || !slices.Equal(w.Indices, []int{2, 3}) || w.By != "ana" {
		t.Fatalf("wave now: %+v %v", w, err)
	}
	h.apply(w)
	h.answer(2, "1", t0.Add(2*time.Second), t0.Add(3*time.Second))
	if _, err := h.g.WaveNow(t0.Add(4*time.Second), "ana"); !errors.Is(err, ErrState) {
		t.Fatalf("a wave after the fill: %v", err)
	}
}
