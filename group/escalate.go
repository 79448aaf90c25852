package group

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
)

// Escalation (docs/design.md §12): once, `after` the group started sending (its
// send_at, else its creation), when the quorum is not met — or, without a
// quorum, when anyone texted has not answered — every escalation number
// gets one message. Each is its own claimed send ("e<k>"), never resent:
// an escalation that certainly did not go out is recorded as not sent, an
// uncertain one as unconfirmed.

// Escalation is the escalation a group decided.
type Escalation struct {
	At time.Time `json:"at"`
	// Skipped says why nothing was sent (everyone answered, quorum met).
	Skipped string           `json:"skipped,omitempty"`
	Text    string           `json:"text,omitempty"`
	Sends   []EscalationSend `json:"sends,omitempty"`
}

// Escalation send statuses.
const (
	EscalationSending     = "sending"
	EscalationSent        = "sent"
	EscalationFailed      = "failed"
	EscalationNotSent     = "not_sent"
	EscalationUnconfirmed = "unconfirmed"
)

// EscalationSend is one escalation message.
type EscalationSend struct {
	ID        string `json:"send_id"`
	To        string `json:"to"`
	Status    string `json:"status,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// settleSend records a provider outcome on a send that was in flight (an
// escalation or a confirmation): the status it takes (an uncertain answer
// is unconfirmed, never resent), its message id when accepted, the detail.
func settleSend(status, messageID, detail *string, o Outcome) {
	*detail = o.Detail
	switch o.Result {
	case ResultAccepted:
		*status, *messageID = EscalationSent, o.MessageID
	case ResultUncertain:
		*status = EscalationUnconfirmed
	case ResultFailed:
		*status = EscalationFailed
	default:
		*status = EscalationNotSent
	}
}

// Escalated records the escalation decision; its sends are claimed by it.
type Escalated struct {
	At      time.Time        `json:"at"`
	Skipped string           `json:"skipped,omitempty"`
	Text    string           `json:"text,omitempty"`
	Sends   []EscalationSend `json:"sends,omitempty"`
}

// EscalationOutcomes records what became of escalation sends.
type EscalationOutcomes struct {
	At       time.Time `json:"at"`
	Outcomes []Outcome `json:"outcomes"`
}

func (Escalated) Type() string          { return TypeEscalated }
func (EscalationOutcomes) Type() string { return TypeEscalationResult }

// IsEscalationSend reports whether a send id names an escalation message.
func IsEscalationSend(id string) bool { return strings.HasPrefix(id, "e") }

// EscalatedAt is when the escalation was decided (zero: not yet).
func (g *Group) EscalatedAt() time.Time {
	if g.Escalation == nil {
		return time.Time{}
	}
	return g.Escalation.At
}

// EscalationDue is when the escalation is to be decided; zero when there
// is none to decide (no policy, already decided, canceled).
func (g *Group) EscalationDue() time.Time {
	if g.Policy == nil || g.Policy.Escalate == nil || g.Escalation != nil || g.Status == crewcast.GroupCanceled {
		return time.Time{}
	}
	base := g.CreatedAt
	if g.Policy.SendAt.After(base) {
		base = g.Policy.SendAt
	}
	return base.Add(g.Policy.Escalate.After)
}

// Escalate decides the escalation at now, if it is due.
func (g *Group) Escalate(now time.Time) (Escalated, bool) {
	due := g.EscalationDue()
	if due.IsZero() || now.Before(due) || g.Status == crewcast.GroupPaused {
		return Escalated{}, false
	}
	e := Escalated{At: now}
	names, texted, answered := g.noReply()
	switch {
	case g.QuorumMet():
		e.Skipped = "quorum met"
	case !g.HasQuorum() && len(names) == 0:
		// With a quorum, only the quorum counts: everyone may have
		// answered "no" and it is still not met.
		e.Skipped = "everyone answered"
	case len(g.Policy.Escalate.To) == 0:
		e.Skipped = "no escalation number (crews resolve once crews are supported)"
	}
	if e.Skipped != "" {
		return e, true
	}
	e.Text = g.renderEscalation(names, texted, answered)
	for k, to := range g.Policy.Escalate.To {
		e.Sends = append(e.Sends, EscalationSend{ID: "e" + strconv.Itoa(k+1), To: to})
	}
	return e, true
}

// noReply lists who has not answered among those texted (not opted out,
// not canceled), by name or number, and counts.
func (g *Group) noReply() (names []string, texted, answered int) {
	for _, r := range g.Recipients {
		if r.Status == crewcast.StatusOptedOut || r.Status == crewcast.StatusCanceled || !g.texted(r) {
			continue
		}
		texted++
		if Answered(r) {
			answered++
			continue
		}
		n := r.Name
		if n == "" {
			n = r.Number
		}
		names = append(names, n)
	}
	return names, texted, answered
}

// maxNamedNoReply bounds the names an escalation lists.
const maxNamedNoReply = 20

func (g *Group) renderEscalation(names []string, texted, answered int) string {
	text := g.Policy.Escalate.Text
	if text == "" {
		text = DefaultEscalationText
	}
	list := names
	if len(list) > maxNamedNoReply {
		list = list[:maxNamedNoReply]
	}
	nr := strings.Join(list, ", ")
	if more := len(names) - len(list); more > 0 {
		nr += fmt.Sprintf(" and %d more", more)
	}
	c := g.Counts()
	tally := fmt.Sprintf("%d of %d answered", answered, texted)
	if len(g.Responses) > 0 {
		// One count per response option (docs/design.md §11): "1 Coming 3, 2 Can't 1".
		parts := make([]string, 0, len(g.Responses))
		for _, o := range g.Responses {
			parts = append(parts, fmt.Sprintf("%s %s %d", o.Key, o.Label, c[CountResponsePrefix+o.Key]))
		}
		tally += ": " + strings.Join(parts, ", ")
	} else if c[CountAckYes]+c[CountAckNo] > 0 {
		tally += fmt.Sprintf(": %d yes, %d no", c[CountAckYes], c[CountAckNo])
	}
	r := strings.NewReplacer("{{no_reply_names}}", nr, "{{tally}}", tally)
	return r.Replace(text)
}

// EscalationOutcome classifies a provider's answer to an escalation send.
func (g *Group) EscalationOutcome(s Send, res crewcast.SendResult, err error, now time.Time) Outcome {
	return g.Outcome(s, res, err, now)
}

func (g *Group) recoverEscalation(now time.Time, inFlight func(string) bool) (EscalationOutcomes, bool) {
	eo := EscalationOutcomes{At: now}
	if g.Escalation == nil {
		return eo, false
	}
	for _, s := range g.Escalation.Sends {
		if s.Status == EscalationSending && (inFlight == nil || !inFlight(s.ID)) {
			eo.Outcomes = append(eo.Outcomes, Outcome{SendID: s.ID, Result: ResultUncertain, Class: crewcast.ClassUncertain,
				Detail: "crash between claim and result: the escalation may or may not have gone out"})
		}
	}
	return eo, len(eo.Outcomes) > 0
}

func (g *Group) applyEscalation(e Event) error {
	switch v := e.(type) {
	case Escalated:
		if g.Escalation != nil {
			return nil
		}
		x := &Escalation{At: v.At, Skipped: v.Skipped, Text: v.Text}
		for _, s := range v.Sends {
			if s.Status == "" {
				s.Status = EscalationSending // claimed
			}
			x.Sends = append(x.Sends, s)
		}
		g.Escalation = x
	case EscalationOutcomes:
		if g.Escalation == nil {
			return fmt.Errorf("apply %s: no escalation", v.Type())
		}
		for _, o := range v.Outcomes {
			for k := range g.Escalation.Sends {
				s := &g.Escalation.Sends[k]
				if s.ID != o.SendID || s.Status != EscalationSending {
					continue
				}
				settleSend(&s.Status, &s.MessageID, &s.Detail, o)
			}
		}
	}
	return nil
}

// EscalationSends lists the escalation sends in flight (to be queued
// after the claim committed).
func (g *Group) EscalationSends() []EscalationSend {
	if g.Escalation == nil {
		return nil
	}
	var out []EscalationSend
	for _, s := range g.Escalation.Sends {
		if s.Status == EscalationSending {
			out = append(out, s)
		}
	}
	return out
}

// Send is the provider send of an escalation message (no recipient index:
// the number is not one of the group's).
func (s EscalationSend) Send() Send { return Send{ID: s.ID} }

// rewritePolicy applies retention to a frozen policy: the follow-up and
// escalation texts are bodies; escalation numbers are numbers.
func rewritePolicy(p *Policy, redact bool, number func(string) string) *Policy {
	if p == nil {
		return nil
	}
	q := *p
	if redact {
		q.ConfirmedText, q.FilledText = "", "" // auto-reply bodies
	}
	if q.Followup != nil {
		f := *q.Followup
		if redact {
			f.Text = ""
		}
		q.Followup = &f
	}
	if q.Escalate != nil {
		x := *q.Escalate
		if redact {
			x.Text = ""
		}
		if number != nil {
			x.To = make([]string, len(p.Escalate.To))
			for k, n := range p.Escalate.To {
				x.To[k] = number(n)
			}
		}
		q.Escalate = &x
	}
	return &q
}

// rewritePolicyEvent applies retention to the policy events that hold a
// body or a number (an escalation's text and numbers); ok is false for an
// event with neither.
func rewritePolicyEvent(e Event, redact bool, number func(string) string) (Event, bool) {
	v, ok := e.(Escalated)
	if !ok {
		return e, false
	}
	if redact {
		v.Text = ""
	}
	if number != nil {
		sends := make([]EscalationSend, len(v.Sends))
		for k, s := range v.Sends {
			s.To = number(s.To)
			sends[k] = s
		}
		v.Sends = sends
	}
	return v, true
}
