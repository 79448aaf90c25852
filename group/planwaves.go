package group

import (
	"fmt"
	"strings"
)

// CalloutInput is what a client gives for a callout that fills: `waves`,
// `confirmed_text`, `filled_text` (and `quorum.exact` on the Quorum).
type CalloutInput struct {
	Waves         *WavesInput `json:"waves,omitempty"`
	ConfirmedText *string     `json:"confirmed_text,omitempty"`
	FilledText    *string     `json:"filled_text,omitempty"`
}

// WavesInput is `waves` as a client gives it: {"size":4,"every":"5m"}.
type WavesInput struct {
	Size  int    `json:"size"`
	Every string `json:"every"`
}

// MaxWaveSize bounds a wave (a wave is at most the largest group).
const MaxWaveSize = MaxRecipients

// PlanCallout checks a callout's input against its quorum and freezes it
// into the created group: waves need a quorum, and make it exact unless
// the client said exact:false (exactGiven); confirmed_text and filled_text
// need a quorum. It changes c only when there are no errors.
func PlanCallout(c *Created, in CalloutInput, exactGiven bool) []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	var w *Waves
	if in.Waves != nil {
		every, err := policyDuration(in.Waves.Every)
		if err != nil {
			bad("waves.every", "%s", err)
		}
		if in.Waves.Size < 1 || in.Waves.Size > MaxWaveSize {
			bad("waves.size", "must be 1 to %d", MaxWaveSize)
		}
		if c.Quorum == nil {
			bad("waves", "waves need a quorum (which answer, how many people)")
		}
		w = &Waves{Size: in.Waves.Size, Every: every}
	}
	texts := map[string]*string{"confirmed_text": in.ConfirmedText, "filled_text": in.FilledText}
	for _, field := range []string{"confirmed_text", "filled_text"} {
		t := texts[field]
		if t == nil {
			continue
		}
		switch {
		case c.Quorum == nil:
			bad(field, "needs a quorum")
		case strings.TrimSpace(*t) == "":
			bad(field, "must not be empty")
		case Segments(*t).Segments > MaxSegments:
			bad(field, "%d SMS segments; at most %d", Segments(*t).Segments, MaxSegments)
		default:
			if e := CheckText(field, *t); e != nil {
				errs = append(errs, *e)
			}
		}
	}
	if len(errs) > 0 || (w == nil && in.ConfirmedText == nil && in.FilledText == nil) {
		return errs
	}
	p := Policy{}
	if c.Policy != nil {
		p = *c.Policy
	}
	p.Waves = w
	if in.ConfirmedText != nil {
		p.ConfirmedText = *in.ConfirmedText
	}
	if in.FilledText != nil {
		p.FilledText = *in.FilledText
	}
	c.Policy = &p
	if w != nil && !exactGiven {
		q := *c.Quorum
		q.Exact = true
		c.Quorum = &q
	}
	return nil
}
