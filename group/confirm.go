package group

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
)

// Confirmations (docs/operations.md, "Opt-outs"): crewcast may answer a
// STOP (--opt-out-reply TEXT) or a HELP (--help-reply TEXT) itself. Each
// is its own claimed send ("k<n>"), at most one per keyword reply: the
// claim commits with the reply (a webhook delivered again is a reply
// already seen, so no second claim), and a crash between the claim and
// the provider's answer makes it unconfirmed, never resent.

// Confirmation is one message crewcast sends in answer to a keyword reply.
type Confirmation struct {
	ID      string    `json:"send_id"`
	Index   int       `json:"i"`
	Keyword string    `json:"keyword"`
	From    string    `json:"from"` // the number the person texted
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
	// Status is one of the escalation send statuses (sending = claimed).
	Status    string `json:"status,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// ConfirmClaimed claims one confirmation send.
type ConfirmClaimed struct {
	At   time.Time    `json:"at"`
	Send Confirmation `json:"send"`
}

// ConfirmOutcomes records what became of confirmation sends.
type ConfirmOutcomes struct {
	At       time.Time `json:"at"`
	Outcomes []Outcome `json:"outcomes"`
}

// Event types of confirmations.
const (
	TypeConfirmClaimed  = "confirm.claimed"
	TypeConfirmOutcomes = "confirm.outcomes"
)

func (ConfirmClaimed) Type() string  { return TypeConfirmClaimed }
func (ConfirmOutcomes) Type() string { return TypeConfirmOutcomes }

// IsConfirmSend reports whether a send id names a confirmation.
func IsConfirmSend(id string) bool { return strings.HasPrefix(id, "k") }

// Confirm claims a confirmation of text for the keyword reply rep, sent
// from the number the person texted.
func (g *Group) Confirm(rep Replied, from, text string, now time.Time) ConfirmClaimed {
	id := "k" + strconv.Itoa(len(g.Confirmations)+1)
	return ConfirmClaimed{At: now, Send: Confirmation{ID: id, Index: rep.Index, Keyword: rep.Keyword, From: from, Text: text, At: now}}
}

// Send is the provider send of a confirmation.
func (c Confirmation) Send() Send { return Send{ID: c.ID, Indices: []int{c.Index}} }

// ConfirmSends lists the confirmations in flight.
func (g *Group) ConfirmSends() []Confirmation {
	var out []Confirmation
	for _, c := range g.Confirmations {
		if c.Status == EscalationSending {
			out = append(out, c)
		}
	}
	return out
}

func (g *Group) recoverConfirmations(now time.Time, inFlight func(string) bool) (ConfirmOutcomes, bool) {
	co := ConfirmOutcomes{At: now}
	for _, c := range g.ConfirmSends() {
		if inFlight == nil || !inFlight(c.ID) {
			co.Outcomes = append(co.Outcomes, Outcome{SendID: c.ID, Indices: []int{c.Index}, Result: ResultUncertain,
				Class: crewcast.ClassUncertain, Detail: "crash between claim and result: the confirmation may or may not have gone out"})
		}
	}
	return co, len(co.Outcomes) > 0
}

func (g *Group) applyConfirm(e Event) error {
	switch v := e.(type) {
	case ConfirmClaimed:
		if err := g.checkIndices(v.Type(), []int{v.Send.Index}); err != nil {
			return err
		}
		for _, c := range g.Confirmations {
			if c.ID == v.Send.ID {
				return fmt.Errorf("apply %s: %s claimed twice", v.Type(), c.ID)
			}
		}
		c := v.Send
		c.Status = EscalationSending
		g.Confirmations = append(g.Confirmations, c)
	case ConfirmOutcomes:
		for _, o := range v.Outcomes {
			for k := range g.Confirmations {
				c := &g.Confirmations[k]
				if c.ID != o.SendID || c.Status != EscalationSending {
					continue
				}
				settleSend(&c.Status, &c.MessageID, &c.Detail, o)
			}
		}
	}
	return nil
}
