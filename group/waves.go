package group

import (
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
)

// Callouts that fill (docs/architecture.md, "Waves and exact quotas"):
//
//   - Waves text the recipients in roster order, Size at a time. The next
//     wave is due Every after the last, or at once when everyone texted so
//     far has answered or failed definitively, while the quota is open.
//     Only recipients of a sent wave are ever claimed (see claimable).
//   - An exact quota selects the first Count people whose answer is the
//     quorum's response, in the order the provider received the answers
//     (tie: roster order); later ones are on standby. Once the quota fills
//     no wave goes out and the untexted become not_needed. A selected
//     person who changes their answer is replaced by the earliest standby,
//     else the quota re-opens and waves resume.
//   - Auto-replies (confirmed_text to the selected, filled_text to the
//     standby) are sends like follow-ups: claimed in the journal before
//     the provider call, at most once per person and kind, spent (never
//     resent) when the outcome is uncertain.
//
// All of it is decided here, from the state and the time passed in, as
// events that Apply replays.

// Waves is a group's wave policy.
type Waves struct {
	Size  int           `json:"size"`
	Every time.Duration `json:"every"`
}

// DefaultFilledText is the filled_text when the group gives none.
const DefaultFilledText = "Thanks — we have enough people now. You're not needed this time."

// Auto-reply kinds (AutoReplySend.Kind).
const (
	AutoConfirmed = "confirmed"
	AutoFilled    = "filled"
)

// Done states of an auto-reply (QuotaState.ConfirmDone, FilledDone).
const (
	AutoSent      = "sent"
	AutoUncertain = "uncertain" // spent: may have gone out, never resent
	AutoFailed    = "failed"
	AutoSkipped   = "skipped" // never sent: opted out before its call
)

// QuotaState is a recipient's wave, selection and auto-reply state.
type QuotaState struct {
	// Wave is the 1-based wave the recipient was texted in (0: not yet).
	Wave int `json:"wave,omitempty"`
	// Selected: one of the quota's Count; Standby: answered yes after the
	// quota filled. SelectedAt/StandbyAt are when that was decided.
	Selected   bool      `json:"selected,omitempty"`
	Standby    bool      `json:"standby,omitempty"`
	SelectedAt time.Time `json:"selected_at,omitzero"`
	StandbyAt  time.Time `json:"standby_at,omitzero"`
	// AutoSendID is the auto-reply whose provider call is in flight,
	// claimed at AutoClaimedAt.
	AutoSendID    string    `json:"auto_send_id,omitempty"`
	AutoClaimedAt time.Time `json:"auto_claimed_at,omitzero"`
	// ConfirmDone and FilledDone say what became of each auto-reply
	// ("" = not sent yet); AutoRetryAt delays one certainly not sent.
	ConfirmDone string    `json:"confirm_done,omitempty"`
	FilledDone  string    `json:"filled_done,omitempty"`
	AutoRetryAt time.Time `json:"auto_retry_at,omitzero"`
	// Released: a dispatcher released them by hand (handpick.go); their
	// yes no longer counts until someone selects them by hand again.
	Released bool `json:"released,omitempty"`
}

// WaveSent records a wave: its recipients may now be claimed.
type WaveSent struct {
	At      time.Time `json:"at"`
	Wave    int       `json:"wave"`
	Indices []int     `json:"i"`
	By      string    `json:"by,omitempty"` // a dispatcher started it now (handpick.go)
}

// Selected records recipients selected for the quota (from standby or
// from a new answer).
type Selected struct {
	At      time.Time `json:"at"`
	Indices []int     `json:"i"`
	By      string    `json:"by,omitempty"` // selected by hand (handpick.go)
}

// Standby records recipients who answered yes after the quota filled.
type Standby struct {
	At      time.Time `json:"at"`
	Indices []int     `json:"i"`
}

// Unselected records selected or standby recipients whose latest answer
// is no longer the quorum's response (or who opted out).
type Unselected struct {
	At      time.Time `json:"at"`
	Indices []int     `json:"i"`
	By      string    `json:"by,omitempty"` // released by hand (handpick.go)
}

// NotNeeded records the recipients never texted when the quota filled.
type NotNeeded struct {
	At      time.Time `json:"at"`
	Indices []int     `json:"i"`
}

// QuorumReopened records an exact quota that is no longer met: the
// not_needed recipients wait for waves again.
type QuorumReopened struct {
	At time.Time `json:"at"`
}

// AutoReplySend is one auto-reply to recipient Index.
type AutoReplySend struct {
	ID    string `json:"send_id"`
	Index int    `json:"i"`
	Kind  string `json:"kind"`
}

// Send is the provider send of an auto-reply.
func (a AutoReplySend) Send() Send { return Send{ID: a.ID, Indices: []int{a.Index}} }

// AutoReplyClaimed claims auto-replies, committed before they are sent.
type AutoReplyClaimed struct {
	At    time.Time       `json:"at"`
	Sends []AutoReplySend `json:"sends"`
}

// AutoReplyOutcomes records what became of auto-reply sends.
type AutoReplyOutcomes struct {
	At       time.Time `json:"at"`
	Outcomes []Outcome `json:"outcomes"`
}

