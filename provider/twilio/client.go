// Package twilio is crewcast's adapter for Twilio Programmable Messaging:
// it sends individual messages, looks up message status, and turns signed
// status-callback and inbound-message webhooks into crewcast.Events.
// Twilio has no group MMS send; SendGroupMMS says so.
//
// The adapter never retries a send. A send either returns a result or a
// *crewcast.SendError whose Class says what the caller may do next
// (docs/design.md §4): a refusal before acceptance is ClassNotSent, a timeout,
// a 5xx or a connection lost after the request was handed to a connection is
// ClassUncertain. The only resend that can happen below this package is
// net/http's own retry of a request that provably wrote nothing.
//
// Webhooks are form posts signed with X-Twilio-Signature (HMAC-SHA1 over
// the URL Twilio posted to plus the sorted parameters); the signature is
// checked before any parameter is interpreted.
//
// A Client is immutable after New and safe for concurrent use.
package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/apicall"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

// ProviderName is the name this adapter reports in Events and SendErrors.
const ProviderName = "twilio"

// DefaultAPIBase is the Twilio API origin used when Config.APIBase is empty.
const DefaultAPIBase = "https://api.twilio.com"

// DefaultTimeout bounds one API call when Config.HTTPClient is nil, so a
// hung connection cannot hold a claimed recipient forever.
const DefaultTimeout = 30 * time.Second

// MaxMedia is the most MediaUrl values Twilio takes on one message
// (error 21623 beyond it).
const MaxMedia = 10

// IdempotencyHeader carries the claim key when Config.SendIdempotencyKey is
// set. Twilio documents no idempotency key for message creation; this is
// the header some third-party clients send, and the one the simulator is
// expected to honour.
const IdempotencyHeader = "I-Twilio-Idempotency-Token"

// ErrInvalidRequest marks a send refused locally, before any network I/O,
// because it can never succeed (no recipient, too many media...). It
// arrives inside a *crewcast.SendError of class ClassSender: the group is
// misconfigured and an operator must look.
var ErrInvalidRequest = errors.New("invalid send request")

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// AccountSID is the account (or the account an API key belongs to);
	// it is part of every API path and the Basic-auth user. Required.
	AccountSID string
	// AuthToken is the Basic-auth password and the webhook signing key.
	// Required.
	AuthToken string
	// APIBase is the API origin, default DefaultAPIBase; tests and the
	// simulator point it elsewhere.
	APIBase string
	// StatusCallbackURL, when set, is sent as StatusCallback unless the
	// SendRequest names its own WebhookURL.
	StatusCallbackURL string
	// PublicURL is the origin Twilio posts webhooks to (for example
	// "https://crew.example.com" when crewcast runs behind a proxy). It is
	// needed to check signatures when WebhookRequest.URL is a bare path or
	// empty; see ParseWebhook.
	PublicURL string
	// SendIdempotencyKey makes sends carry SendRequest.IdempotencyKey in
	// the IdempotencyHeader header. Only the simulator honours it; leave it
	// false against Twilio.
	SendIdempotencyKey bool
	// HTTPClient makes the API calls, default an http.Client with
	// DefaultTimeout. The adapter uses a copy that never follows redirects,
	// because a 307/308 would replay the POST.
	HTTPClient *http.Client
	// Now is the clock for Retry-After dates and for the OccurredAt of
	// webhooks (Twilio's carry no time), default time.Now.
	Now func() time.Time
	// Logger receives debug records of API calls (never numbers, bodies or
	// secrets), default a discarding logger.
	Logger *slog.Logger
}

// Client is a crewcast.Provider for Twilio.
type Client struct {
	accountSID     string
	authToken      string
	base           string // origin without trailing slash
	statusCallback string
	publicURL      string
	sendIdemKey    bool
	http           *http.Client
	now            func() time.Time
	log            *slog.Logger
}

