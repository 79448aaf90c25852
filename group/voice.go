package group

import (
	"time"

	"github.com/crewcast/crewcast"
)

// Voice steps (docs/design.md §17). Placing the call is a follow-up like
// any other (claimed, then made, its outcome journaled as
// followup.outcomes); how the call then ended comes later, in a signed
// status callback, and is journaled as CallEnded: the person's history
// shows it. It changes nothing else: no answer, busy, a machine or a
// hang-up leave the ladder going on; a digit pressed is an answer, which
// arrives as a reply (Reply) and stops it like any answer.

// TypeCallEnded is the journal type of CallEnded.
const TypeCallEnded = "recipient.call_ended"

// CallEnded is how a recipient's voice call ended.
type CallEnded struct {
	Index   int       `json:"i"`
	EventID string    `json:"event_id,omitempty"`
	Outcome string    `json:"outcome"` // answered, no_answer, busy, machine, failed
	Digits  string    `json:"digits,omitempty"`
	At      time.Time `json:"at"`
}

// Type implements Event.
func (CallEnded) Type() string { return TypeCallEnded }

// CallEnd decides the CallEnded of a call-ended event (crewcast.KindCallEnded,
// To the person's number); false for a number not in the group, or an
// event already applied.
func (g *Group) CallEnd(ev crewcast.Event, now time.Time) (CallEnded, bool) {
	r := g.Recipient(ev.To)
	if r == nil || g.seen(ev.EventID) {
		return CallEnded{}, false
	}
	return CallEnded{Index: r.Index, EventID: ev.EventID, Outcome: ev.ProviderStatus, Digits: ev.Text, At: now}, true
}

func (g *Group) applyCallEnded(v CallEnded) {
	if v.EventID != "" {
		if g.seen(v.EventID) {
			return
		}
		g.remember(v.EventID)
	}
}