// Journal type names of the quota events.
const (
	TypeWaveSent          = "group.wave_sent"
	TypeSelected          = "recipient.selected"
	TypeStandby           = "recipient.standby"
	TypeUnselected        = "recipient.unselected"
	TypeNotNeeded         = "recipient.not_needed"
	TypeQuorumReopened    = "group.quorum_reopened"
	TypeAutoReplyClaimed  = "autoreply.claimed"
	TypeAutoReplyOutcomes = "autoreply.outcomes"
)

func (WaveSent) Type() string          { return TypeWaveSent }
func (Selected) Type() string          { return TypeSelected }
func (Standby) Type() string           { return TypeStandby }
func (Unselected) Type() string        { return TypeUnselected }
func (NotNeeded) Type() string         { return TypeNotNeeded }
func (QuorumReopened) Type() string    { return TypeQuorumReopened }
func (AutoReplyClaimed) Type() string  { return TypeAutoReplyClaimed }
func (AutoReplyOutcomes) Type() string { return TypeAutoReplyOutcomes }

// autoSendID names recipient i's auto-reply of a kind: "c<i>" or "x<i>"
// (at most one of each per person, so the claim key never repeats).
func autoSendID(i int, kind string) string {
	if kind == AutoConfirmed {
		return "c" + strconv.Itoa(i)
	}
	return "x" + strconv.Itoa(i)
}

// IsAutoReplySend reports whether a send id names an auto-reply.
func IsAutoReplySend(id string) bool { return strings.HasPrefix(id, "c") || strings.HasPrefix(id, "x") }

func (g *Group) waves() *Waves {
	if g.Policy == nil || g.Policy.Waves == nil || g.Policy.Waves.Size <= 0 {
		return nil
	}
	return g.Policy.Waves
}

// HasWaves reports whether the group sends in waves.
func (g *Group) HasWaves() bool { return g.waves() != nil }

// Exact reports whether the group's quorum is an exact quota.
func (g *Group) Exact() bool { return g.Quorum != nil && g.Quorum.Exact }

// inWave reports whether r may be claimed as far as waves go.
func (g *Group) inWave(r *Recipient) bool { return g.waves() == nil || r.Wave > 0 }

// texted reports whether r is or will be texted without another wave
// (not_needed and untexted recipients of a wave group are not).
func (g *Group) texted(r *Recipient) bool {
	return r.Status != crewcast.StatusNotNeeded && g.inWave(r)
}

func (g *Group) quotaOpen() bool { return g.Quorum == nil || g.Quorum.MetAt.IsZero() }

// untexted lists the recipients no wave has reached that may still be
// sent to, in roster order.
func (g *Group) untexted() []int {
	var out []int
	for i, r := range g.Recipients {
		if r.Wave == 0 && (r.Status == crewcast.StatusPending || r.Status == crewcast.StatusScheduled) {
			out = append(out, i)
		}
	}
	return out
}

// settled reports whether everyone texted so far has answered or failed
// definitively.
func (g *Group) settled() bool {
	for _, r := range g.Recipients {
		if r.Wave == 0 || Answered(r) {
			continue
		}
		if r.Status != crewcast.StatusFailed && r.Status != crewcast.StatusOptedOut {
			return false
		}
	}
	return true
}

// NextWaveAt is when the next wave is due (zero: none will be unless the
// state changes — no waves, quota met, nobody left, canceled or paused).
// It may be in the past: the wave is due now.
func (g *Group) NextWaveAt() time.Time {
	w := g.waves()
	if w == nil || !g.quotaOpen() || g.Status == crewcast.GroupCanceled || g.Status == crewcast.GroupPaused ||
		len(g.untexted()) == 0 {
		return time.Time{}
	}
	if g.WavesSent == 0 {
		return g.CreatedAt
	}
	if g.settled() {
		return g.LastWaveAt // everyone texted has answered: at once
	}
	return g.LastWaveAt.Add(w.Every)
}

// NextWave decides the wave due at now, if any.
func (g *Group) NextWave(now time.Time) (WaveSent, bool) {
	at := g.NextWaveAt()
	if at.IsZero() || at.After(now) {
		return WaveSent{}, false
	}
	idx := g.untexted()
	idx = idx[:min(len(idx), g.waves().Size)]
	return WaveSent{At: now, Wave: g.WavesSent + 1, Indices: idx}, true
}

// answerAt is when r's latest answer was received by the provider (the
// provider's timestamp), else when crewcast applied it.
func answerAt(r *Recipient) time.Time {
	if !r.LastAnswerSentAt.IsZero() {
		return r.LastAnswerSentAt
	}
	return r.RepliedAt
}

// saysYes reports whether r's latest answer is the quorum's response and
// r can still be counted (not opted out).
func (g *Group) saysYes(r *Recipient) bool {
	return r.Response == g.Quorum.Response && r.Status != crewcast.StatusOptedOut && !r.Released
}

// AutoReplyKindOf is the kind of auto-reply a send id names.
func AutoReplyKindOf(id string) string {
	if strings.HasPrefix(id, "c") {
		return AutoConfirmed
	}
	return AutoFilled
}
