package group

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
)

// TestPropertyExactQuotaWaves drives a callout with waves and an exact
// quota through random answers (yes, no, changes of mind, STOP), received
// by the provider in any order and at equal instants, random provider
// answers to auto-replies, crashes and time. After every step:
//   - nobody outside a sent wave has ever been claimed;
//   - no wave is sent while the quota is met;
//   - never more than count selected, and the selected all say yes;
//   - a standby person replacing a selected one is the earliest standby;
//   - an auto-reply (person, kind) is claimed again only after its claim
//     certainly did not reach the provider;
//
// and once every answer has settled, exactly min(count, yes) are selected;
// replaying the journal rebuilds the state.
func TestPropertyExactQuotaWaves(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(2, 12).Draw(rt, "n")
		size := rapid.IntRange(1, 4).Draw(rt, "size")
		count := rapid.IntRange(1, 3).Draw(rt, "count")
		settle := time.Duration(rapid.IntRange(0, 3).Draw(rt, "settle")) * time.Second
		h := newCallout(t, n, size, 30*time.Second, count)
		g := h.g
		apply := func(e Event) {
			checkBeforeApply(rt, g, e)
			if err := g.Apply(e); err != nil {
				rt.Fatalf("apply %s: %v", e.Type(), err)
			}
			h.events = append(h.events, e)
		}
		now := t0
		var inFlight []AutoReplySend
		mayHaveSent := map[string]bool{}
		evID := 0
		tick := func() {
			if w, ok := g.NextWave(now); ok {
				apply(w)
			}
			if c, ok := g.Claim(now, 0); ok {
				apply(c)
				o := Outcomes{At: now}
				for _, s := range c.Sends {
					o.Outcomes = append(o.Outcomes, Outcome{SendID: s.ID, Indices: s.Indices, Result: ResultAccepted, MessageID: "m" + s.ID})
				}
				apply(o)
			}
			evs, _ := g.Select(now, settle)
			for _, e := range evs {
				apply(e)
			}
			if c, ok := g.ClaimAutoReplies(now, 0); ok {
				for _, s := range c.Sends {
					if mayHaveSent[s.ID] {
						rt.Fatalf("auto-reply %s claimed again after it may have gone out", s.ID)
					}
				}
				apply(c)
				inFlight = append(inFlight, c.Sends...)
			}
		}
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 5).Draw(rt, "action") {
			case 0:
				now = now.Add(time.Duration(rapid.IntRange(0, 40).Draw(rt, "s")) * time.Second)
			case 1, 2:
				i := rapid.IntRange(0, n-1).Draw(rt, "who")
				if g.Recipients[i].Wave == 0 {
					continue
				}
				key := rapid.SampledFrom([]string{"1", "1", "2"}).Draw(rt, "key")
				sent := now.Add(-time.Duration(rapid.IntRange(0, 4).Draw(rt, "lag")) * time.Second)
				evID++
				apply(Replied{At: now, EventID: fmt.Sprint("e", evID), Index: i, Text: key, Response: key, SentAt: sent})
			case 3:
				if len(inFlight) == 0 {
					continue
				}
				s := inFlight[0]
				inFlight = inFlight[1:]
				res := rapid.SampledFrom([]string{ResultAccepted, ResultUncertain, ResultRetry}).Draw(rt, "result")
				if res != ResultRetry {
					mayHaveSent[s.ID] = true
				}
				apply(AutoReplyOutcomes{At: now, Outcomes: []Outcome{{SendID: s.ID, Indices: []int{s.Index}, Result: res, RetryAt: now.Add(time.Second)}}})
			case 4:
				if rec, ok := g.RecoverAutoReplies(now, nil); ok {
					for _, o := range rec.Outcomes {
						mayHaveSent[o.SendID] = true
					}
					inFlight = nil
					apply(rec)
				}
			case 5:
				tick()
			}
			checkQuota(rt, g, count)
		}
		now = now.Add(time.Hour)
		tick()
		checkSettled(rt, h, count)
		h.t = t
		h.replay()
	})
}

// checkSettled holds a callout whose answers have all settled to exactly
// min(count, yes) selected, and met exactly when yes >= count.
func checkSettled(rt *rapid.T, h *harness, count int) {
	g := h.g
	yes := 0
	for _, r := range g.Recipients {
		if g.saysYes(r) {
			yes++
		}
	}
	sel, _ := h.flags()
	if len(sel) != min(count, yes) {
		rt.Fatalf("%d selected, want min(%d, %d yes)", len(sel), count, yes)
	}
	if g.QuorumMet() != (yes >= count) {
		rt.Fatalf("quorum met = %v with %d yes of %d", g.QuorumMet(), yes, count)
	}
}

func checkBeforeApply(rt *rapid.T, g *Group, e Event) {
	switch v := e.(type) {
	case WaveSent:
		if g.QuorumMet() {
			rt.Fatalf("wave %d sent while the quota is met", v.Wave)
		}
	case Selected:
		for _, i := range v.Indices {
			r := g.Recipients[i]
			if !r.Standby {
				continue
			}
			for j, o := range g.Recipients {
				if o.Standby && g.saysYes(o) && !contains(v.Indices, j) && earlierStandby(o, j, r, i) {
					rt.Fatalf("standby %d selected before earlier standby %d", i, j)
				}
			}
		}
	case Claimed:
		for _, s := range v.Sends {
			for _, i := range s.Indices {
				if g.Recipients[i].Wave == 0 {
					rt.Fatalf("recipient %d claimed outside any wave", i)
				}
			}
		}
	}
}

func earlierStandby(a *Recipient, ai int, b *Recipient, bi int) bool {
	if c := a.StandbyAt.Compare(b.StandbyAt); c != 0 {
		return c < 0
	}
	if c := answerAt(a).Compare(answerAt(b)); c != 0 {
		return c < 0
	}
	return ai < bi
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func checkQuota(rt *rapid.T, g *Group, count int) {
	sel := 0
	for i, r := range g.Recipients {
		if r.Claims > 0 && r.Wave == 0 {
			rt.Fatalf("recipient %d sent to outside a wave", i)
		}
		if r.Selected {
			sel++
			if r.Standby {
				rt.Fatalf("recipient %d both selected and standby", i)
			}
		}
		if r.Status == crewcast.StatusNotNeeded && r.Claims > 0 {
			rt.Fatalf("recipient %d not_needed after a send", i)
		}
	}
	if sel > count {
		rt.Fatalf("%d selected, count %d", sel, count)
	}
}
