package group

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
)

// Option is one answer a group asks for (docs/design.md §11): a reply of its
// Key or Label (case-insensitive) chooses it; Ack "yes" or "no" also makes
// YES/Y/OK or NO/N choose it.
type Option struct {
	Key   string       `json:"key"`
	Label string       `json:"label"`
	Ack   crewcast.Ack `json:"ack,omitempty"`
}

// Quorum is how many people must choose Response for the group to have
// what it asked for.
type Quorum struct {
	Response string `json:"response"`
	Count    int    `json:"count"`
	// KeepSending, when true, keeps sending to people not yet texted after
	// the quorum is met; by default they are canceled.
	KeepSending bool `json:"keep_sending,omitempty"`
	// Exact: the first Count people with Response are selected, later
	// ones are on standby (waves.go).
	Exact bool `json:"exact,omitempty"`
}

// QuorumState is a group's quorum and when it was met (zero: not yet).
type QuorumState struct {
	Quorum
	MetAt time.Time `json:"met_at,omitzero"`
}

// Answers is what a group asks of its recipients, as the projection keeps
// it beside the counts.
type Answers struct {
	Responses []Option     `json:"responses,omitempty"`
	Quorum    *QuorumState `json:"quorum,omitempty"`
}

// AnswersJSON returns the group's Answers as JSON, "" when it asks for
// nothing.
func (g *Group) AnswersJSON() string {
	if len(g.Responses) == 0 && g.Quorum == nil {
		return ""
	}
	b, _ := json.Marshal(Answers{Responses: g.Responses, Quorum: g.Quorum}) // plain data always marshals
	return string(b)
}

// Limits of response options.
const (
	MaxOptions     = 10
	maxOptionKey   = 16
	maxOptionLabel = 40
)

// CheckOptions validates response options and a quorum, naming the field
// of each problem (field is "responses" or the template's).
func CheckOptions(field string, opts []Option, q *Quorum) []FieldError {
	var errs []FieldError
	if len(opts) > MaxOptions {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf("at most %d response options, got %d", MaxOptions, len(opts))})
	}
	keys := map[string]bool{}
	labels := map[string]bool{}
	acks := map[crewcast.Ack]bool{}
	for i, o := range opts {
		f := fmt.Sprintf("%s[%d]", field, i)
		k := normalizeReply(o.Key)
		l := normalizeReply(o.Label)
		switch {
		case k == "" || len(o.Key) > maxOptionKey || strings.ContainsAny(o.Key, " ,="):
			errs = append(errs, FieldError{Field: f + ".key", Message: fmt.Sprintf("1 to %d characters without spaces, commas or =", maxOptionKey)})
		case keys[k] || labels[k]:
			errs = append(errs, FieldError{Field: f + ".key", Message: fmt.Sprintf("%q is used twice", o.Key)})
		case ParseKeyword(o.Key) != "":
			errs = append(errs, FieldError{Field: f + ".key", Message: fmt.Sprintf("%q is a carrier keyword (STOP, START, HELP…) and cannot be an answer", o.Key)})
		}
		switch {
		case l == "" || len(o.Label) > maxOptionLabel:
			errs = append(errs, FieldError{Field: f + ".label", Message: fmt.Sprintf("1 to %d characters", maxOptionLabel)})
		case labels[l] || (keys[l] && l != k):
			errs = append(errs, FieldError{Field: f + ".label", Message: fmt.Sprintf("%q is used twice", o.Label)})
		case ParseKeyword(o.Label) != "":
			errs = append(errs, FieldError{Field: f + ".label", Message: fmt.Sprintf("%q is a carrier keyword and cannot be an answer", o.Label)})
		}
		switch o.Ack {
		case crewcast.AckNone:
		case crewcast.AckYes, crewcast.AckNo:
			if acks[o.Ack] {
				errs = append(errs, FieldError{Field: f + ".ack", Message: fmt.Sprintf("only one option may have ack %q", o.Ack)})
			}
			acks[o.Ack] = true
		default:
			errs = append(errs, FieldError{Field: f + ".ack", Message: `must be "yes", "no" or absent`})
		}
		keys[k], labels[l] = true, true
	}
	if q != nil {
		found := false
		for _, o := range opts {
			found = found || o.Key == q.Response
		}
		if !found {
			errs = append(errs, FieldError{Field: "quorum.response", Message: fmt.Sprintf("%q is not the key of a response option", q.Response)})
		}
		if q.Count < 1 {
			errs = append(errs, FieldError{Field: "quorum.count", Message: "must be at least 1"})
		}
	}
	return errs
}

// Hint is the line appended to a message so that people know how to
// answer: "Reply 1 Coming, 2 Can't make it". Empty without options.
func Hint(opts []Option) string {
	if len(opts) == 0 {
		return ""
	}
	parts := make([]string, len(opts))
	for i, o := range opts {
		parts[i] = o.Key + " " + o.Label
	}
	return "Reply " + strings.Join(parts, ", ")
}

// ParseResponse returns the key of the option a reply chooses, or "" when
// it chooses none. STOP, START and HELP never choose an option. The whole
// reply is matched against keys and labels (case-insensitive, surrounding
// punctuation ignored); then its first word against keys; then YES/NO
// synonyms against the options' ack.
func ParseResponse(opts []Option, text string) string {
	if len(opts) == 0 || ParseKeyword(text) != "" {
		return ""
	}
	t := normalizeReply(text)
	if t == "" {
		return ""
	}
	for _, o := range opts {
		if t == normalizeReply(o.Key) || t == normalizeReply(o.Label) {
			return o.Key
		}
	}
	first := strings.FieldsFunc(t, func(r rune) bool { return r == ' ' || r == ',' || r == '-' || r == '.' || r == '!' })
	if len(first) > 0 {
		for _, o := range opts {
			if first[0] == normalizeReply(o.Key) {
				return o.Key
			}
		}
	}
	if ack := synonymAck(t, first); ack != crewcast.AckNone {
		for _, o := range opts {
			if o.Ack == ack {
				return o.Key
			}
		}
	}
	return ""
}

// synonymAck reads the YES/Y/OK and NO/N synonyms of docs/design.md §11 (only
// these: "1" and "2" are option keys here, not acknowledgements).
func synonymAck(t string, first []string) crewcast.Ack {
	cands := []string{t}
	if len(first) > 0 {
		cands = append(cands, first[0])
	}
	for _, c := range cands {
		switch c {
		case "yes", "y", "ok", "okay", "yep", "yeah":
			return crewcast.AckYes
		case "no", "n", "nope":
			return crewcast.AckNo
		}
	}
	return crewcast.AckNone
}
