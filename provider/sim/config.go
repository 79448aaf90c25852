package sim

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Faults are the simulator's knobs. The JSON names are those of POST
// /sim/faults; the CLI flags use the same names with dashes (fail_rate ↔
// --fail-rate). Rates are probabilities in [0,1] drawn independently per
// recipient (fate, reply) or per webhook event (drop, duplicate), or per
// request (rate limit, 5xx, accept timeout).
type Faults struct {
	// FailRate: a recipient's message.finalized says delivery_failed with an
	// error code drawn from FailCodes (Twilio: undelivered or failed with a
	// code from TwilioFailCodes).
	FailRate float64 `json:"fail_rate"`
	// FailCodes are the Telnyx delivery error codes a failure draws from;
	// empty means DefaultFailCodes.
	FailCodes []string `json:"fail_codes"`
	// TwilioFailCodes are the Twilio ErrorCodes a failure draws from; empty
	// means DefaultTwilioFailCodes. 30001 and 30002 end in status failed
	// (never sent); any other code in undelivered.
	TwilioFailCodes []string `json:"twilio_fail_codes"`
	// UnknownRate: the outcome stays uncertain: Telnyx finalized with
	// delivery_unconfirmed (group MMS: unknown); Twilio stops at sent.
	UnknownRate float64 `json:"unknown_rate"`
	// DuplicateRate: a webhook is posted a second time after the first post.
	DuplicateRate float64 `json:"duplicate_rate"`
	// Reorder: each recipient has an even chance that its final event is
	// posted before its sent event.
	Reorder bool `json:"reorder"`
	// DelayMS is the [min,max] delay in milliseconds before each webhook
	// event of a recipient (after acceptance, then after the previous event).
	DelayMS [2]int `json:"delay_ms"`
	// RateLimitRate: a send is refused with HTTP 429 (Telnyx code 10011,
	// Twilio 20429); nothing is recorded.
	RateLimitRate float64 `json:"rate_limit_rate"`
	// Error5xxRate: a send is refused with HTTP 500; nothing is recorded.
	Error5xxRate float64 `json:"error_5xx_rate"`
	// AcceptTimeoutRate: the ambiguous send. The message is recorded in the
	// ledger and its webhooks flow, but the connection is closed without a
	// response.
	AcceptTimeoutRate float64 `json:"accept_timeout_rate"`
	// DropRate: a webhook event is never posted (the message's status still
	// moves, as a GET shows).
	DropRate float64 `json:"drop_rate"`
	// ReplyRate: after a delivered final event, the recipient replies with
	// one of ReplyTexts.
	ReplyRate float64 `json:"reply_rate"`
	// ReplyTexts are the replies drawn from; empty means DefaultReplyTexts.
	ReplyTexts []string `json:"reply_texts"`
	// Script fixes the fate of particular recipients, by number, whatever
	// the rates drew: "deliver", "fail" or "fail:CODE", "unknown",
	// "accept_timeout" (the send is recorded but its response is never
	// written; "accept_timeout:silent" also drops all its webhooks), or
	// "reply:TEXT" (delivered, then the recipient replies
	// TEXT). Demos and tests use it to show every outcome every time.
	Script map[string]string `json:"script,omitempty"`
	// Outages are the providers that are down, by name: "refuse" or
	// "503" (see outage.go). POST /sim/faults sets one with
	// {"provider","outage"}.
	Outages map[string]string `json:"outages,omitempty"`
	// VoiceAnswer is how people answer calls (voice.go) unless POST
	// /sim/voice/script says otherwise for their number: a digit 1-9,
	// "none" (no answer, the default), "busy", "machine" or "hangup".
	VoiceAnswer string `json:"voice_answer,omitempty"`
}

// Defaults for the lists in Faults.
var (
	// DefaultFailCodes are real Telnyx delivery error codes: not routable,
	// undeliverable, recipient carrier down.
	DefaultFailCodes = []string{"40001", "40008", "40006"}
	// DefaultTwilioFailCodes are real Twilio delivery ErrorCodes: handset
	// unreachable, landline or unreachable carrier, unknown error.
	DefaultTwilioFailCodes = []string{"30003", "30006", "30008"}
	// DefaultReplyTexts are what simulated recipients reply.
	DefaultReplyTexts = []string{"YES", "NO", "running late"}
)

// DefaultFaults are the knobs of a bare `crewcast sim`: everything is
// delivered, after a small delay.
func DefaultFaults() Faults {
	return Faults{DelayMS: [2]int{50, 200}}
}

