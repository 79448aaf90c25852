package sim

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const twilioAPIVersion = "2010-04-01"

// twMessage is Twilio's Message resource (docs/providers.md §2.1).
type twMessage struct {
	AccountSID          string            `json:"account_sid"`
	APIVersion          string            `json:"api_version"`
	Body                string            `json:"body"`
	DateCreated         string            `json:"date_created"`
	DateSent            *string           `json:"date_sent"`
	DateUpdated         string            `json:"date_updated"`
	Direction           string            `json:"direction"`
	ErrorCode           *int              `json:"error_code"`
	ErrorMessage        *string           `json:"error_message"`
	From                string            `json:"from"`
	MessagingServiceSID *string           `json:"messaging_service_sid"`
	NumMedia            string            `json:"num_media"`
	NumSegments         string            `json:"num_segments"`
	Price               *string           `json:"price"`
	PriceUnit           string            `json:"price_unit"`
	SID                 string            `json:"sid"`
	Status              string            `json:"status"`
	SubresourceURIs     map[string]string `json:"subresource_uris"`
	To                  string            `json:"to"`
	URI                 string            `json:"uri"`
}

// twError is Twilio's REST error body.
type twError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// Twilio error messages for the ErrorCodes the simulator emits.
var twMessages = map[string]string{
	"30001": "Queue overflow",
	"30002": "Account suspended",
	"30003": "Unreachable destination handset",
	"30004": "Message blocked",
	"30005": "Unknown destination handset",
	"30006": "Landline or unreachable carrier",
	"30007": "Message filtered",
	"30008": "Unknown error",
}

func writeTwilioError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, twError{
		Code: code, Message: msg, Status: status,
		MoreInfo: "https://www.twilio.com/docs/errors/" + strconv.Itoa(code),
	})
}

// twTime formats like Twilio's REST API (RFC 2822).
func twTime(t time.Time) string { return t.UTC().Format(time.RFC1123Z) }

func (s *Sim) twilioAuth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok ||
			subtle.ConstantTimeCompare([]byte(user), []byte(s.keys.twilioSID)) != 1 ||
			subtle.ConstantTimeCompare([]byte(pass), []byte(s.keys.twilioTok)) != 1 ||
			r.PathValue("sid") != s.keys.twilioSID {
			w.Header().Set("WWW-Authenticate", `Basic realm="Twilio API"`)
			writeTwilioError(w, http.StatusUnauthorized, 20003, "Authenticate")
			return
		}
		next(w, r)
	}
}

type twSendRequest struct {
	to, from, body, callback string
	media                    []string
}

// parseTwilioSend validates a create-message form; it returns the error
// code and message for a 400.
func parseTwilioSend(form url.Values) (twSendRequest, int, string) {
	req := twSendRequest{
		to: form.Get("To"), from: form.Get("From"), body: form.Get("Body"),
		callback: form.Get("StatusCallback"), media: form["MediaUrl"],
	}
	switch {
	case req.to == "":
		return req, 21604, "A 'To' phone number is required."
	case !validNumber(req.to):
		return req, 21211, "The 'To' number " + "is not a valid phone number."
	case req.from == "":
		return req, 21603, "A 'From' phone number is required."
	case !validNumber(req.from):
		return req, 21212, "The 'From' number is not a valid phone number."
	case req.from == req.to:
		return req, 21266, "'To' and 'From' number cannot be the same."
	case req.body == "" && len(req.media) == 0:
		return req, 21602, "Message body is required."
	case len(req.media) > 10:
		return req, 21623, "Number of media files exceeds allowed limit."
	case req.callback != "" && !validWebhookURL(req.callback):
		return req, 21609, "Invalid StatusCallback url."
	}
	return req, 0, ""
}

func (s *Sim) twilioSend(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeTwilioError(w, http.StatusRequestEntityTooLarge, 20413, "Request body too large")
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeTwilioError(w, http.StatusBadRequest, 20001, "The request body is not a valid form.")
		return
	}
	req, code, msg := parseTwilioSend(form)
	if code != 0 {
		writeTwilioError(w, http.StatusBadRequest, code, msg)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		key = r.Header.Get("I-Twilio-Idempotency-Token")
	}
	a := s.accept(providerTwilio, key, bodyHash(r.URL.Path, body), func(id string, now time.Time) *message {
		if len(req.media) > 0 {
			id = "MM" + strings.TrimPrefix(id, "SM")
		}
		return &message{
			provider: providerTwilio, id: id, from: req.from, text: req.body, media: req.media,
			webhookURL: req.callback, receivedAt: now, updatedAt: now,
			recips: []*recipientState{{number: req.to, status: "queued"}},
		}
	})
	switch {
	case a.conflict:
		writeTwilioError(w, http.StatusUnprocessableEntity, 20422, "The idempotency key was used with a different request.")
		return
	case a.fault == faultRateLimit, a.full:
		w.Header().Set("Retry-After", "1")
		writeTwilioError(w, http.StatusTooManyRequests, 20429, "Too Many Requests")
		return
	case a.fault == fault5xx:
		writeTwilioError(w, http.StatusInternalServerError, 20500, "Internal Server Error")
		return
	case a.optOut != "":
		writeTwilioError(w, http.StatusBadRequest, 21610, "Attempt to send to unsubscribed recipient")
		return
	}
	s.startChains(a.chains)
	if a.timeout {
		s.abandon(r)
	}
	// An idempotent replay repeats the original answer, 201 included.
	writeJSON(w, http.StatusCreated, s.twilioView(a.m))
}

func (s *Sim) twilioView(m *message) twMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := m.recips[0]
	v := twMessage{
		AccountSID: s.keys.twilioSID, APIVersion: twilioAPIVersion, Body: m.text,
		DateCreated: twTime(m.receivedAt), DateUpdated: twTime(m.updatedAt),
		Direction: "outbound-api", From: m.from,
		NumMedia: strconv.Itoa(len(m.media)), NumSegments: "1",
		PriceUnit: "USD", SID: m.id, Status: r.status, To: r.number,
	}
	base := "/" + twilioAPIVersion + "/Accounts/" + s.keys.twilioSID + "/Messages/" + m.id
	v.URI = base + ".json"
	v.SubresourceURIs = map[string]string{"media": base + "/Media.json"}
	if !r.sentAt.IsZero() {
		d := twTime(r.sentAt)
		v.DateSent = &d
	}
	if r.code != "" {
		if n, err := strconv.Atoi(r.code); err == nil {
			v.ErrorCode = &n
		}
		msg := twMessages[r.code]
		v.ErrorMessage = &msg
	}
	return v
}

func (s *Sim) twilioGet(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutSuffix(r.PathValue("file"), ".json")
	s.mu.Lock()
	m := s.messages[providerTwilio+"|"+id]
	s.mu.Unlock()
	if !ok || m == nil {
		writeTwilioError(w, http.StatusNotFound, 20404, "The requested resource was not found")
		return
	}
	writeJSON(w, http.StatusOK, s.twilioView(m))
}
