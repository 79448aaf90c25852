package twilio

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/crewcast/crewcast"
)

// message is the subset of Twilio's Message resource crewcast uses.
type message struct {
	SID       flexString `json:"sid"`
	To        flexString `json:"to"`
	Status    flexString `json:"status"`
	ErrorCode flexString `json:"error_code"` // an integer or null
}

// recipientStatus maps the message's status; unrecognized is used for a
// word Twilio has not documented ("sent" on a send response, "unknown"
// on a lookup).
func (m *message) recipientStatus(unrecognized crewcast.Status) crewcast.RecipientStatus {
	return recipientStatus(m.To.String(), m.Status.String(), m.ErrorCode.String(), unrecognized)
}

func recipientStatus(number, providerStatus, code string, unrecognized crewcast.Status) crewcast.RecipientStatus {
	st, ok := MapStatus(providerStatus)
	if !ok {
		st = unrecognized
	}
	rs := crewcast.RecipientStatus{Number: number, Status: st, ProviderStatus: providerStatus}
	switch st {
	case crewcast.StatusFailed:
		rs.ErrorCode = code
		rs.ErrorClass, rs.OptOut = ClassifyDelivery(code)
	case crewcast.StatusUnknown:
		rs.ErrorCode = code
		rs.ErrorClass = crewcast.ClassUncertain
	}
	return rs
}

// apiError is Twilio's error body:
// {"code":int,"message":...,"more_info":...,"status":int}.
type apiError struct {
	Code    flexString `json:"code"`
	Message flexString `json:"message"`
}

// flexString is a string that also accepts a JSON number or boolean (kept
// as written) and null (empty): Twilio's codes are integers in JSON and
// strings in forms.
type flexString string

// UnmarshalJSON implements the leniency described on flexString.
func (s *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return errors.New("empty JSON value")
	}
	switch b[0] {
	case '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexString(v)
	case 'n':
		*s = ""
	case '{', '[':
		return errors.New("want a string, got an object or array")
	default:
		*s = flexString(b)
	}
	return nil
}

func (s flexString) String() string { return string(s) }
