package telnyx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/crewcast/crewcast"
)

// message is the subset of Telnyx's OutboundMessage (also the webhook
// payload, inbound included) that crewcast uses. Every field decodes
// leniently: examples disagree on shapes (from as string or object), nulls
// are common, and unknown fields are ignored. cost and cost_breakdown are
// deliberately absent: their amount is a string in some examples and a
// number in others, and crewcast does not bill.
type message struct {
	ID             flexString `json:"id"`
	GroupMessageID flexString `json:"group_message_id"`
	From           party      `json:"from"`
	To             parties    `json:"to"`
	CC             parties    `json:"cc"`
	Text           flexString `json:"text"`
	Media          mediaList  `json:"media"`
	Errors         []apiError `json:"errors"`
}

// party is one address with, for outbound recipients, its status.
type party struct {
	PhoneNumber string
	Status      string
}

// UnmarshalJSON accepts a bare string ("+15550100001"), an object with
// phone_number/status, or null.
func (p *party) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*p = party{}
		return nil
	case len(b) > 0 && b[0] == '"':
		s, err := jsonString(b)
		if err != nil {
			return err
		}
		*p = party{PhoneNumber: s}
		return nil
	}
	var obj struct {
		PhoneNumber flexString `json:"phone_number"`
		Status      flexString `json:"status"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*p = party{PhoneNumber: obj.PhoneNumber.String(), Status: obj.Status.String()}
	return nil
}

// parties is a list of addresses; a single address where a list belongs
// is read as a list of one.
type parties []party

// UnmarshalJSON accepts an array of parties, a single party, or null.
func (ps *parties) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*ps = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var list []party
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		*ps = list
		return nil
	}
	var one party
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*ps = parties{one}
	return nil
}

// mediaList is the URLs of media[]: objects with url, or bare strings.
type mediaList []string

// UnmarshalJSON accepts [{"url":...}], ["..."], or null; entries without a
// URL are dropped.
func (m *mediaList) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var out mediaList
	for _, r := range raw {
		r = bytes.TrimSpace(r)
		var u string
		if len(r) > 0 && r[0] == '"' {
			if err := json.Unmarshal(r, &u); err != nil {
				return err
			}
		} else {
			var obj struct {
				URL flexString `json:"url"`
			}
			if err := json.Unmarshal(r, &obj); err != nil {
				return err
			}
			u = obj.URL.String()
		}
		if u != "" {
			out = append(out, u)
		}
	}
	*m = out
	return nil
}

// apiError is one entry of errors[], in API responses and in payloads.
type apiError struct {
	Code   flexString `json:"code"`
	Title  flexString `json:"title"`
	Detail flexString `json:"detail"`
	Source struct {
		Pointer   flexString `json:"pointer"`
		Parameter flexString `json:"parameter"`
	} `json:"source"`
	Meta json.RawMessage `json:"meta"`
}

func (e apiError) text() string {
	switch {
	case e.Title != "" && e.Detail != "":
		return e.Title.String() + ": " + e.Detail.String()
	case e.Detail != "":
		return e.Detail.String()
	}
	return e.Title.String()
}

// mentions reports whether the error names number anywhere; Telnyx says
// errors[] "may name addressees" without saying where.
func (e apiError) mentions(number string) bool {
	for _, s := range []string{e.Detail.String(), e.Title.String(), e.Source.Parameter.String(),
		e.Source.Pointer.String(), string(e.Meta)} {
		if strings.Contains(s, number) {
			return true
		}
	}
	return false
}

// flexString is a string that also accepts a JSON number or boolean (kept
// as written) and null (empty). Telnyx documents error codes as strings;
// tolerating numbers costs nothing.
type flexString string

// UnmarshalJSON implements the leniency described on flexString.
func (s *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("empty JSON value")
	}
	switch b[0] {
	case '"':
		v, err := jsonString(b)
		if err != nil {
			return err
		}
		*s = flexString(v)
	case 'n':
		*s = ""
	case '{', '[':
		return fmt.Errorf("want a string, got an object or array")
	default: // number or boolean, validated by the outer decoder
		*s = flexString(b)
	}
	return nil
}

func (s flexString) String() string { return string(s) }

// jsonString decodes a JSON string literal. Most values in a webhook
// (ids, numbers, statuses, timestamps) are plain printable ASCII without
// escapes, and the outer decoder has already validated the document, so
// those are sliced out directly; anything else goes through
// encoding/json, which handles escapes and invalid UTF-8 its own way.
func jsonString(b []byte) (string, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		plain := true
		for _, c := range b[1 : len(b)-1] {
			if c < 0x20 || c > 0x7e || c == '\\' || c == '"' {
				plain = false
				break
			}
		}
		if plain {
			return string(b[1 : len(b)-1]), nil
		}
	}
	var v string
	err := json.Unmarshal(b, &v)
	return v, err
}

// flexInt is an integer that also accepts a numeric string and null.
type flexInt int

// UnmarshalJSON implements the leniency described on flexInt.
func (n *flexInt) UnmarshalJSON(b []byte) error {
	var s flexString
	if err := s.UnmarshalJSON(b); err != nil {
		return err
	}
	if s == "" {
		*n = 0
		return nil
	}
	v, err := strconv.Atoi(string(s))
	if err != nil {
		return fmt.Errorf("want an integer")
	}
	*n = flexInt(v)
	return nil
}

// recipientStatuses maps each to[] entry of msg to crewcast's vocabulary.
// unrecognized is the status for a word Telnyx has not documented: "sent"
// where the message is known to have been accepted (send responses,
// message.sent), "unknown" where the word should be final.
func recipientStatuses(msg *message, unrecognized crewcast.Status) []crewcast.RecipientStatus {
	out := make([]crewcast.RecipientStatus, 0, len(msg.To))
	for _, to := range msg.To {
		st, ok := MapStatus(to.Status)
		if !ok {
			st = unrecognized
		}
		rs := crewcast.RecipientStatus{Number: to.PhoneNumber, Status: st, ProviderStatus: to.Status}
		switch st {
		case crewcast.StatusFailed:
			rs.ErrorCode = errorCodeFor(msg, to.PhoneNumber)
			rs.ErrorClass, rs.OptOut = ClassifyDelivery(rs.ErrorCode)
		case crewcast.StatusUnknown:
			rs.ErrorCode = errorCodeFor(msg, to.PhoneNumber)
			rs.ErrorClass = crewcast.ClassUncertain
		}
		out = append(out, rs)
	}
	return out
}

// errorCodeFor picks the code of the error that names number; failing
// that, the first error that names no recipient of msg at all (with one
// recipient per webhook, Telnyx's practice, that is the recipient's error).
// An error that names another recipient is never borrowed.
func errorCodeFor(msg *message, number string) string {
	for _, e := range msg.Errors {
		if e.Code != "" && number != "" && e.mentions(number) {
			return e.Code.String()
		}
	}
next:
	for _, e := range msg.Errors {
		if e.Code == "" {
			continue
		}
		for _, to := range msg.To {
			if to.PhoneNumber != "" && e.mentions(to.PhoneNumber) {
				continue next
			}
		}
		return e.Code.String()
	}
	return ""
}
