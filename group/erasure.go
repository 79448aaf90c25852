package group

import (
	"fmt"
	"regexp"
)

// Eraser returns a journal rewriter that erases one person from a group's
// events, applied to the group's events in journal order: their number is
// replaced by replacement wherever it appears (roster, sender, escalation
// numbers, any text field such as reconcile evidence), their name dropped,
// the text and media of their replies emptied, and, with redactText, the
// group's message text and media too, with the follow-up and escalation
// texts of its policy and the escalation message as sent. Other
// recipients are untouched.
func Eraser(number, replacement string, redactText bool) func(typ string, data []byte) ([]byte, error) {
	return EraserWith(number, replacement, EraseTexts{Message: redactText, Escalation: redactText})
}

// EraseTexts says which texts an erasure empties besides the person's own
// replies.
type EraseTexts struct {
	// Message: the group's text and media and its follow-up text (sent to
	// every recipient): once nobody else is sent them.
	Message bool
	// Escalation: the escalation text, in the policy and as sent: when the
	// person was sent it and nobody else will be (the escalation happens
	// once).
	Escalation bool
}

// EscalatedTo reports whether the group's escalation was decided and
// sends to number: then its text was sent to them and is sent to nobody
// else again.
func (g *Group) EscalatedTo(number string) bool {
	if g == nil || g.Escalation == nil || g.Policy == nil || g.Policy.Escalate == nil {
		return false
	}
	for _, to := range g.Policy.Escalate.To {
		if to == number {
			return true
		}
	}
	return false
}

// EraserWith is Eraser with the texts to empty spelled out.
func EraserWith(number, replacement string, texts EraseTexts) func(typ string, data []byte) ([]byte, error) {
	redactText := texts.Message
	var theirs map[int]bool // roster indices of the person, from Created
	// A whole number only: never the prefix of a longer one.
	re := regexp.MustCompile(regexp.QuoteMeta(number) + `([^0-9]|$)`)
	return func(typ string, data []byte) ([]byte, error) {
		e, err := Decode(typ, data)
		if err != nil {
			return nil, fmt.Errorf("erasure: %w", err)
		}
		switch v := e.(type) {
		case Created:
			theirs = map[int]bool{}
			for i := range v.Recipients {
				if v.Recipients[i].Number == number {
					v.Recipients[i].Number, v.Recipients[i].Name = replacement, ""
					theirs[i] = true
				}
			}
			if v.From == number {
				v.From = replacement
			}
			if redactText {
				v.Text, v.MediaURLs = "", nil
			}
			if v.Policy != nil && (texts.Message || texts.Escalation) {
				p := rewritePolicy(v.Policy, false, nil)
				if texts.Message && p.Followup != nil {
					p.Followup.Text = ""
				}
				if texts.Escalation && p.Escalate != nil {
					p.Escalate.Text = ""
				}
				v.Policy = p
			}
			e = v
		case Escalated:
			if !texts.Escalation || v.Text == "" {
				return re.ReplaceAll(data, []byte(replacement+"$1")), nil
			}
			v.Text = ""
			e = v
		case Replied:
			if !theirs[v.Index] || (v.Text == "" && v.Media == nil) {
				return data, nil
			}
			v.Text, v.Media = "", nil
			e = v
		default:
			return re.ReplaceAll(data, []byte(replacement+"$1")), nil
		}
		_, out, err := Encode(e)
		if err != nil {
			return nil, err
		}
		return re.ReplaceAll(out, []byte(replacement+"$1")), nil
	}
}
