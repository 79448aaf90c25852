package group

import (
	"fmt"
	"time"
)

// Follow-up ladders (docs/design.md §17): `followup.steps`, each step an
// `after` (counted from the group's send to that person, not from the
// previous step), a `channel` and an optional `text`. The old form
// {"after","max","text"} stays and means max sms steps, each `after` the
// previous one. A ladder is frozen into Followup.Steps, with Max the number
// of steps, so every stop rule of the old form (answered, opted out,
// quorum, canceled, all sent) applies to it unchanged.

// Channels of a ladder step.
const (
	ChannelSMS   = "sms"
	ChannelVoice = "voice"
	ChannelEmail = "email"
)

// Step is one rung of a follow-up ladder.
type Step struct {
	After   time.Duration `json:"after"`
	Channel string        `json:"channel"`
	Text    string        `json:"text,omitempty"`
}

// StepInput is a step as a client gives it.
type StepInput struct {
	After   string `json:"after"` // Go duration, from the send to the person
	Channel string `json:"channel"`
	Text    string `json:"text,omitempty"`
}

// planFollowup validates `followup` in either form. It returns nil and
// the problems when there are any.
func planFollowup(f *FollowupInput) (*Followup, []FieldError) {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if seg := Segments(f.Text); seg.Segments > MaxSegments {
		bad("followup.text", "%d SMS segments; at most %d", seg.Segments, MaxSegments)
	}
	if f.Steps == nil {
		after, err := policyDuration(f.After)
		if err != nil {
			bad("followup.after", "%s", err)
		}
		if f.Max < 1 || f.Max > MaxFollowups {
			bad("followup.max", "must be 1 to %d", MaxFollowups)
		}
		return &Followup{After: after, Max: f.Max, Text: f.Text}, errs
	}
	if f.After != "" || f.Max != 0 {
		bad("followup", "give steps, or after and max, not both")
	}
	if len(f.Steps) < 1 || len(f.Steps) > MaxFollowups {
		bad("followup.steps", "must hold 1 to %d steps", MaxFollowups)
	}
	out := &Followup{Max: len(f.Steps), Text: f.Text, Steps: make([]Step, 0, len(f.Steps))}
	var prev time.Duration
	for i, s := range f.Steps {
		field := fmt.Sprintf("followup.steps[%d]", i)
		after, err := policyDuration(s.After)
		switch {
		case err != nil:
			bad(field+".after", "%s", err)
		case i > 0 && after <= prev:
			bad(field+".after", "must be later than the step before (%s): each after counts from the send", prev)
		}
		prev = after
		switch s.Channel {
		case ChannelSMS, ChannelVoice, ChannelEmail:
		default:
			bad(field+".channel", "must be %q, %q or %q", ChannelSMS, ChannelVoice, ChannelEmail)
		}
		if seg := Segments(s.Text); s.Channel == ChannelSMS && seg.Segments > MaxSegments {
			bad(field+".text", "%d SMS segments; at most %d", seg.Segments, MaxSegments)
		}
		out.Steps = append(out.Steps, Step{After: after, Channel: s.Channel, Text: s.Text})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out.After = out.Steps[0].After
	return out, nil
}

// Step returns follow-up n (1-based) as a ladder step: the ladder's own,
// or for the old form an sms step with the policy's text.
func (f *Followup) Step(n int) Step {
	if n >= 1 && n <= len(f.Steps) {
		return f.Steps[n-1]
	}
	return Step{After: time.Duration(n) * f.After, Channel: ChannelSMS, Text: f.Text}
}

// Channels returns the channels a follow-up policy uses, sms first
// when it is among them, each once.
func (f *Followup) Channels() []string {
	if f == nil || f.Max <= 0 {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for n := 1; n <= f.Max; n++ {
		if c := f.Step(n).Channel; !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// ladderDue is when follow-up n (1-based) of a ladder is due for a
// recipient sent at sentAt.
func (f *Followup) ladderDue(sentAt time.Time, n int) time.Time {
	return sentAt.Add(f.Step(n).After)
}

// StepOf returns the step of r's follow-up in flight or last claimed
// (r.Followups), the first step when none was claimed yet.
func (g *Group) StepOf(r *Recipient) Step {
	f := g.followup()
	if f == nil {
		return Step{}
	}
	return f.Step(max(1, r.Followups))
}

// CheckFollowup validates a `followup` on its own (a template's), naming
// fields as a create request would.
func CheckFollowup(f *FollowupInput) []FieldError {
	_, errs := planFollowup(f)
	if f.Text != "" {
		if e := CheckText("followup.text", f.Text); e != nil {
			errs = append(errs, *e)
		}
	}
	for i, s := range f.Steps {
		if e := CheckText(fmt.Sprintf("followup.steps[%d].text", i), s.Text); e != nil {
			errs = append(errs, *e)
		}
	}
	return errs
}

// ResultSkipped: a ladder step not made because the person has no address
// on its channel (no email on the contact). It is spent, and says so; the
// ladder goes on to the next step.
const ResultSkipped = "skipped"

// StepSkipped is the error a channel sender returns for a step it cannot
// make for this person (no address); FollowupOutcome turns it into
// ResultSkipped.
type StepSkipped struct{ Reason string }

func (e *StepSkipped) Error() string { return "step skipped: " + e.Reason }
