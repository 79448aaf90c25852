package sim

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Telnyx wire types (docs/providers.md §1.4, §1.6). Field order follows the
// reference; nullable fields are pointers so they serialise as null.

type tnxAddr struct {
	PhoneNumber string `json:"phone_number"`
	Status      string `json:"status,omitempty"`
	Carrier     string `json:"carrier"`
	LineType    string `json:"line_type"`
}

type tnxMedia struct {
	URL         string  `json:"url"`
	ContentType *string `json:"content_type"`
	SHA256      *string `json:"sha256"`
	Size        *int    `json:"size"`
}

type tnxCost struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

type tnxError struct {
	Code   string          `json:"code"`
	Title  string          `json:"title"`
	Detail string          `json:"detail,omitempty"`
	Source *tnxErrorSource `json:"source,omitempty"`
}

type tnxErrorSource struct {
	Pointer   string `json:"pointer,omitempty"`
	Parameter string `json:"parameter,omitempty"`
}

type tnxMessage struct {
	RecordType         string     `json:"record_type"`
	Direction          string     `json:"direction"`
	ID                 string     `json:"id"`
	GroupMessageID     string     `json:"group_message_id,omitempty"`
	Type               string     `json:"type"`
	MessagingProfileID string     `json:"messaging_profile_id"`
	OrganizationID     string     `json:"organization_id"`
	From               tnxAddr    `json:"from"`
	To                 []tnxAddr  `json:"to"`
	CC                 []tnxAddr  `json:"cc"`
	Text               string     `json:"text"`
	Subject            *string    `json:"subject"`
	Media              []tnxMedia `json:"media"`
	WebhookURL         *string    `json:"webhook_url"`
	WebhookFailoverURL *string    `json:"webhook_failover_url"`
	Encoding           string     `json:"encoding"`
	Parts              int        `json:"parts"`
	NumChars           int        `json:"num_chars"`
	Tags               []string   `json:"tags"`
	Cost               *tnxCost   `json:"cost"`
	ReceivedAt         string     `json:"received_at"`
	SentAt             *string    `json:"sent_at"`
	CompletedAt        *string    `json:"completed_at"`
	ValidUntil         *string    `json:"valid_until"`
	Errors             []tnxError `json:"errors"`
}

type tnxEvent struct {
	RecordType string          `json:"record_type"`
	ID         string          `json:"id"`
	EventType  string          `json:"event_type"`
	OccurredAt string          `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload"`
}

type tnxEnvelope struct {
	Data json.RawMessage `json:"data"`
	Meta tnxMeta         `json:"meta"`
}

type tnxMeta struct {
	Attempt     int    `json:"attempt"`
	DeliveredTo string `json:"delivered_to"`
}

// Simulated account facts that appear in payloads.
const (
	simProfileID = "40017a3e-5c1e-4b7a-9d3e-5a1b0c0ffee0"
	simOrgID     = "c0ffee00-0000-4000-8000-00000000c0de"
	simCarrier   = "Sim Wireless"
	simLineType  = "Wireless"
)