var _ crewcast.Provider = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.AccountSID == "" {
		return nil, errors.New("twilio: AccountSID is required")
	}
	if cfg.AuthToken == "" {
		return nil, errors.New("twilio: AuthToken is required")
	}
	base := cfg.APIBase
	if base == "" {
		base = DefaultAPIBase
	}
	for name, u := range map[string]string{"APIBase": base, "StatusCallbackURL": cfg.StatusCallbackURL, "PublicURL": cfg.PublicURL} {
		if u == "" {
			continue
		}
		if err := adapter.CheckAbsoluteURL(u); err != nil {
			return nil, fmt.Errorf("twilio: %s: %w", name, err)
		}
	}
	c := &Client{
		accountSID:     cfg.AccountSID,
		authToken:      cfg.AuthToken,
		base:           strings.TrimRight(base, "/"),
		statusCallback: cfg.StatusCallbackURL,
		publicURL:      cfg.PublicURL,
		sendIdemKey:    cfg.SendIdempotencyKey,
		http:           adapter.HTTPClient(cfg.HTTPClient, DefaultTimeout),
		now:            cfg.Now,
		log:            cfg.Logger,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Name returns "twilio".
func (c *Client) Name() string { return ProviderName }

// Send sends one message to req.To[0] with POST
// /2010-04-01/Accounts/{AccountSid}/Messages.json.
func (c *Client) Send(ctx context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	switch {
	case len(req.To) != 1:
		return crewcast.SendResult{}, invalid("send needs exactly one recipient, got %d", len(req.To))
	case req.To[0] == "":
		return crewcast.SendResult{}, invalid("empty recipient number")
	case req.From == "":
		return crewcast.SendResult{}, invalid("no sender number")
	case req.Text == "" && len(req.MediaURLs) == 0:
		return crewcast.SendResult{}, invalid("neither text nor media")
	case len(req.MediaURLs) > MaxMedia:
		return crewcast.SendResult{}, invalid("%d media URLs, Twilio takes at most %d", len(req.MediaURLs), MaxMedia)
	}
	form := url.Values{"To": {req.To[0]}, "From": {req.From}}
	if req.Text != "" {
		form.Set("Body", req.Text)
	}
	for _, m := range req.MediaURLs {
		form.Add("MediaUrl", m)
	}
	if cb := c.callbackFor(req); cb != "" {
		form.Set("StatusCallback", cb)
	}
	header := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if c.sendIdemKey && req.IdempotencyKey != "" {
		header.Set(IdempotencyHeader, req.IdempotencyKey)
	}
	msg, err := c.call(ctx, "send", http.MethodPost, c.messagesPath()+".json", []byte(form.Encode()), header)
	if err != nil {
		return crewcast.SendResult{}, err
	}
	return crewcast.SendResult{
		MessageID:  msg.SID.String(),
		Recipients: []crewcast.RecipientStatus{msg.recipientStatus(crewcast.StatusSent)},
	}, nil
}

// SendGroupMMS returns crewcast.ErrGroupMMSUnsupported: Twilio has no group
// MMS send.
func (c *Client) SendGroupMMS(context.Context, crewcast.SendRequest) (crewcast.SendResult, error) {
	return crewcast.SendResult{}, fmt.Errorf("twilio: %w", crewcast.ErrGroupMMSUnsupported)
}

// Lookup asks GET .../Messages/{sid}.json for a message's current status.
// Errors use the same *crewcast.SendError shape and classification as
// sends; a message Twilio does not know is HTTPStatus 404.
func (c *Client) Lookup(ctx context.Context, messageID string) (crewcast.MessageStatus, error) {
	if messageID == "" {
		return crewcast.MessageStatus{}, invalid("empty message id")
	}
	msg, err := c.call(ctx, "lookup", http.MethodGet, c.messagesPath()+"/"+url.PathEscape(messageID)+".json", nil, http.Header{})
	if err != nil {
		return crewcast.MessageStatus{}, err
	}
	return crewcast.MessageStatus{
		MessageID:  msg.SID.String(),
		Recipients: []crewcast.RecipientStatus{msg.recipientStatus(crewcast.StatusUnknown)},
	}, nil
}

func (c *Client) messagesPath() string {
	return "/2010-04-01/Accounts/" + url.PathEscape(c.accountSID) + "/Messages"
}

func (c *Client) callbackFor(req crewcast.SendRequest) string {
	if req.WebhookURL != "" {
		return req.WebhookURL
	}
	return c.statusCallback
}

func invalid(format string, args ...any) error {
	return &crewcast.SendError{
		Provider: ProviderName,
		Class:    crewcast.ClassSender,
		Err:      fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...)),
	}
}

// call makes one API request (never retried here) and interprets the answer.
func (c *Client) call(ctx context.Context, op, method, path string, body []byte, header http.Header) (*message, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, invalid("build request: %v", err)
	}
	req.Header = header
	req.SetBasicAuth(c.accountSID, c.authToken)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "crewcast")

	start := c.now()
	resp, err := apicall.Do(c.http, ProviderName, req)
	if err != nil && resp.Status == 0 {
		c.log.DebugContext(ctx, "twilio request failed", "op", op, "class", crewcast.ClassOf(err))
		return nil, err
	}
	c.log.DebugContext(ctx, "twilio request", "op", op, "http_status", resp.Status,
		"duration", c.now().Sub(start), "request_id", resp.Header.Get("Twilio-Request-Id"))
	if err != nil {
		return nil, err
	}
	return interpretResponse(resp.Status, resp.Header, resp.Body, c.now())
}

// interpretResponse turns one API answer into the message it carries or a
// classified *crewcast.SendError. It does no I/O so fuzzing can reach it.
func interpretResponse(status int, header http.Header, body []byte, now time.Time) (*message, error) {
	if status >= 200 && status < 300 {
		var msg *message
		err := json.Unmarshal(body, &msg)
		if err == nil && (msg == nil || msg.SID == "") {
			err = errors.New("response has no sid")
		}
		if err != nil {
			// Accepted, but we cannot tell which message it made.
			return nil, &crewcast.SendError{Provider: ProviderName, HTTPStatus: status,
				Class: crewcast.ClassUncertain, Err: fmt.Errorf("decode response: %w", err)}
		}
		return msg, nil
	}
	var e apiError
	_ = json.Unmarshal(body, &e) // a non-JSON error page still has a status to classify
	class, optOut := Classify(status, e.Code.String())
	se := &crewcast.SendError{
		Provider:   ProviderName,
		HTTPStatus: status,
		Code:       e.Code.String(),
		Detail:     e.Message.String(),
		Class:      class,
		OptOut:     optOut,
	}
	if class == crewcast.ClassNotSent {
		se.RetryAfter, _ = adapter.RetryAfter(header, now)
	}
	return nil, se
}
