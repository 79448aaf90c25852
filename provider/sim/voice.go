package sim

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Calls (docs/design.md §17): the simulator takes Twilio's Calls API
// (POST .../Calls.json with inline TwiML) and Telnyx's TeXML calls (POST
// /v2/texml/calls/{connection_id}, JSON with the TeXML inline), reads what the TwiML says and
// where its <Gather> posts, and plays the call as scripted: the person
// presses a digit (the gather's action gets it, then the status callback
// says completed), does not answer (no-answer), is busy, is a machine
// (completed, AnsweredBy machine_start), or answers and hangs up without a
// digit. Every callback is a form signed as that provider signs
// (X-Twilio-Signature over the URL and the sorted form; Telnyx's Ed25519
// over "timestamp|body"). A call is listed at GET /sim/calls and is
// a ledger entry (channel "voice").

// Voice answers a script or Faults.VoiceAnswer can give.
const (
	VoiceNone    = "none"    // rings out: no-answer
	VoiceBusy    = "busy"    // busy
	VoiceMachine = "machine" // answering machine: completed, AnsweredBy machine_start
	VoiceHangup  = "hangup"  // answered, hung up without a digit
)

// Call is one call the simulator was asked to place.
type Call struct {
	ID      string `json:"id"`
	From    string `json:"from"`
	To      string `json:"to"`
	Say     string `json:"say"`
	Digits  string `json:"digits"`
	Outcome string `json:"outcome"` // answered, no_answer, busy, machine
}

// validVoiceAnswer reports whether a is a voice answer: a digit 1-9, or
// none, busy, machine, hangup.
func validVoiceAnswer(a string) bool {
	switch a {
	case VoiceNone, VoiceBusy, VoiceMachine, VoiceHangup:
		return true
	}
	return len(a) == 1 && a[0] >= '1' && a[0] <= '9'
}

// voiceAnswerFor is how the person at number answers: their script, else
// the faults' voice_answer, else no answer.
func (s *Sim) voiceAnswerForLocked(number string) string {
	if a, ok := s.voiceScript[number]; ok {
		return a
	}
	if s.faults.VoiceAnswer != "" {
		return s.faults.VoiceAnswer
	}
	return VoiceNone
}

// SetVoiceScript fixes how the person at number answers calls ("" clears it).
func (s *Sim) SetVoiceScript(number, answer string) error {
	if answer != "" && !validVoiceAnswer(answer) {
		return fmt.Errorf("answer must be a digit 1-9, %s, %s, %s or %s", VoiceNone, VoiceBusy, VoiceMachine, VoiceHangup)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if answer == "" {
		delete(s.voiceScript, number)
	} else {
		s.voiceScript[number] = answer
	}
	return nil
}

// Calls returns every call placed, oldest first.
func (s *Sim) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, 0, len(s.calls))
	for _, c := range s.calls {
		out = append(out, *c)
	}
	return out
}

// twiml is the part of a call's TwiML the simulator plays.
type twiml struct {
	Gather []struct {
		Action string   `xml:"action,attr"`
		Say    []string `xml:"Say"`
	} `xml:"Gather"`
	Say []string `xml:"Say"`
}

func parseTwiML(s string) (say, action string, err error) {
	var t twiml
	if err := xml.Unmarshal([]byte(s), &t); err != nil {
		return "", "", err
	}
	var parts []string
	for _, g := range t.Gather {
		parts = append(parts, g.Say...)
		if action == "" {
			action = g.Action
		}
	}
	if len(t.Gather) == 0 {
		parts = append(parts, t.Say...)
	}
	return strings.Join(parts, " "), action, nil
}

func newCallSID(provider string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	if provider == providerTelnyx {
		return "v3:" + hex.EncodeToString(b)
	}
	return "CA" + hex.EncodeToString(b)
}

// telnyxFormPost is a TeXML callback: a form signed like every Telnyx
// webhook (Ed25519 over "timestamp|body"), each attempt at its own time.
func (s *Sim) telnyxFormPost(event string, form url.Values, targets []target) *webhookPost {
	body := []byte(form.Encode())
	return &webhookPost{event: "telnyx " + event, targets: targets, build: func(t target, n int) ([]byte, http.Header, error) {
		ts := strconv.FormatInt(s.cfg.Now().Unix(), 10)
		sig := ed25519.Sign(s.keys.telnyxPriv, append([]byte(ts+"|"), body...))
		h := http.Header{}
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		h.Set("User-Agent", "crewcast-sim (telnyx-texml)")
		h.Set("telnyx-signature-ed25519", base64.StdEncoding.EncodeToString(sig))
		h.Set("telnyx-timestamp", ts)
		return body, h, nil
	}}
}

// callRequest is a call to place, as either API took it.
type callRequest struct {
	provider, to, from, texml, statusCB, idemKey string
	amd                                          bool
}

func (s *Sim) twilioCall(w http.ResponseWriter, r *http.Request) {
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
	req := callRequest{provider: providerTwilio, to: form.Get("To"), from: form.Get("From"), texml: form.Get("Twiml"),
		statusCB: form.Get("StatusCallback"), idemKey: r.Header.Get("I-Twilio-Idempotency-Token"), amd: form.Get("MachineDetection") != ""}
	c, status, msg := s.placeCall(req)
	if status != 0 {
		writeTwilioError(w, http.StatusBadRequest, status, msg)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"sid": c.ID, "account_sid": s.keys.twilioSID, "to": c.To, "from": c.From, "status": "queued",
		"direction": "outbound-api", "api_version": twilioAPIVersion,
		"uri": "/" + twilioAPIVersion + "/Accounts/" + s.keys.twilioSID + "/Calls/" + c.ID + ".json"})
}