// tnxTime formats like the Telnyx examples: UTC, milliseconds, "Z".
func tnxTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func tnxTimePtr(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := tnxTime(t)
	return &s
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Telnyx error titles for the codes the simulator emits (docs/providers.md §1.10).
var tnxTitles = map[string]string{
	"10004": "Missing required parameter",
	"10005": "Resource not found",
	"10007": "Unexpected error",
	"10009": "Authentication failed",
	"10011": "Too many requests",
	"10015": "Invalid request",
	"10016": "Phone number must be in +E.164 format",
	"40001": "Not routable",
	"40002": "Blocked as spam - temporary",
	"40003": "Blocked as spam - permanent",
	"40004": "Rejected by destination",
	"40005": "Message expired during transmission",
	"40006": "Recipient server unavailable",
	"40008": "Undeliverable",
	"40009": "Invalid message body",
	"40011": "Too many requests",
	"40012": "Invalid destination number",
	"40013": "Invalid source number",
	"40014": "Message expired in queue",
	"40015": "Blocked by spam filter",
	"40300": "Blocked due to STOP message",
}

func tnxErr(code, detail, pointer string) tnxError {
	e := tnxError{Code: code, Title: tnxTitles[code], Detail: detail}
	if e.Title == "" {
		e.Title = "Delivery failed"
	}
	if pointer != "" {
		e.Source = &tnxErrorSource{Pointer: pointer}
	}
	return e
}

// The HTTP status of a synchronous 40300 varies in the wild (400/403/422);
// clients must classify by code, and the simulator picks 403.
const optOutHTTPStatus = http.StatusForbidden

func writeTelnyxError(w http.ResponseWriter, status int, errs ...tnxError) {
	writeJSON(w, status, map[string]any{"errors": errs})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // the client going away is not our error
}

// writeTelnyxRateLimited answers 429 + 10011 with the rate-limit headers.
func writeTelnyxRateLimited(w http.ResponseWriter) {
	h := w.Header()
	h.Set("x-ratelimit-limit", "100")
	h.Set("x-ratelimit-remaining", "0")
	h.Set("x-ratelimit-reset", "1")
	h.Set("Retry-After", "1")
	writeTelnyxError(w, http.StatusTooManyRequests, tnxErr("10011", "Too many requests, slow down.", ""))
}

func (s *Sim) telnyxAuthorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.keys.telnyxAPI)) == 1
}

func (s *Sim) telnyxAuth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.telnyxAuthorized(r) {
			writeTelnyxError(w, http.StatusUnauthorized, tnxErr("10009", "The API key is missing or wrong.", ""))
			return
		}
		next(w, r)
	}
}

// maxBody bounds request bodies (Telnyx caps MMS media at 1 MB, and media
// are URLs, so a send body is small).
const maxBody = 1 << 20

// readBody reads at most maxBody bytes, reporting an over-long body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

type tnxSendRequest struct {
	From               string          `json:"from"`
	To                 json.RawMessage `json:"to"`
	Text               string          `json:"text"`
	Subject            string          `json:"subject"`
	MediaURLs          []string        `json:"media_urls"`
	Type               string          `json:"type"`
	WebhookURL         string          `json:"webhook_url"`
	WebhookFailoverURL string          `json:"webhook_failover_url"`
}

// parseTelnyxSend decodes and validates a send; to is one number for
// /v2/messages and a list for group_mms.
func parseTelnyxSend(body []byte, group bool) (tnxSendRequest, []string, *tnxError, int) {
	var req tnxSendRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		e := tnxErr("10015", "The request body is not valid JSON: "+err.Error(), "")
		return req, nil, &e, http.StatusBadRequest
	}
	bad := func(code, detail, pointer string) (tnxSendRequest, []string, *tnxError, int) {
		e := tnxErr(code, detail, pointer)
		return req, nil, &e, http.StatusUnprocessableEntity
	}
	if req.From == "" {
		return bad("10004", "from is required.", "/from")
	}
	if !validNumber(req.From) {
		return bad("10016", "from must be an E.164 number.", "/from")
	}
	var to []string
	if len(req.To) == 0 || string(req.To) == "null" {
		return bad("10004", "to is required.", "/to")
	}
	if group {
		if err := json.Unmarshal(req.To, &to); err != nil {
			return bad("10015", "to must be a list of numbers.", "/to")
		}
		if len(to) == 0 {
			return bad("10004", "to must name at least one recipient.", "/to")
		}
		if len(to) > 8 {
			return bad("10015", "A group MMS allows at most 8 recipients.", "/to")
		}
	} else {
		var one string
		if err := json.Unmarshal(req.To, &one); err != nil {
			return bad("10015", "to must be one number.", "/to")
		}
		to = []string{one}
	}
	seen := map[string]bool{req.From: true}
	for i, n := range to {
		if !validNumber(n) {
			return bad("10016", "Every recipient must be an E.164 number.", fmt.Sprintf("/to/%d", i))
		}
		if seen[n] {
			return bad("10015", "Recipients must be distinct and differ from the sender.", fmt.Sprintf("/to/%d", i))
		}
		seen[n] = true
	}
	if req.Text == "" && len(req.MediaURLs) == 0 {
		return bad("10004", "text or media_urls is required.", "/text")
	}
	for _, u := range []string{req.WebhookURL, req.WebhookFailoverURL} {
		if u != "" && !validWebhookURL(u) {
			return bad("10015", "Webhook URLs must be absolute http(s) URLs.", "/webhook_url")
		}
	}
	return req, to, nil, 0
}

