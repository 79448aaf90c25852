package group

import (
	"fmt"
	"strings"
	"time"
)

// PolicyInput is a create request's follow-up, escalation, scheduling and
// quiet-hours fields, as a client gives them (docs/design.md §12).
type PolicyInput struct {
	SendAt     string         `json:"send_at,omitempty"`  // RFC 3339
	Priority   string         `json:"priority,omitempty"` // "normal" (default) or "critical"
	Followup   *FollowupInput `json:"followup,omitempty"`
	Escalate   *EscalateInput `json:"escalate,omitempty"`
	QuietHours string         `json:"quiet_hours,omitempty"` // "22:00-06:30", "off"; "" = server default
}

// FollowupInput is `followup` as a client gives it.
type FollowupInput struct {
	After string `json:"after,omitempty"` // Go duration, at least 1s
	Max   int    `json:"max,omitempty"`
	Text  string `json:"text,omitempty"`
	// Steps is a ladder (ladder.go), instead of After and Max.
	Steps []StepInput `json:"steps,omitempty"`
}

// EscalateInput is `escalate` as a client gives it.
type EscalateInput struct {
	After string   `json:"after"`
	Crews []string `json:"crews,omitempty"`
	To    []string `json:"to,omitempty"`
	Text  string   `json:"text,omitempty"`
}

// Bounds of a policy.
const (
	MinPolicyDuration = time.Second
	MaxFollowups      = 10
	MaxEscalateTo     = 20
)

// PolicyDefaults are the server's: quiet hours (nil: none) and the zone
// of recipients without one.
type PolicyDefaults struct {
	Quiet    *QuietHours
	Timezone string
}

// PlanPolicy validates the policy fields of req and freezes them into c
// (made by PlanWith): the group's Policy, and each roster entry's zone.
// Escalation crews are kept by name; resolve them to numbers with
// AddEscalationNumbers. It returns the problems it finds.
func PlanPolicy(c *Created, req Request, d PolicyDefaults, normalize func(string) (string, error)) []FieldError {
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	p := Policy{Timezone: d.Timezone}
	in := req.PolicyInput
	if in.SendAt != "" {
		t, err := time.Parse(time.RFC3339, in.SendAt)
		if err != nil {
			bad("send_at", "must be an RFC 3339 time such as 2026-12-01T07:00:00-05:00")
		} else if t.Before(c.At) {
			errs = append(errs, FieldError{Field: "send_at", Message: "is in the past; leave it out to send now", Unprocessable: true})
		} else if t.After(c.At) {
			p.SendAt = t.UTC()
		}
	}
	switch in.Priority {
	case "", PriorityNormal:
	case PriorityCritical:
		p.Priority = PriorityCritical
	default:
		bad("priority", "must be %q or %q", PriorityNormal, PriorityCritical)
	}
	if f := in.Followup; f != nil {
		fu, ferrs := planFollowup(f)
		errs = append(errs, ferrs...)
		p.Followup = fu
	}
	if e := in.Escalate; e != nil {
		after, err := policyDuration(e.After)
		if err != nil {
			bad("escalate.after", "%s", err)
		}
		if len(e.To)+len(e.Crews) == 0 {
			bad("escalate", "give crews or to")
		}
		if len(e.To) > MaxEscalateTo {
			bad("escalate.to", "at most %d numbers", MaxEscalateTo)
		}
		x := &Escalate{After: after, Text: e.Text}
		for i, n := range e.To {
			num, err := normalize(n)
			if err != nil {
				errs = append(errs, FieldError{Field: fmt.Sprintf("escalate.to[%d]", i), Message: err.Error(), Input: n})
				continue
			}
			x.addNumber(num)
		}
		for i, cr := range e.Crews {
			if strings.TrimSpace(cr) == "" {
				bad(fmt.Sprintf("escalate.crews[%d]", i), "must not be empty")
				continue
			}
			x.Crews = append(x.Crews, strings.TrimSpace(cr))
		}
		if seg := Segments(e.Text); seg.Segments > MaxSegments {
			bad("escalate.text", "%d SMS segments; at most %d", seg.Segments, MaxSegments)
		}
		p.Escalate = x
	}
	switch strings.TrimSpace(in.QuietHours) {
	case "":
		p.Quiet = d.Quiet
	case QuietOff:
	default:
		q, err := ParseQuietHours(in.QuietHours)
		if err != nil {
			bad("quiet_hours", "%s", err)
		}
		p.Quiet = q
	}
	// Zones, by number (PlanWith merged duplicates: the first zone given wins).
	zones := map[string]string{}
	inputs := req.Recipients
	for i, r := range inputs {
		if r.Timezone == "" {
			continue
		}
		if _, err := LoadZone(r.Timezone); err != nil {
			errs = append(errs, FieldError{Field: fmt.Sprintf("recipients[%d].timezone", i), Message: err.Error(), Input: r.Timezone})
			continue
		}
		if n, err := normalize(r.Number); err == nil {
			if _, ok := zones[n]; !ok {
				zones[n] = r.Timezone
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for k := range c.Recipients {
		// A zone set by the roster's source (a contact's) stays unless the
		// request names one for that number.
		if tz, ok := zones[c.Recipients[k].Number]; ok {
			c.Recipients[k].TZ = tz
		}
	}
	if p.SendAt.IsZero() && p.Priority == "" && p.Followup == nil && p.Escalate == nil && p.Quiet == nil {
		return nil // no policy: the group is as before docs/design.md §12
	}
	c.Policy = &p
	return nil
}

// AddEscalationNumbers merges numbers (a crew's members, resolved by the
// caller) into the escalation's, once each.
func (c *Created) AddEscalationNumbers(numbers []string) {
	if c.Policy == nil || c.Policy.Escalate == nil {
		return
	}
	for _, n := range numbers {
		c.Policy.Escalate.addNumber(n)
	}
}

func (x *Escalate) addNumber(n string) {
	for _, have := range x.To {
		if have == n {
			return
		}
	}
	x.To = append(x.To, n)
}

func policyDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("must be a duration such as 90s or 10m")
	}
	if d < MinPolicyDuration {
		return 0, fmt.Errorf("must be at least %s", MinPolicyDuration)
	}
	return d, nil
}
