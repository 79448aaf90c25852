package group

import (
	"fmt"
	"time"

	"github.com/crewcast/crewcast"
)

// A dispatcher's hand on a callout (docs/architecture.md, "Waves and exact
// quotas"): select a person, release one, start the next wave now. Each
// is an ordinary quota event with By set, so it is journaled and audited
// with who asked; Select then carries on from the new state.
//
//   - Selecting by hand takes a person whose latest answer is the quorum's
//     response (standby or not yet ranked, or released earlier): they are
//     selected even beyond count. Someone who did not say yes cannot be.
//   - Releasing by hand un-selects a selected or standby person and keeps
//     their yes from counting again (Released) until they are selected by
//     hand; Select fills the place from standby or re-opens the quota.
//   - Starting the next wave sends the wave NextWave would send, without
//     waiting for every, while the quota is open.

// SelectByHand selects the recipient with number.
func (g *Group) SelectByHand(number string, now time.Time, by string) (Selected, error) {
	i, r, err := g.quotaRecipient(number)
	if err != nil {
		return Selected{}, err
	}
	switch {
	case r.Selected:
		return Selected{}, fmt.Errorf("%w: already selected", ErrState)
	case r.Response != g.Quorum.Response || r.Status == crewcast.StatusOptedOut:
		return Selected{}, fmt.Errorf("%w: only a person whose answer is %q can be selected", ErrState, g.Quorum.Response)
	}
	return Selected{At: now, Indices: []int{i}, By: by}, nil
}

// ReleaseByHand releases the selected or standby recipient with number.
func (g *Group) ReleaseByHand(number string, now time.Time, by string) (Unselected, error) {
	i, r, err := g.quotaRecipient(number)
	if err != nil {
		return Unselected{}, err
	}
	if !r.Selected && !r.Standby {
		return Unselected{}, fmt.Errorf("%w: neither selected nor on standby", ErrState)
	}
	return Unselected{At: now, Indices: []int{i}, By: by}, nil
}

// WaveNow is the next wave, sent now by hand.
func (g *Group) WaveNow(now time.Time, by string) (WaveSent, error) {
	if g.NextWaveAt().IsZero() {
		return WaveSent{}, fmt.Errorf("%w: no wave to send (no waves, quota filled, nobody left, canceled or paused)", ErrState)
	}
	idx := g.untexted()
	idx = idx[:min(len(idx), g.waves().Size)]
	return WaveSent{At: now, Wave: g.WavesSent + 1, Indices: idx, By: by}, nil
}

func (g *Group) quotaRecipient(number string) (int, *Recipient, error) {
	if !g.Exact() {
		return 0, nil, fmt.Errorf("%w: the group has no exact quota", ErrState)
	}
	r := g.Recipient(number)
	if r == nil {
		return 0, nil, ErrNoRecipient
	}
	return r.Index, r, nil
}