// DemoFaults is a lifelike preset for the demo provider: most messages are
// delivered within 1–5 s, some fail with real codes, some stay unconfirmed,
// and some recipients reply YES, NO or "running late".
func DemoFaults() Faults {
	return Faults{
		FailRate:    0.08,
		UnknownRate: 0.05,
		DelayMS:     [2]int{500, 2500},
		ReplyRate:   0.6,
		ReplyTexts:  []string{"YES", "YES", "NO", "running late"},
	}
}

// withDefaults fills the empty lists.
func (f Faults) withDefaults() Faults {
	if len(f.FailCodes) == 0 {
		f.FailCodes = append([]string(nil), DefaultFailCodes...)
	}
	if len(f.TwilioFailCodes) == 0 {
		f.TwilioFailCodes = append([]string(nil), DefaultTwilioFailCodes...)
	}
	if len(f.ReplyTexts) == 0 {
		f.ReplyTexts = append([]string(nil), DefaultReplyTexts...)
	}
	return f
}

// failCodes returns the error codes a failure of provider draws from.
func (f Faults) failCodes(provider string) []string {
	if provider == providerTwilio {
		return f.TwilioFailCodes
	}
	return f.FailCodes
}

// Validate reports the first knob out of range.
func (f Faults) Validate() error {
	rates := []struct {
		name string
		v    float64
	}{
		{"fail_rate", f.FailRate}, {"unknown_rate", f.UnknownRate}, {"duplicate_rate", f.DuplicateRate},
		{"rate_limit_rate", f.RateLimitRate}, {"error_5xx_rate", f.Error5xxRate},
		{"accept_timeout_rate", f.AcceptTimeoutRate}, {"drop_rate", f.DropRate}, {"reply_rate", f.ReplyRate},
	}
	for _, r := range rates {
		if !(r.v >= 0 && r.v <= 1) { // also rejects NaN
			return fmt.Errorf("%s must be in [0,1], got %v", r.name, r.v)
		}
	}
	if f.FailRate+f.UnknownRate > 1 {
		return fmt.Errorf("fail_rate + unknown_rate must be at most 1, got %v", f.FailRate+f.UnknownRate)
	}
	if f.RateLimitRate+f.Error5xxRate > 1 {
		return fmt.Errorf("rate_limit_rate + error_5xx_rate must be at most 1, got %v", f.RateLimitRate+f.Error5xxRate)
	}
	if f.VoiceAnswer != "" && !validVoiceAnswer(f.VoiceAnswer) {
		return fmt.Errorf("voice_answer must be a digit 1-9, none, busy, machine or hangup, got %q", f.VoiceAnswer)
	}
	for n, sc := range f.Script {
		switch verb, arg, _ := strings.Cut(sc, ":"); verb {
		case "deliver", "fail", "unknown":
		case "accept_timeout":
			if arg != "" && arg != "silent" {
				return fmt.Errorf("script for %s: accept_timeout takes no argument or :silent", n)
			}
		case "reply":
			if strings.TrimSpace(arg) == "" {
				return fmt.Errorf("script for %s: reply needs a text (reply:TEXT)", n)
			}
		default:
			return fmt.Errorf("script for %s: unknown fate %q (deliver, fail[:CODE], unknown, accept_timeout, reply:TEXT)", n, sc)
		}
	}
	if err := validOutages(f.Outages); err != nil {
		return err
	}
	if f.DelayMS[0] < 0 || f.DelayMS[1] < f.DelayMS[0] {
		return fmt.Errorf("delay_ms must be [min,max] with 0 ≤ min ≤ max, got %v", f.DelayMS)
	}
	for _, list := range []struct {
		name string
		v    []string
	}{{"fail_codes", f.FailCodes}, {"twilio_fail_codes", f.TwilioFailCodes}, {"reply_texts", f.ReplyTexts}} {
		for _, s := range list.v {
			if strings.TrimSpace(s) == "" {
				return fmt.Errorf("%s must not contain empty entries", list.name)
			}
		}
	}
	return nil
}

// ParseDelay parses a --delay-ms value: "min,max" or a single fixed "ms".
func ParseDelay(s string) ([2]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return [2]int{}, fmt.Errorf("delay %q: want min,max", s)
	}
	var d [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return [2]int{}, fmt.Errorf("delay %q: %w", s, err)
		}
		d[i] = n
	}
	if len(parts) == 1 {
		d[1] = d[0]
	}
	if d[0] < 0 || d[1] < d[0] {
		return [2]int{}, fmt.Errorf("delay %q: want 0 ≤ min ≤ max", s)
	}
	return d, nil
}

