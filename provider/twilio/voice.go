package twilio

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/crewcast/crewcast"
)

// Voice (docs/design.md §17, docs/providers.md "Voice"): a ladder's voice
// step is one call made with POST .../Calls.json and inline TwiML that
// speaks the message and the options inside a <Gather> of one digit. The
// gather's action and the status callback are form posts signed exactly
// like messaging webhooks (X-Twilio-Signature over the URL and the sorted
// parameters), verified with Verify before anything is read.

// CallRequest is one call to place.
type CallRequest struct {
	From, To string
	// TwiML is what the call runs once answered (GatherTwiML).
	TwiML string
	// StatusCallback receives the call's final status (CallStatus, and
	// AnsweredBy when MachineDetection is on).
	StatusCallback string
	// MachineDetection asks for answering-machine detection
	// (MachineDetection=Enable): a machine is an outcome of its own.
	MachineDetection bool
	// Timeout is how long the phone rings, in seconds (0: Twilio's 60).
	Timeout int
	// IdempotencyKey is sent like a message's when SendIdempotencyKey is set.
	IdempotencyKey string
}

// PlaceCall creates the call and returns its CallSid. Errors are
// classified like a send's: a refusal before acceptance is ClassNotSent,
// a timeout or a lost connection ClassUncertain.
func (c *Client) PlaceCall(ctx context.Context, req CallRequest) (string, error) {
	switch {
	case req.To == "":
		return "", invalid("empty recipient number")
	case req.From == "":
		return "", invalid("no caller number")
	case req.TwiML == "":
		return "", invalid("no TwiML for the call")
	}
	form := url.Values{"To": {req.To}, "From": {req.From}, "Twiml": {req.TwiML}}
	if req.StatusCallback != "" {
		form.Set("StatusCallback", req.StatusCallback)
		form.Set("StatusCallbackMethod", http.MethodPost)
	}
	if req.MachineDetection {
		form.Set("MachineDetection", "Enable")
	}
	if req.Timeout > 0 {
		form.Set("Timeout", strconv.Itoa(req.Timeout))
	}
	header := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if c.sendIdemKey && req.IdempotencyKey != "" {
		header.Set(IdempotencyHeader, req.IdempotencyKey)
	}
	msg, err := c.call(ctx, "call", http.MethodPost, "/2010-04-01/Accounts/"+url.PathEscape(c.accountSID)+"/Calls.json",
		[]byte(form.Encode()), header)
	if err != nil {
		return "", err
	}
	return msg.SID.String(), nil
}

// xmlText escapes s for XML text and attribute values.
func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// GatherTwiML is the TwiML of a voice step: say, inside a <Gather> of
// one DTMF digit posted to action, then, when nothing was pressed, a
// goodbye. Telnyx TeXML takes the same verbs.
func GatherTwiML(say, action string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><Response><Gather input="dtmf" numDigits="1" timeout="8" method="POST" action="` +
		xmlText(action) + `"><Say>` + xmlText(say) + `</Say></Gather><Say>No answer was given. Goodbye.</Say></Response>`
}

// SayTwiML is a reply that says text and hangs up (the answer to a
// gather's action).
func SayTwiML(text string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><Response><Say>` + xmlText(text) + `</Say><Hangup/></Response>`
}

// voiceParams are the parameters ParseVoiceWebhook reads: each must appear
// at most once.
var voiceParams = []string{"CallSid", "CallStatus", "AnsweredBy", "Digits", "From", "To"}

// ParseVoiceWebhook verifies a voice callback's X-Twilio-Signature (the
// URL as ParseWebhook finds it: absolute, or PublicURL + path) and then
// reads it. A signed form without a CallSid is malformed.
func (c *Client) ParseVoiceWebhook(req crewcast.WebhookRequest) (crewcast.CallEvent, error) {
	signedURL, err := c.signedURL(req.URL)
	if err != nil {
		return crewcast.CallEvent{}, err
	}
	params, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return crewcast.CallEvent{}, badSignature("body is not a form, so it cannot be verified")
	}
	if err := Verify(c.authToken, signedURL, req.Header, params); err != nil {
		return crewcast.CallEvent{}, err
	}
	for _, n := range voiceParams {
		if len(params[n]) > 1 {
			return crewcast.CallEvent{}, malformed("parameter %s appears more than once", n)
		}
	}
	ev := crewcast.CallEvent{CallSID: params.Get("CallSid"), From: params.Get("From"), To: params.Get("To"),
		CallStatus: params.Get("CallStatus"), AnsweredBy: params.Get("AnsweredBy"), Digits: params.Get("Digits")}
	if ev.CallSID == "" {
		return crewcast.CallEvent{}, malformed("voice webhook without CallSid")
	}
	if u, err := url.Parse(signedURL); err == nil {
		ev.Query = u.Query()
	}
	return ev, nil
}
