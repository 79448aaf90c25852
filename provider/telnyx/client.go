// Package telnyx is crewcast's adapter for the Telnyx Messaging API v2: it
// sends individual messages and group MMS, looks up message status, and turns
// signed webhooks into crewcast.Events.
//
// The adapter never retries a send. A send either returns a result or a
// *crewcast.SendError whose Class says what the caller may do next
// (docs/design.md §4): a refusal before acceptance is ClassNotSent, a timeout,
// a 5xx or a connection lost after the request was handed to a connection is
// ClassUncertain. Two resends can happen below this package, both inside
// net/http and both safe: the retry of a request that provably wrote
// nothing, and, only when Config.SendIdempotencyKey is set (the endpoint
// then dedupes on the key), http.Transport's replay of a POST carrying an
// Idempotency-Key whose reused connection closed before any answer.
//
// Webhooks are verified (Ed25519 over "timestamp|raw body", ±Tolerance
// around the injected clock) before the body is read as anything but bytes.
//
// A Client is immutable after New and safe for concurrent use.
package telnyx

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/apicall"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

// ProviderName is the name this adapter reports in Events and SendErrors.
const ProviderName = "telnyx"

// DefaultAPIBase is the Telnyx API origin used when Config.APIBase is empty.
const DefaultAPIBase = "https://api.telnyx.com"

// DefaultTolerance is the webhook replay window used when Config.Tolerance
// is zero; all three official SDKs use five minutes.
const DefaultTolerance = 300 * time.Second

// DefaultTimeout bounds one API call when Config.HTTPClient is nil, so a
// hung connection cannot hold a claimed recipient forever.
const DefaultTimeout = 30 * time.Second