// Config configures a simulator. The zero value is usable: random keys,
// no webhooks, no faults and no delay.
type Config struct {
	// Faults are the initial knobs, used as given (zero: no delay, no
	// faults); DefaultFaults() is the CLI's starting point.
	Faults Faults
	// Seed, when set, makes every decision, id and key derive from it.
	// Nil: a random seed per run.
	Seed *int64

	// TelnyxWebhookURL and TelnyxFailoverURL are the messaging profile's
	// webhook URLs; a send's own webhook_url/webhook_failover_url win.
	TelnyxWebhookURL  string
	TelnyxFailoverURL string
	// TwilioWebhookURL receives Twilio status callbacks (unless the send
	// names a StatusCallback) and inbound messages.
	TwilioWebhookURL string

	// Credentials; each empty one is derived from Seed, or random.
	TelnyxAPIKey     string
	TelnyxSigningKey ed25519.PrivateKey
	TwilioAccountSID string
	TwilioAuthToken  string

	// ControlToken is the bearer token every /sim/* control route
	// requires (at least 16 characters); empty: a random one, see
	// Sim.ControlToken. It is never derived from Seed.
	ControlToken string

	// Now stamps payloads and the ledger; default time.Now.
	Now func() time.Time
	// Logger receives operational messages (never numbers, texts or keys);
	// default discards.
	Logger *slog.Logger
	// HTTPClient posts webhooks; default a client with its own transport,
	// whose idle connections Stop closes.
	HTTPClient *http.Client

	// WebhookTimeout bounds one webhook attempt; default 2 s, as Telnyx.
	WebhookTimeout time.Duration
	// RetryBackoff is the wait before a failed webhook attempt is retried;
	// default 250 ms (the providers' real intervals are not documented).
	RetryBackoff time.Duration
	// TelnyxAttemptsPerURL defaults to 3, as Telnyx.
	TelnyxAttemptsPerURL int
	// TwilioRetries is the default number of retries of a Twilio webhook
	// (Twilio's rc); default 1. Use NoTwilioRetries for none.
	TwilioRetries int
	// AcceptTimeoutHold is how long the accept-timeout fault holds the
	// request before closing the connection (the client giving up or Stop
	// ends it sooner). 0 closes at once. Go's http.Transport silently
	// replays a POST that carries an Idempotency-Key when a reused
	// connection closes before any answer, and the replay then gets the
	// recorded message; a hold longer than the client's timeout makes the
	// client see the timeout instead.
	AcceptTimeoutHold time.Duration
	// Workers is the number of goroutines posting webhooks; default 8.
	Workers int
	// MaxPending caps the outstanding recipient event chains; default 10000.
	MaxPending int
}

// MinControlToken is the shortest control token Config accepts.
const MinControlToken = 16

// NoTwilioRetries as Config.TwilioRetries turns Twilio webhook retries off.
const NoTwilioRetries = -1

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.WebhookTimeout <= 0 {
		c.WebhookTimeout = 2 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 250 * time.Millisecond
	}
	if c.TelnyxAttemptsPerURL <= 0 {
		c.TelnyxAttemptsPerURL = 3
	}
	switch {
	case c.TwilioRetries == NoTwilioRetries:
		c.TwilioRetries = 0
	case c.TwilioRetries <= 0:
		c.TwilioRetries = 1
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 10000
	}
	return c
}

func (c Config) validate() error {
	if err := c.Faults.Validate(); err != nil {
		return err
	}
	if c.TelnyxSigningKey != nil && len(c.TelnyxSigningKey) != ed25519.PrivateKeySize {
		return errors.New("telnyx signing key must be a 64-byte Ed25519 private key")
	}
	if c.ControlToken != "" && len(c.ControlToken) < MinControlToken {
		return fmt.Errorf("control token must be at least %d characters", MinControlToken)
	}
	if c.TwilioRetries > 5 {
		return fmt.Errorf("twilio retries must be at most 5, got %d", c.TwilioRetries)
	}
	for _, u := range []struct{ name, v string }{
		{"telnyx webhook url", c.TelnyxWebhookURL}, {"telnyx failover url", c.TelnyxFailoverURL},
		{"twilio webhook url", c.TwilioWebhookURL},
	} {
		if u.v != "" && !validWebhookURL(u.v) {
			return fmt.Errorf("%s %q: want an absolute http(s) URL", u.name, u.v)
		}
	}
	return nil
}