// bodyHash identifies a request for Idempotency-Key reuse checks.
func bodyHash(path string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// acceptance is what the locked part of a send decided.
type acceptance struct {
	m        *message
	fault    requestFault
	optOut   string // the opted-out recipient, if refused for that
	full     bool
	conflict bool // Idempotency-Key reused with another body
	timeout  bool // the accept-timeout fault
	chains   []*chain
}

// accept runs the shared acceptance sequence under s.mu: idempotent replay,
// pre-acceptance faults, opt-out, admission, then recording and planning.
// The order of random draws depends only on the order of requests.
func (s *Sim) accept(provider, idemKey, hash string, build func(id string, now time.Time) *message) acceptance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var a acceptance
	if idemKey != "" {
		if rec, ok := s.idem[provider+"|"+idemKey]; ok {
			if rec.hash != hash {
				a.conflict = true
				return a
			}
			a.m = s.messages[provider+"|"+rec.id]
			return a
		}
	}
	f := s.faults
	s.dec.draw(func(d *draws) { a.fault = d.preAccept(f) })
	if a.fault != faultNone {
		return a
	}
	var id string
	s.dec.draw(func(d *draws) { id = d.messageID(provider) })
	m := build(id, s.cfg.Now())
	for _, r := range m.recips {
		if s.optOuts[optOutKey(provider, m.from, r.number)] {
			a.optOut = r.number
			return a
		}
	}
	if err := s.disp.reserve(len(m.recips)); err != nil {
		a.full = true
		return a
	}
	s.dec.draw(func(d *draws) {
		for i := range m.recips {
			a.chains = append(a.chains, &chain{m: m, ri: i, plan: d.planRecipient(f, provider)})
		}
		a.timeout = d.hit(f.AcceptTimeoutRate)
	})
	for _, c := range a.chains {
		if applyScript(&c.plan, f.Script[m.recips[c.ri].number], f, provider) {
			a.timeout = true
		}
	}
	s.recordLocked(m)
	if idemKey != "" {
		s.idem[provider+"|"+idemKey] = idemRecord{hash: hash, id: m.id}
	}
	a.m = m
	return a
}

func (s *Sim) telnyxSend(group bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r)
		if err != nil {
			writeTelnyxError(w, http.StatusRequestEntityTooLarge, tnxErr("10015", "The request body is too large.", ""))
			return
		}
		req, to, verr, status := parseTelnyxSend(body, group)
		if verr != nil {
			writeTelnyxError(w, status, *verr)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if len(key) > 255 {
			writeTelnyxError(w, http.StatusUnprocessableEntity, tnxErr("10015", "Idempotency-Key is longer than 255 characters.", ""))
			return
		}
		a := s.accept(providerTelnyx, key, bodyHash(r.URL.Path, body), func(id string, now time.Time) *message {
			m := &message{
				provider: providerTelnyx, id: id, group: group, from: req.From,
				text: req.Text, subject: req.Subject, media: req.MediaURLs,
				webhookURL: req.WebhookURL, failover: req.WebhookFailoverURL,
				receivedAt: now, updatedAt: now,
			}
			for _, n := range to {
				m.recips = append(m.recips, &recipientState{number: n, status: "queued"})
			}
			return m
		})
		switch {
		case a.conflict:
			writeTelnyxError(w, http.StatusUnprocessableEntity, tnxErr("10015", "The Idempotency-Key was used with a different request.", ""))
			return
		case a.fault == faultRateLimit, a.full:
			writeTelnyxRateLimited(w)
			return
		case a.fault == fault5xx:
			writeTelnyxError(w, http.StatusInternalServerError, tnxErr("10007", "An unexpected error occurred.", ""))
			return
		case a.optOut != "":
			writeTelnyxError(w, optOutHTTPStatus, tnxErr("40300", "A block rule stops messages from this sender to the recipient (STOP).", "/to"))
			return
		}
		s.startChains(a.chains)
		if a.timeout {
			s.abandon(r)
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": s.telnyxView(a.m, -1)})
	}
}