// idempotencyKeyPattern is the key syntax Telnyx documents for its
// Idempotency-Key header.
var idempotencyKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_:-]{1,255}$`)

// ErrInvalidRequest marks a send refused locally, before any network I/O,
// because the request can never succeed (no recipient, too many group
// members, nothing to send...). It arrives inside a *crewcast.SendError of
// class ClassSender: the group is misconfigured and an operator must look.
var ErrInvalidRequest = errors.New("invalid send request")

// Config configures a Client. Zero values take the documented defaults.
type Config struct {
	// APIKey is the API v2 key, sent as a Bearer token. Required.
	APIKey string
	// PublicKey is the account's webhook public key: standard base64 of the
	// raw 32-byte Ed25519 key, as shown in the portal. Required.
	PublicKey string
	// APIBase is the API origin, default DefaultAPIBase; tests and the
	// simulator point it elsewhere.
	APIBase string
	// MessagingProfileID is sent with individual sends when set (required
	// by Telnyx for number pools and alphanumeric senders). Group MMS does
	// not take one.
	MessagingProfileID string
	// TeXMLConnectionID is the TeXML application connection voice calls
	// are placed through (voice.go); "" means no calls.
	TeXMLConnectionID string
	// WebhookURL, when set, is sent as the per-message webhook_url unless
	// the SendRequest names its own.
	WebhookURL string
	// WebhookFailoverURL, when set, is sent as webhook_failover_url.
	WebhookFailoverURL string
	// SendIdempotencyKey makes sends carry SendRequest.IdempotencyKey as an
	// Idempotency-Key header. Only the simulator honours it; Telnyx's
	// message endpoints do not declare it, so leave it false in production.
	SendIdempotencyKey bool
	// HTTPClient makes the API calls, default an http.Client with
	// DefaultTimeout. The adapter uses a copy that never follows redirects,
	// because a 307/308 would replay the POST.
	HTTPClient *http.Client
	// Now is the clock used for the webhook replay window and Retry-After
	// dates, default time.Now.
	Now func() time.Time
	// Tolerance is the webhook replay window either side of Now, default
	// DefaultTolerance.
	Tolerance time.Duration
	// Logger receives debug records of API calls (never numbers, bodies or
	// keys), default a discarding logger.
	Logger *slog.Logger
}

// Client is a crewcast.Provider for Telnyx.
type Client struct {
	apiKey      string
	base        string // origin without trailing slash
	profileID   string
	webhookURL  string
	failoverURL string
	sendIdemKey bool
	texmlConn   string
	verifier    *Verifier
	tolerance   time.Duration
	http        *http.Client
	now         func() time.Time
	log         *slog.Logger
}

var _ crewcast.Provider = (*Client)(nil)

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("telnyx: APIKey is required")
	}
	pub, err := ParsePublicKey(cfg.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("telnyx: PublicKey: %w", err)
	}
	verifier, err := NewVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("telnyx: PublicKey: %w", err)
	}
	base := cfg.APIBase
	if base == "" {
		base = DefaultAPIBase
	}
	if err := adapter.CheckAbsoluteURL(base); err != nil {
		return nil, fmt.Errorf("telnyx: APIBase: %w", err)
	}
	for name, u := range map[string]string{"WebhookURL": cfg.WebhookURL, "WebhookFailoverURL": cfg.WebhookFailoverURL} {
		if u == "" {
			continue
		}
		if err := adapter.CheckAbsoluteURL(u); err != nil {
			return nil, fmt.Errorf("telnyx: %s: %w", name, err)
		}
	}
	if cfg.Tolerance < 0 {
		return nil, errors.New("telnyx: Tolerance must not be negative")
	}
	c := &Client{
		apiKey:      cfg.APIKey,
		base:        strings.TrimRight(base, "/"),
		profileID:   cfg.MessagingProfileID,
		webhookURL:  cfg.WebhookURL,
		failoverURL: cfg.WebhookFailoverURL,
		sendIdemKey: cfg.SendIdempotencyKey,
		texmlConn:   cfg.TeXMLConnectionID,
		verifier:    verifier,
		tolerance:   cfg.Tolerance,
		http:        adapter.HTTPClient(cfg.HTTPClient, DefaultTimeout),
		now:         cfg.Now,
		log:         cfg.Logger,
	}
	if c.tolerance == 0 {
		c.tolerance = DefaultTolerance
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// ParsePublicKey decodes a portal-style webhook public key (standard base64
// of the raw 32-byte Ed25519 key).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	if s == "" {
		return nil, errors.New("empty public key")
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("public key is not standard base64: %w", err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key is %d bytes, want %d", len(raw), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// Name returns "telnyx".
func (c *Client) Name() string { return ProviderName }

// sendBody is the JSON body of POST /v2/messages and /v2/messages/group_mms;
// To is a string for the former and a list for the latter.
type sendBody struct {
	From               string   `json:"from"`
	To                 any      `json:"to"`
	Text               string   `json:"text,omitempty"`
	MediaURLs          []string `json:"media_urls,omitempty"`
	MessagingProfileID string   `json:"messaging_profile_id,omitempty"`
	WebhookURL         string   `json:"webhook_url,omitempty"`
	WebhookFailoverURL string   `json:"webhook_failover_url,omitempty"`
}

// Send sends one message to req.To[0] with POST /v2/messages.
func (c *Client) Send(ctx context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	if len(req.To) != 1 {
		return crewcast.SendResult{}, c.invalid("individual send needs exactly one recipient, got %d", len(req.To))
	}
	if err := c.checkRequest(req); err != nil {
		return crewcast.SendResult{}, err
	}
	body := sendBody{
		From:               req.From,
		To:                 req.To[0],
		Text:               req.Text,
		MediaURLs:          req.MediaURLs,
		MessagingProfileID: c.profileID,
		WebhookURL:         c.webhookFor(req),
		WebhookFailoverURL: c.failoverURL,
	}
	return c.send(ctx, "send", "/v2/messages", body, req.IdempotencyKey)
}

// SendGroupMMS sends one group MMS to every address in req.To (at most
// crewcast.MaxGroupMMS) with POST /v2/messages/group_mms.
func (c *Client) SendGroupMMS(ctx context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	if len(req.To) == 0 || len(req.To) > crewcast.MaxGroupMMS {
		return crewcast.SendResult{}, c.invalid("group MMS needs 1 to %d recipients, got %d", crewcast.MaxGroupMMS, len(req.To))
	}
	seen := make(map[string]bool, len(req.To))
	for _, to := range req.To {
		if seen[to] {
			return crewcast.SendResult{}, c.invalid("group MMS lists a recipient twice")
		}
		seen[to] = true
	}
	if err := c.checkRequest(req); err != nil {
		return crewcast.SendResult{}, err
	}
	body := sendBody{
		From:               req.From,
		To:                 req.To,
		Text:               req.Text,
		MediaURLs:          req.MediaURLs,
		WebhookURL:         c.webhookFor(req),
		WebhookFailoverURL: c.failoverURL,
	}
	return c.send(ctx, "group_mms", "/v2/messages/group_mms", body, req.IdempotencyKey)
}

func (c *Client) checkRequest(req crewcast.SendRequest) error {
	if req.From == "" {
		return c.invalid("no sender number")
	}
	for _, to := range req.To {
		if to == "" {
			return c.invalid("empty recipient number")
		}
	}
	if req.Text == "" && len(req.MediaURLs) == 0 {
		return c.invalid("neither text nor media")
	}
	if c.sendIdemKey && req.IdempotencyKey != "" && !idempotencyKeyPattern.MatchString(req.IdempotencyKey) {
		return c.invalid("idempotency key does not match %s", idempotencyKeyPattern)
	}
	return nil
}

func (c *Client) invalid(format string, args ...any) error {
	return &crewcast.SendError{
		Provider: ProviderName,
		Class:    crewcast.ClassSender,
		Err:      fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...)),
	}
}

func (c *Client) webhookFor(req crewcast.SendRequest) string {
	if req.WebhookURL != "" {
		return req.WebhookURL
	}
	return c.webhookURL
}

func (c *Client) send(ctx context.Context, op, path string, body sendBody, idemKey string) (crewcast.SendResult, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // send the text exactly as written
	if err := enc.Encode(body); err != nil {
		return crewcast.SendResult{}, c.invalid("encode request: %v", err)
	}
	header := http.Header{"Content-Type": {"application/json"}}
	if c.sendIdemKey && idemKey != "" {
		header.Set("Idempotency-Key", idemKey)
	}
	msg, err := c.call(ctx, op, http.MethodPost, path, bytes.TrimRight(buf.Bytes(), "\n"), header)
	if err != nil {
		return crewcast.SendResult{}, err
	}
	return crewcast.SendResult{
		MessageID:      msg.ID.String(),
		GroupMessageID: msg.GroupMessageID.String(),
		Recipients:     recipientStatuses(msg, crewcast.StatusSent),
	}, nil
}

// Lookup asks GET /v2/messages/{id} for a message's current per-recipient
// status. Telnyx keeps messages for 10 days; after that the answer is a
// *crewcast.SendError with HTTPStatus 404. Errors use the same
// *crewcast.SendError shape and classification as sends.
func (c *Client) Lookup(ctx context.Context, messageID string) (crewcast.MessageStatus, error) {
	if messageID == "" {
		return crewcast.MessageStatus{}, c.invalid("empty message id")
	}
	msg, err := c.call(ctx, "lookup", http.MethodGet, "/v2/messages/"+url.PathEscape(messageID), nil, http.Header{})
	if err != nil {
		return crewcast.MessageStatus{}, err
	}
	return crewcast.MessageStatus{
		MessageID:  msg.ID.String(),
		Recipients: recipientStatuses(msg, crewcast.StatusUnknown),
	}, nil
}

// call makes one API request (never retried here) and interprets the answer.
func (c *Client) call(ctx context.Context, op, method, path string, body []byte, header http.Header) (*message, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, c.invalid("build request: %v", err)
	}
	req.Header = header
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "crewcast")

	start := c.now()
	resp, err := apicall.Do(c.http, ProviderName, req)
	if err != nil && resp.Status == 0 {
		c.log.DebugContext(ctx, "telnyx request failed", "op", op, "class", crewcast.ClassOf(err))
		return nil, err
	}
	c.log.DebugContext(ctx, "telnyx request", "op", op, "http_status", resp.Status,
		"duration", c.now().Sub(start), "request_id", resp.Header.Get("X-Request-Id"))
	if err != nil {
		return nil, err
	}
	return interpretResponse(resp.Status, resp.Header, resp.Body, c.now())
}

// interpretResponse turns one API answer into the message it carries or a
// classified *crewcast.SendError. It does no I/O so fuzzing can reach it.
func interpretResponse(status int, header http.Header, body []byte, now time.Time) (*message, error) {
	if status >= 200 && status < 300 {
		var env struct {
			Data *message `json:"data"`
		}
		err := json.Unmarshal(body, &env)
		if err == nil && (env.Data == nil || env.Data.ID == "") {
			err = errors.New("response has no data.id")
		}
		if err != nil {
			// Accepted, but we cannot tell which message it made.
			return nil, &crewcast.SendError{Provider: ProviderName, HTTPStatus: status,
				Class: crewcast.ClassUncertain, Err: fmt.Errorf("decode response: %w", err)}
		}
		return env.Data, nil
	}
	var env struct {
		Errors []apiError `json:"errors"`
	}
	_ = json.Unmarshal(body, &env) // a non-JSON error page still has a status to classify
	e := pickError(env.Errors)
	class, optOut := Classify(status, e.Code.String())
	se := &crewcast.SendError{
		Provider:   ProviderName,
		HTTPStatus: status,
		Code:       e.Code.String(),
		Detail:     e.text(),
		Class:      class,
		OptOut:     optOut,
	}
	if class == crewcast.ClassNotSent {
		se.RetryAfter = retryAfter(header, now)
	}
	return nil, se
}

// pickError chooses the error that decides the class: the first one whose
// code is in the table, else the first one.
func pickError(errs []apiError) apiError {
	for _, e := range errs {
		if _, ok := codeClasses[e.Code.String()]; ok {
			return e
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return apiError{}
}

// retryAfter reads how long Telnyx asked us to wait: Retry-After (seconds
// or an HTTP date), else x-ratelimit-reset (seconds). Zero when absent.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if d, ok := adapter.RetryAfter(h, now); ok {
		return d
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-Ratelimit-Reset")), 10, 64); err == nil {
		return adapter.ClampSeconds(secs)
	}
	return 0
}
