package telnyx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/apicall"
)

// Voice (docs/design.md §17, docs/providers.md "Voice"): a ladder's voice
// step is one TeXML call, POST /v2/texml/calls/{connection_id} with the
// TeXML inline (Texml: the same verbs as TwiML, a <Gather> of one digit).
// Its status and gather callbacks are form posts signed like every Telnyx
// webhook (Ed25519 over "timestamp|body", the timestamp within the
// tolerance): ParseVoiceWebhook verifies them with the messaging Verifier
// before reading anything. The signature does not cover the URL, so
// whoever builds the callback URLs must sign what they carry (crewcast
// adds its own token).

// CallRequest is one TeXML call to place.
type CallRequest struct {
	From, To string
	// TeXML is what the call runs once answered.
	TeXML string
	// StatusCallback receives the call's status (CallStatus, AnsweredBy).
	StatusCallback string
	// MachineDetection asks for answering-machine detection.
	MachineDetection bool
	// Timeout is how long the phone rings, in seconds (0: the default).
	Timeout int
	// IdempotencyKey is sent like a message's when SendIdempotencyKey is set.
	IdempotencyKey string
}

// CanCall reports whether the client has a TeXML connection to place
// calls through.
func (c *Client) CanCall() bool { return c.texmlConn != "" }

type callBody struct {
	From                 string `json:"From"`
	To                   string `json:"To"`
	Texml                string `json:"Texml"`
	StatusCallback       string `json:"StatusCallback,omitempty"`
	StatusCallbackMethod string `json:"StatusCallbackMethod,omitempty"`
	MachineDetection     string `json:"MachineDetection,omitempty"`
	Timeout              int    `json:"Timeout,omitempty"`
}

// PlaceCall creates the call through the TeXML connection (Config.TeXMLConnectionID)
// and returns its call_sid. Errors are classified like a send's.
func (c *Client) PlaceCall(ctx context.Context, req CallRequest) (string, error) {
	switch {
	case c.texmlConn == "":
		return "", c.invalid("no TeXML connection configured")
	case req.To == "" || req.From == "":
		return "", c.invalid("a call needs From and To")
	case req.TeXML == "":
		return "", c.invalid("no TeXML for the call")
	}
	b := callBody{From: req.From, To: req.To, Texml: req.TeXML, StatusCallback: req.StatusCallback, Timeout: req.Timeout}
	if b.StatusCallback != "" {
		b.StatusCallbackMethod = http.MethodPost
	}
	if req.MachineDetection {
		b.MachineDetection = "Enable"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return "", c.invalid("encode request: %v", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v2/texml/calls/"+url.PathEscape(c.texmlConn),
		bytes.NewReader(bytes.TrimRight(buf.Bytes(), "\n")))
	if err != nil {
		return "", c.invalid("build request: %v", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "crewcast")
	if c.sendIdemKey && req.IdempotencyKey != "" {
		hreq.Header.Set("Idempotency-Key", req.IdempotencyKey)
	}
	resp, err := apicall.Do(c.http, ProviderName, hreq)
	if err != nil {
		c.log.DebugContext(ctx, "telnyx call request failed", "class", crewcast.ClassOf(err))
		return "", err
	}
	c.log.DebugContext(ctx, "telnyx request", "op", "call", "http_status", resp.Status, "request_id", resp.Header.Get("X-Request-Id"))
	return interpretCall(resp.Status, resp.Header, resp.Body, c)
}

// interpretCall reads a call create's answer: the flat call object's
// call_sid, or a classified error.
func interpretCall(status int, header http.Header, body []byte, c *Client) (string, error) {
	if status < 200 || status > 299 {
		_, err := interpretResponse(status, header, body, c.now())
		return "", err
	}
	var v struct {
		CallSID string `json:"call_sid"`
	}
	err := json.Unmarshal(body, &v)
	if err == nil && v.CallSID == "" {
		err = errors.New("response has no call_sid")
	}
	if err != nil { // accepted, but we cannot tell which call it made
		return "", &crewcast.SendError{Provider: ProviderName, HTTPStatus: status, Class: crewcast.ClassUncertain,
			Err: fmt.Errorf("decode response: %w", err)}
	}
	return v.CallSID, nil
}

// voiceParams are the parameters ParseVoiceWebhook reads: each at most once.
var voiceParams = []string{"CallSid", "CallStatus", "AnsweredBy", "Digits", "From", "To"}

// ParseVoiceWebhook verifies a TeXML callback's signature (and timestamp)
// and then reads its form. req.URL's query is returned as is: it is not
// signed by Telnyx.
func (c *Client) ParseVoiceWebhook(req crewcast.WebhookRequest) (crewcast.CallEvent, error) {
	if err := c.verifier.Verify(req.Header, req.Body, c.now(), c.tolerance); err != nil {
		return crewcast.CallEvent{}, err
	}
	params, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return crewcast.CallEvent{}, fmt.Errorf("telnyx: %w: voice webhook body is not a form", crewcast.ErrMalformed)
	}
	for _, n := range voiceParams {
		if len(params[n]) > 1 {
			return crewcast.CallEvent{}, fmt.Errorf("telnyx: %w: parameter %s appears more than once", crewcast.ErrMalformed, n)
		}
	}
	ev := crewcast.CallEvent{CallSID: params.Get("CallSid"), From: params.Get("From"), To: params.Get("To"),
		CallStatus: params.Get("CallStatus"), AnsweredBy: params.Get("AnsweredBy"), Digits: params.Get("Digits")}
	if ev.CallSID == "" {
		return crewcast.CallEvent{}, fmt.Errorf("telnyx: %w: voice webhook without CallSid", crewcast.ErrMalformed)
	}
	if u, err := url.Parse(req.URL); err == nil {
		ev.Query = u.Query()
	}
	return ev, nil
}