// telnyxView renders a message; ri ≥ 0 renders one recipient of it (the
// per-recipient record of a group MMS: that recipient in to, the others in
// cc), ri < 0 the whole message.
func (s *Sim) telnyxView(m *message, ri int) tnxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return telnyxViewLocked(m, ri)
}

func telnyxViewLocked(m *message, ri int) tnxMessage {
	v := tnxMessage{
		RecordType: "message", Direction: "outbound", ID: m.id, Type: "SMS",
		MessagingProfileID: simProfileID, OrganizationID: simOrgID,
		From:       tnxAddr{PhoneNumber: m.from, Carrier: "Telnyx", LineType: "Wireless"},
		To:         []tnxAddr{},
		CC:         []tnxAddr{},
		Text:       m.text,
		Subject:    strPtr(m.subject),
		Media:      []tnxMedia{},
		WebhookURL: strPtr(m.webhookURL), WebhookFailoverURL: strPtr(m.failover),
		Encoding: "GSM-7", Parts: 1, NumChars: utf8.RuneCountInString(m.text),
		Tags:       []string{},
		Cost:       &tnxCost{Amount: "0.0040", Currency: "USD"},
		ReceivedAt: tnxTime(m.receivedAt),
		ValidUntil: tnxTimePtr(m.receivedAt.Add(4 * time.Hour)),
		Errors:     []tnxError{},
	}
	if m.group {
		v.GroupMessageID = m.id
	}
	if m.group || len(m.media) > 0 {
		v.Type = "MMS"
	}
	for _, u := range m.media {
		v.Media = append(v.Media, tnxMedia{URL: u})
	}
	var sentAt, completedAt time.Time
	for i, r := range m.recips {
		a := tnxAddr{PhoneNumber: r.number, Status: r.status, Carrier: simCarrier, LineType: simLineType}
		switch {
		case ri < 0 || i == ri:
			v.To = append(v.To, a)
			if r.code != "" {
				v.Errors = append(v.Errors, tnxErr(r.code, "Delivery to "+r.number+" failed.", ""))
			}
			sentAt, completedAt = laterOf(sentAt, r.sentAt), laterOf(completedAt, r.completedAt)
		default:
			a.Status = ""
			v.CC = append(v.CC, a)
		}
	}
	v.SentAt, v.CompletedAt = tnxTimePtr(sentAt), tnxTimePtr(completedAt)
	return v
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *Sim) telnyxGet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m := s.messages[providerTelnyx+"|"+r.PathValue("id")]
	s.mu.Unlock()
	if m == nil {
		writeTelnyxError(w, http.StatusNotFound, tnxErr("10005", "No message with this id.", ""))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": s.telnyxView(m, -1)})
}

func (s *Sim) telnyxGetGroup(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	m := s.messages[providerTelnyx+"|"+r.PathValue("id")]
	var out []tnxMessage
	if m != nil && m.group {
		for i := range m.recips {
			out = append(out, telnyxViewLocked(m, i))
		}
	}
	s.mu.Unlock()
	if out == nil {
		writeTelnyxError(w, http.StatusNotFound, tnxErr("10005", "No group message with this id.", ""))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": out})
}