// telnyxCall is POST /v2/texml/calls/{connection_id}: JSON, the TeXML
// inline; the answer is the flat call object.
func (s *Sim) telnyxCall(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeTelnyxError(w, http.StatusRequestEntityTooLarge, tnxErr("10015", "Request body too large", ""))
		return
	}
	var b struct {
		From, To, Texml, StatusCallback, MachineDetection string
	}
	if err := json.Unmarshal(body, &b); err != nil {
		writeTelnyxError(w, http.StatusBadRequest, tnxErr("10015", "The request body is not valid JSON.", ""))
		return
	}
	req := callRequest{provider: providerTelnyx, to: b.To, from: b.From, texml: b.Texml, statusCB: b.StatusCallback,
		idemKey: r.Header.Get("Idempotency-Key"), amd: b.MachineDetection != ""}
	c, code, msg := s.placeCall(req)
	if code != 0 {
		writeTelnyxError(w, http.StatusUnprocessableEntity, tnxErr(strconv.Itoa(code), msg, ""))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"call_sid": c.ID, "from": c.From, "to": c.To, "status": "queued"})
}

// placeCall validates and records a call and starts playing it; a
// refusal is a Twilio-style code and message.
func (s *Sim) placeCall(req callRequest) (*Call, int, string) {
	say, action, terr := parseTwiML(req.texml)
	switch {
	case !validNumber(req.to):
		return nil, 21211, "The 'To' number is not a valid phone number."
	case !validNumber(req.from):
		return nil, 21212, "The 'From' number is not a valid phone number."
	case req.texml == "":
		return nil, 21205, "Url or Twiml parameter is required."
	case terr != nil:
		return nil, 12100, "Document parse failure"
	case req.statusCB != "" && !validWebhookURL(req.statusCB), action != "" && !validWebhookURL(action):
		return nil, 21609, "Invalid StatusCallback url."
	}
	now := s.cfg.Now()
	s.mu.Lock()
	idem := req.provider + "|" + req.idemKey
	if c, ok := s.callIdem[idem]; ok && req.idemKey != "" {
		s.mu.Unlock()
		return c, 0, ""
	}
	answer := s.voiceAnswerForLocked(req.to)
	c := &Call{ID: newCallSID(req.provider), From: req.from, To: req.to, Say: say}
	switch answer {
	case VoiceNone:
		c.Outcome = "no_answer"
	case VoiceBusy:
		c.Outcome = "busy"
	case VoiceMachine:
		c.Outcome = "machine"
	case VoiceHangup:
		c.Outcome = "answered"
	default:
		c.Outcome, c.Digits = "answered", answer
	}
	s.calls = append(s.calls, c)
	if req.idemKey != "" {
		s.callIdem[idem] = c
	}
	s.ledger = append(s.ledger, Send{ID: c.ID, Provider: req.provider, Channel: "voice", From: req.from, To: req.to, Text: say, ReceivedAt: now})
	delay := time.Duration(s.faults.DelayMS[0]) * time.Millisecond
	s.mu.Unlock()
	s.disp.add(1)
	s.disp.after(delay, func(ctx context.Context) { s.playCall(ctx, req.provider, c, action, req.statusCB, req.amd) })
	return c, 0, ""
}

// playCall posts the call's callbacks: the gather's digit (when one is
// pressed and the TwiML gathers), then the final status.
func (s *Sim) playCall(ctx context.Context, provider string, c *Call, action, statusCB string, amd bool) {
	post := func(event, token string, f url.Values, u string) *webhookPost {
		if provider == providerTelnyx {
			return s.telnyxFormPost(event, f, s.telnyxTargets(u))
		}
		return s.twilioPost(event, token, f, s.twilioTargets(u))
	}
	base := url.Values{"AccountSid": {s.keys.twilioSID}, "ApiVersion": {twilioAPIVersion}, "CallSid": {c.ID},
		"From": {c.From}, "To": {c.To}, "Direction": {"outbound-api"}}
	final := func() {
		if statusCB == "" {
			s.disp.release()
			return
		}
		f := cloneValues(base)
		switch c.Outcome {
		case "no_answer":
			f.Set("CallStatus", "no-answer")
		case "busy":
			f.Set("CallStatus", "busy")
		default:
			f.Set("CallStatus", "completed")
			f.Set("CallDuration", "12")
			if amd {
				f.Set("AnsweredBy", "human")
				if c.Outcome == "machine" {
					f.Set("AnsweredBy", "machine_start")
				}
			}
		}
		s.deliver(ctx, post("call "+f.Get("CallStatus"), c.ID+":status", f, statusCB), 0, 1, s.disp.release)
	}
	if c.Digits == "" || action == "" {
		final()
		return
	}
	f := cloneValues(base)
	f.Set("CallStatus", "in-progress")
	f.Set("Digits", c.Digits)
	if amd {
		f.Set("AnsweredBy", "human")
	}
	s.deliver(ctx, post("call gather", c.ID+":gather", f, action), 0, 1, final)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

type voiceScriptBody struct {
	To     string `json:"to"`
	Answer string `json:"answer"`
}

func (s *Sim) handleVoiceScript(w http.ResponseWriter, r *http.Request) {
	var b voiceScriptBody
	if err := decodeStrict(w, r, &b); err != nil {
		writeSimError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	if !validNumber(b.To) {
		writeSimError(w, http.StatusUnprocessableEntity, "invalid_script", "to must be an E.164 number")
		return
	}
	if err := s.SetVoiceScript(b.To, b.Answer); err != nil {
		writeSimError(w, http.StatusUnprocessableEntity, "invalid_script", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
