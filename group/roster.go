package group

import (
	"fmt"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/crewcast/crewcast"
)

// MaxTextLen bounds a message body (10 concatenated SMS segments of 160).
const MaxTextLen = 1600

// RecipientInput is one recipient as a client gave it.
type RecipientInput struct {
	Number string `json:"number"`
	Name   string `json:"name,omitempty"`
}

// Request is a client's request to create a group message.
type Request struct {
	From       string           `json:"from"`
	To         []string         `json:"to,omitempty"`
	Recipients []RecipientInput `json:"recipients,omitempty"`
	Text       string           `json:"text"`
	MediaURLs  []string         `json:"media_urls,omitempty"`
	Mode       crewcast.Mode    `json:"mode,omitempty"`
}

// FieldError names the request field that is wrong and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e FieldError) Error() string { return e.Field + ": " + e.Message }

// DefaultRegion is the region assumed for numbers written without a
// country code.
const DefaultRegion = "US"

// NormalizeNumber returns a number in E.164 form, or an error saying why it
// is not a possible phone number. Numbers without a leading + are read as
// DefaultRegion numbers.
func NormalizeNumber(s string) (string, error) {
	s = strings.TrimSpace(s)
	if isNANPE164(s) {
		// Already canonical: libphonenumber returns it unchanged (the
		// property test holds this), at a fraction of the cost — a
		// 10,000-recipient group is mostly such numbers.
		return s, nil
	}
	if s == "" {
		return "", fmt.Errorf("empty number")
	}
	n, err := phonenumbers.Parse(s, DefaultRegion)
	if err != nil {
		return "", fmt.Errorf("not a phone number")
	}
	// Possible, not valid: fictional 555-01xx numbers must work in demos
	// and tests, and carriers are the final judge of validity anyway.
	if !phonenumbers.IsPossibleNumber(n) {
		return "", fmt.Errorf("not a possible phone number")
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// Plan validates a request and builds the Created event that starts the
// group: numbers normalized to E.164, duplicates merged (the first name
// wins), suppressed numbers marked so they are never sent to. It returns
// every problem it finds, each naming its field.
func Plan(id string, req Request, settings Settings, suppressed map[string]bool, now time.Time) (Created, []FieldError) {
	return PlanWith(id, req, settings, suppressed, now, NormalizeNumber)
}

// PlanWith is Plan with the number normalizer given, so that a caller who
// already normalized the numbers (to look up suppressions) does not parse
// each one twice.
func PlanWith(id string, req Request, settings Settings, suppressed map[string]bool, now time.Time,
	normalize func(string) (string, error)) (Created, []FieldError) {
	var errs []FieldError
	from, err := normalize(req.From)
	if err != nil {
		errs = append(errs, FieldError{"from", err.Error()})
	}
	mode := req.Mode
	if mode == "" {
		mode = crewcast.ModeIndividual
	}
	if mode != crewcast.ModeIndividual && mode != crewcast.ModeGroupMMS {
		errs = append(errs, FieldError{"mode", fmt.Sprintf("must be %q or %q", crewcast.ModeIndividual, crewcast.ModeGroupMMS)})
	}
	if strings.TrimSpace(req.Text) == "" && len(req.MediaURLs) == 0 {
		errs = append(errs, FieldError{"text", "required (or media_urls)"})
	}
	if len([]rune(req.Text)) > MaxTextLen {
		errs = append(errs, FieldError{"text", fmt.Sprintf("longer than %d characters", MaxTextLen)})
	}
	for i, u := range req.MediaURLs {
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			errs = append(errs, FieldError{fmt.Sprintf("media_urls[%d]", i), "must be an http(s) URL"})
		}
	}
	inputs := req.Recipients
	field := "recipients"
	if len(req.To) > 0 {
		if len(req.Recipients) > 0 {
			errs = append(errs, FieldError{"to", "give either to or recipients, not both"})
		}
		field = "to"
		inputs = make([]RecipientInput, len(req.To))
		for i, n := range req.To {
			inputs[i] = RecipientInput{Number: n}
		}
	}
	var roster []RosterEntry
	seen := map[string]bool{}
	for i, in := range inputs {
		n, err := normalize(in.Number)
		if err != nil {
			f := fmt.Sprintf("%s[%d]", field, i)
			if field == "recipients" {
				f += ".number"
			}
			errs = append(errs, FieldError{f, err.Error()})
			continue
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		if n == from {
			errs = append(errs, FieldError{fmt.Sprintf("%s[%d]", field, i), "is the sender's own number"})
			continue
		}
		roster = append(roster, RosterEntry{Number: n, Name: strings.TrimSpace(in.Name), Suppressed: suppressed[n]})
	}
	switch {
	case len(inputs) == 0:
		errs = append(errs, FieldError{"to", "at least one recipient is required"})
	case mode == crewcast.ModeGroupMMS && len(roster) > crewcast.MaxGroupMMS:
		errs = append(errs, FieldError{field, fmt.Sprintf("group_mms allows at most %d recipients, got %d", crewcast.MaxGroupMMS, len(roster))})
	case len(roster) > crewcast.MaxIndividualRecipients:
		errs = append(errs, FieldError{field, fmt.Sprintf("at most %d recipients, got %d", crewcast.MaxIndividualRecipients, len(roster))})
	}
	if len(errs) > 0 {
		return Created{}, errs
	}
	return Created{
		ID: id, From: from, Text: req.Text, MediaURLs: req.MediaURLs, Mode: mode, At: now,
		Settings: settings.WithDefaults(), Recipients: roster,
	}, nil
}

// isNANPE164 reports whether s is "+1" and ten digits whose area code does
// not start with 0 or 1: a possible North American number already in
// E.164 form.
func isNANPE164(s string) bool {
	if len(s) != 12 || s[0] != '+' || s[1] != '1' || s[2] < '2' || s[2] > '9' {
		return false
	}
	for i := 3; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
