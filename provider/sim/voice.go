package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Calls (docs/design.md §17): the simulator takes Twilio's Calls API
// (POST .../Calls.json with inline TwiML), reads what the TwiML says and
// where its <Gather> posts, and plays the call as scripted: the person
// presses a digit (the gather's action gets it, then the status callback
// says completed), does not answer (no-answer), is busy, is a machine
// (completed, AnsweredBy machine_start), or answers and hangs up without a
// digit. Every callback is signed like Twilio's (X-Twilio-Signature over
// the URL and the sorted form). A call is listed at GET /sim/calls and is
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

func newCallSID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "CA" + hex.EncodeToString(b)
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
	to, from, cb := form.Get("To"), form.Get("From"), form.Get("StatusCallback")
	say, action, terr := parseTwiML(form.Get("Twiml"))
	switch {
	case !validNumber(to):
		writeTwilioError(w, http.StatusBadRequest, 21211, "The 'To' number is not a valid phone number.")
		return
	case !validNumber(from):
		writeTwilioError(w, http.StatusBadRequest, 21212, "The 'From' number is not a valid phone number.")
		return
	case form.Get("Twiml") == "" && form.Get("Url") == "":
		writeTwilioError(w, http.StatusBadRequest, 21205, "Url or Twiml parameter is required.")
		return
	case terr != nil:
		writeTwilioError(w, http.StatusBadRequest, 12100, "Document parse failure")
		return
	case cb != "" && !validWebhookURL(cb), action != "" && !validWebhookURL(action):
		writeTwilioError(w, http.StatusBadRequest, 21609, "Invalid StatusCallback url.")
		return
	}
	now := s.cfg.Now()
	key := r.Header.Get("I-Twilio-Idempotency-Token")
	s.mu.Lock()
	if c, ok := s.callIdem[key]; ok && key != "" {
		s.mu.Unlock()
		writeJSON(w, http.StatusCreated, s.callView(c, now))
		return
	}
	answer := s.voiceAnswerForLocked(to)
	c := &Call{ID: newCallSID(), From: from, To: to, Say: say}
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
	if key != "" {
		s.callIdem[key] = c
	}
	s.ledger = append(s.ledger, Send{ID: c.ID, Provider: providerTwilio, Channel: "voice", From: from, To: to, Text: say, ReceivedAt: now})
	delay := time.Duration(s.faults.DelayMS[0]) * time.Millisecond
	s.mu.Unlock()
	s.disp.add(1)
	s.disp.after(delay, func(ctx context.Context) { s.playCall(ctx, c, action, cb, form.Get("MachineDetection") != "") })
	writeJSON(w, http.StatusCreated, s.callView(c, now))
}

// callView is the Call resource a create answers with.
func (s *Sim) callView(c *Call, now time.Time) map[string]any {
	return map[string]any{"sid": c.ID, "account_sid": s.keys.twilioSID, "to": c.To, "from": c.From, "status": "queued",
		"direction": "outbound-api", "api_version": twilioAPIVersion, "date_created": twTime(now),
		"uri": "/" + twilioAPIVersion + "/Accounts/" + s.keys.twilioSID + "/Calls/" + c.ID + ".json"}
}

// playCall posts the call's callbacks: the gather's digit (when one is
// pressed and the TwiML gathers), then the final status.
func (s *Sim) playCall(ctx context.Context, c *Call, action, statusCB string, amd bool) {
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
		s.deliver(ctx, s.twilioPost("call "+f.Get("CallStatus"), c.ID+":status", f, s.twilioTargets(statusCB)), 0, 1, s.disp.release)
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
	s.deliver(ctx, s.twilioPost("call gather", c.ID+":gather", f, s.twilioTargets(action)), 0, 1, final)
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
