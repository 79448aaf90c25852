package main

import (
	"flag"
	"fmt"
	"strings"
	"time"
)

// policyBody is the follow-up, escalation and scheduling part of a create
// body (docs/design.md §12).
type policyBody struct {
	SendAt     string          `json:"send_at,omitempty"`
	Priority   string          `json:"priority,omitempty"`
	QuietHours string          `json:"quiet_hours,omitempty"`
	Followup   *followupBody   `json:"followup,omitempty"`
	Escalate   *escalationBody `json:"escalate,omitempty"`
}

type followupBody struct {
	After string `json:"after"`
	Max   int    `json:"max"`
	Text  string `json:"text,omitempty"`
}

type escalationBody struct {
	After string   `json:"after"`
	Crews []string `json:"crews,omitempty"`
	To    []string `json:"to,omitempty"`
	Text  string   `json:"text,omitempty"`
}

// policyFlags are send's --followup… --escalate… --send-at flags.
type policyFlags struct {
	followup, escalateAfter time.Duration
	followupMax             int
	followupText, escText   string
	escalateTo              listFlag
	sendAt, priority, quiet string
}

func bindPolicyFlags(fs *flag.FlagSet) *policyFlags {
	p := &policyFlags{}
	fs.DurationVar(&p.followup, "followup", 0, "text again whoever has not answered after this long (e.g. 10m)")
	fs.IntVar(&p.followupMax, "followup-max", 1, "at most this many follow-ups per person (with --followup)")
	fs.StringVar(&p.followupText, "followup-text", "", `follow-up text (default "Reminder: " and the message)`)
	fs.Var(&p.escalateTo, "escalate-to", "crew name or number to alert once if someone has not answered; repeatable")
	fs.DurationVar(&p.escalateAfter, "escalate-after", 0, "when to escalate (with --escalate-to; e.g. 30m)")
	fs.StringVar(&p.escText, "escalate-text", "", "escalation text; may use {{no_reply_names}} and {{tally}}")
	fs.StringVar(&p.sendAt, "send-at", "", "send at this time (RFC 3339, e.g. 2026-12-01T07:00:00-05:00); cancel before sends nothing")
	fs.StringVar(&p.priority, "priority", "", "normal (default) or critical (critical ignores quiet hours)")
	fs.StringVar(&p.quiet, "quiet-hours", "", `quiet hours for this message, e.g. 22:00-06:30, or off (default: the server's)`)
	return p
}

// body returns the policy part of the create body, or an argument error.
func (p *policyFlags) body() (policyBody, error) {
	b := policyBody{SendAt: p.sendAt, Priority: p.priority, QuietHours: p.quiet}
	if p.sendAt != "" {
		at, err := time.Parse(time.RFC3339, p.sendAt)
		if err != nil {
			return b, usagef("--send-at: %q is not an RFC 3339 time such as 2026-12-01T07:00:00-05:00", p.sendAt)
		}
		if at.Before(time.Now()) {
			return b, usagef("--send-at: %s is in the past; leave --send-at out to send now", p.sendAt)
		}
	}
	if p.followup > 0 {
		if p.followupMax < 1 {
			return b, usagef("--followup-max must be at least 1")
		}
		b.Followup = &followupBody{After: p.followup.String(), Max: p.followupMax, Text: p.followupText}
	} else if p.followupText != "" {
		return b, usagef("--followup-text needs --followup")
	}
	switch {
	case len(p.escalateTo) > 0 && p.escalateAfter <= 0:
		return b, usagef("--escalate-to needs --escalate-after")
	case len(p.escalateTo) == 0 && p.escalateAfter > 0:
		return b, usagef("--escalate-after needs --escalate-to")
	case len(p.escalateTo) > 0:
		e := &escalationBody{After: p.escalateAfter.String(), Text: p.escText}
		for _, t := range p.escalateTo {
			if looksLikeNumber(t) {
				e.To = append(e.To, t)
			} else {
				e.Crews = append(e.Crews, t)
			}
		}
		b.Escalate = e
	}
	return b, nil
}

// looksLikeNumber tells a phone number from a crew name: digits, spaces,
// dashes, dots and parentheses, with an optional leading +.
func looksLikeNumber(s string) bool {
	s = strings.TrimPrefix(strings.TrimSpace(s), "+")
	digits := 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case strings.ContainsRune(" -.()", c):
		default:
			return false
		}
	}
	return digits >= 3
}

// String summarizes the policy for people ("" without one), e.g.
// "reminder every 10m0s, at most 2; escalate to Supervisors at 30m0s".
func (b policyBody) String() string {
	var parts []string
	if b.SendAt != "" {
		parts = append(parts, "scheduled for "+b.SendAt)
	}
	if f := b.Followup; f != nil {
		parts = append(parts, fmt.Sprintf("reminder every %s, at most %d", f.After, f.Max))
	}
	if e := b.Escalate; e != nil {
		parts = append(parts, fmt.Sprintf("escalate to %s at %s", strings.Join(append(append([]string{}, e.Crews...), e.To...), ", "), e.After))
	}
	return strings.Join(parts, "; ")
}
