package twilio

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/crewcast/crewcast"
)

// EmptyTwiML is the reply to an inbound-message webhook that sends nothing
// back; serve it with TwiMLContentType.
const EmptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response/>`

// TwiMLContentType is the Content-Type of EmptyTwiML.
const TwiMLContentType = "text/xml"

// IdempotencyTokenHeader is the webhook header that stays the same across
// Twilio's retries of one webhook. It is NOT used as the EventID: the
// signature does not cover headers, so a captured STOP or START re-posted
// with a fresh token would count as a new event each time.
const IdempotencyTokenHeader = "I-Twilio-Idempotency-Token"

// maxMediaParams bounds the MediaUrl{N} scan when NumMedia is missing.
const maxMediaParams = 100

// ParseWebhook verifies req's X-Twilio-Signature, then turns the form into
// Events.
//
// The URL the signature is checked against is, in order: req.URL when it
// is absolute (the HTTP layer knows the public URL); PublicURL + req.URL
// when req.URL is a path ("/webhooks/twilio?x=1", behind a proxy); PublicURL
// alone when req.URL is empty. Without either the webhook cannot be
// verified and is rejected.
//
// The body must be a form to be verified at all, so it is split into
// name/value pairs first (url.ParseQuery); nothing is interpreted until the
// signature holds. A body that is not a valid form wraps
// crewcast.ErrBadSignature for that reason.
//
// A status callback (MessageStatus, or SmsStatus, other than
// receiving/received) gives one KindStatus Event (with Body as Text in the
// rare callback that carries one); an inbound message gives
// one KindInbound Event with Body as Text and MediaUrl{N} as Media. The
// EventID comes from signed content only, "MessageSid:status:ErrorCode"
// (status "received" for inbound), so a replay with a new
// I-Twilio-Idempotency-Token is the same event. A parameter crewcast reads
// that appears more than once is refused (ErrMalformed): the signature
// covers every value, sorted, so "Body=A&Body=STOP" has no one meaning. Twilio
// webhooks carry no event time, so OccurredAt is the injected clock's now.
// A signed form without a MessageSid, or with neither a status nor a body,
// gives no Events and no error.
func (c *Client) ParseWebhook(req crewcast.WebhookRequest) ([]crewcast.Event, error) {
	signedURL, err := c.signedURL(req.URL)
	if err != nil {
		return nil, err
	}
	params, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return nil, badSignature("body is not a form, so it cannot be verified")
	}
	if err := Verify(c.authToken, signedURL, req.Header, params); err != nil {
		return nil, err
	}
	ev, ok, err := parseParams(params)
	if err != nil || !ok {
		return nil, err
	}
	ev.OccurredAt = c.now().UTC()
	return []crewcast.Event{ev}, nil
}

func (c *Client) signedURL(reqURL string) (string, error) {
	switch {
	case reqURL != "" && isAbsolute(reqURL):
		return reqURL, nil
	case strings.HasPrefix(reqURL, "/") && c.publicURL != "":
		return strings.TrimRight(c.publicURL, "/") + reqURL, nil
	case reqURL == "" && c.publicURL != "":
		return c.publicURL, nil
	}
	return "", badSignature("cannot tell which URL Twilio signed: WebhookRequest.URL is %q and PublicURL is unset", reqURL)
}

func isAbsolute(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// parseParams interprets a verified webhook form; ok is false when the form
// carries nothing crewcast tracks. OccurredAt is left for the caller.
func parseParams(p url.Values) (ev crewcast.Event, ok bool, err error) {
	if name, ok := repeatedParam(p); ok {
		return crewcast.Event{}, false, malformed("parameter %s appears more than once", name)
	}
	sid := firstOf(p, "MessageSid", "SmsMessageSid", "SmsSid")
	if sid == "" {
		return crewcast.Event{}, false, nil
	}
	providerStatus := firstOf(p, "MessageStatus", "SmsStatus")
	status := strings.ToLower(providerStatus)
	_, hasBody := p["Body"]
	_, hasMedia := p["NumMedia"]
	inbound := status == "received" || status == "receiving" || (status == "" && (hasBody || hasMedia))
	if !inbound && status == "" {
		return crewcast.Event{}, false, nil
	}
	code := p.Get("ErrorCode")
	ev = crewcast.Event{
		Provider:  ProviderName,
		MessageID: sid,
		From:      p.Get("From"),
		To:        p.Get("To"),
	}
	if ev.From == "" || ev.To == "" {
		return crewcast.Event{}, false, malformed("message webhook without From or To")
	}
	if inbound {
		ev.EventID = sid + ":received:" + code
		ev.Kind = crewcast.KindInbound
		ev.Text = p.Get("Body")
		ev.Media = mediaURLs(p)
		return ev, true, nil
	}
	ev.EventID = sid + ":" + providerStatus + ":" + code
	rs := recipientStatus(ev.To, providerStatus, code, crewcast.StatusUnknown)
	ev.Kind = crewcast.KindStatus
	ev.Text = p.Get("Body") // status callbacks rarely carry it; keep it when they do
	ev.Status = rs.Status
	ev.ProviderStatus = rs.ProviderStatus
	ev.ErrorCode = rs.ErrorCode
	ev.ErrorClass = rs.ErrorClass
	ev.OptOut = rs.OptOut
	return ev, true, nil
}

// readParams are the parameters parseParams interprets (besides MediaUrl{N}).
var readParams = []string{"MessageSid", "SmsMessageSid", "SmsSid", "MessageStatus", "SmsStatus",
	"Body", "NumMedia", "ErrorCode", "From", "To"}

// repeatedParam names a parameter crewcast reads that has more than one
// value.
func repeatedParam(p url.Values) (string, bool) {
	for _, n := range readParams {
		if len(p[n]) > 1 {
			return n, true
		}
	}
	for n, vs := range p {
		if len(vs) > 1 && strings.HasPrefix(n, "MediaUrl") {
			return n, true
		}
	}
	return "", false
}

// mediaURLs collects MediaUrl0..MediaUrl{NumMedia-1}, skipping gaps; when
// NumMedia is missing or not a small number it scans up to maxMediaParams.
func mediaURLs(p url.Values) []string {
	n, err := strconv.Atoi(p.Get("NumMedia"))
	if err != nil || n < 0 || n > maxMediaParams {
		n = maxMediaParams
	}
	var out []string
	for i := range n {
		if u := p.Get("MediaUrl" + strconv.Itoa(i)); u != "" {
			out = append(out, u)
		}
	}
	return out
}

func firstOf(p url.Values, names ...string) string {
	for _, n := range names {
		if v := p.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("twilio: %w: %s", crewcast.ErrMalformed, fmt.Sprintf(format, args...))
}
