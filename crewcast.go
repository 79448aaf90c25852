// Package crewcast holds the domain vocabulary shared by every part of the
// service: recipient and group statuses, send modes, error classes, the
// normalized provider event and the Provider interface that each provider
// adapter (provider/telnyx, provider/twilio) implements.
//
// The package does no I/O. Adapters and engines import it; it imports none
// of them.
package crewcast

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Status is where one recipient of a group message stands. Statuses only move
// forward (see Status.Rank); the journal records every move.
type Status string

// Recipient statuses, as in docs/design.md §3.
const (
	StatusPending     Status = "pending"     // not yet claimed
	StatusScheduled   Status = "scheduled"   // held until held_until (send_at or quiet hours), then pending
	StatusSending     Status = "sending"     // claimed; provider call in flight
	StatusSent        Status = "sent"        // provider accepted; awaiting receipt
	StatusDelivered   Status = "delivered"   // handset receipt
	StatusFailed      Status = "failed"      // definite failure
	StatusUnconfirmed Status = "unconfirmed" // outcome unknowable (crash or ambiguous provider error)
	StatusUnknown     Status = "unknown"     // accepted, but no final receipt by the deadline
	StatusOptedOut    Status = "opted_out"   // suppressed (STOP or suppression list)
	StatusCanceled    Status = "canceled"    // canceled by an operator before it was claimed
	StatusNotNeeded   Status = "not_needed"  // never texted: the quota filled before their wave (group/waves.go)
)

// AllStatuses lists every recipient status in display order.
var AllStatuses = []Status{StatusScheduled, StatusPending, StatusSending, StatusSent, StatusDelivered, StatusFailed,
	StatusUnconfirmed, StatusUnknown, StatusOptedOut, StatusCanceled, StatusNotNeeded}

// Valid reports whether s is one of the known statuses.
func (s Status) Valid() bool {
	for _, k := range AllStatuses {
		if s == k {
			return true
		}
	}
	return false
}

// Final reports whether no further provider outcome is expected for s
// without an operator action.
func (s Status) Final() bool {
	switch s {
	case StatusDelivered, StatusFailed, StatusUnknown, StatusOptedOut, StatusCanceled, StatusUnconfirmed, StatusNotNeeded:
		return true
	}
	return false
}

// GroupStatus is the state of a whole group message.
type GroupStatus string

// Group statuses. Paused is an addition to docs/design.md §3: a sender or
// configuration failure stops the group until an operator acts.
const (
	GroupSending  GroupStatus = "sending"  // some recipients are pending or sending
	GroupAwaiting GroupStatus = "awaiting" // every send resolved; receipts outstanding
	GroupComplete GroupStatus = "complete" // every recipient is final
	GroupCanceled GroupStatus = "canceled" // canceled by an operator
	GroupPaused   GroupStatus = "paused"   // stopped by a sender/configuration failure
)

// Mode is how a group message is sent.
type Mode string

// Send modes.
const (
	ModeIndividual Mode = "individual" // one provider message per recipient
	ModeGroupMMS   Mode = "group_mms"  // one provider group MMS thread, ≤ MaxGroupMMS recipients
)

// Limits on a group's size per mode (docs/design.md §11: up to 100,000).
const (
	MaxIndividualRecipients = 100000
	MaxGroupMMS             = 8
)

// ErrorClass says what a provider error means for the next step (docs/design.md §4).
type ErrorClass string

// Error classes.
const (
	ClassNone      ErrorClass = ""
	ClassNotSent   ErrorClass = "not_sent"  // rejected before acceptance: safe to resend after backoff
	ClassRecipient ErrorClass = "recipient" // definite failure for this recipient: never resend
	ClassSender    ErrorClass = "sender"    // sender/configuration failure: stop the whole group
	ClassCarrier   ErrorClass = "carrier"   // failed at the carrier, may be transient: resend only by policy/operator
	ClassUncertain ErrorClass = "uncertain" // may or may not have been sent: never resend automatically
)

// Ack is a recipient's parsed acknowledgement.
type Ack string

// Acknowledgements parsed from replies.
const (
	AckNone Ack = ""
	AckYes  Ack = "yes"
	AckNo   Ack = "no"
)

// EventKind says what a normalized provider event reports.
type EventKind string

// Event kinds.
const (
	KindSent    EventKind = "sent"    // handed to the carrier (Telnyx message.sent)
	KindStatus  EventKind = "status"  // a delivery status update (message.finalized, Twilio status callback)
	KindInbound EventKind = "inbound" // a message from a person to one of our numbers
	// KindCallEnded is the end of a ladder's voice call: ProviderStatus is
	// its outcome (answered, no_answer, busy, machine, failed), Text the
	// digits pressed, To the person's number, MessageID the group's id.
	KindCallEnded EventKind = "call_ended"
)

// Event is one provider webhook event in crewcast's vocabulary. A webhook
// that reports several recipients yields several Events with the same
// EventID; the inbox deduplicates on (Provider, EventID).
type Event struct {
	Provider       string    `json:"provider"`   // "telnyx" or "twilio"
	EventID        string    `json:"event_id"`   // dedupe key
	Kind           EventKind `json:"kind"`       // sent / status / inbound
	MessageID      string    `json:"message_id"` // provider message id
	GroupMessageID string    `json:"group_message_id,omitempty"`
	From           string    `json:"from"` // outbound: our number; inbound: the sender
	To             string    `json:"to"`   // outbound: the recipient; inbound: our number
	// Status is the recipient's status in crewcast's vocabulary: sent,
	// delivered, failed or unknown for outbound events; empty for inbound.
	Status         Status     `json:"status,omitempty"`
	ProviderStatus string     `json:"provider_status,omitempty"` // the provider's own word
	ErrorCode      string     `json:"error_code,omitempty"`
	ErrorClass     ErrorClass `json:"error_class,omitempty"`
	OptOut         bool       `json:"opt_out,omitempty"` // the error means the recipient opted out
	OccurredAt     time.Time  `json:"occurred_at"`
	Text           string     `json:"text,omitempty"`  // inbound text; for outbound events the body the provider reports
	Media          []string   `json:"media,omitempty"` // inbound media URLs
	CC             []string   `json:"cc,omitempty"`    // other participants of a group thread
	Attempt        int        `json:"attempt,omitempty"`
}

// SendRequest is one provider send: one recipient (individual mode) or up to
// MaxGroupMMS recipients (group MMS).
type SendRequest struct {
	From      string
	To        []string
	Text      string
	MediaURLs []string
	// IdempotencyKey is the deterministic claim key (group, recipient,
	// attempt). Sent only to providers that honour one (the simulator).
	IdempotencyKey string
	// WebhookURL, when set, asks the provider to post this message's
	// webhooks there instead of the account default.
	WebhookURL string
}

// SendResult is what a provider said when it accepted a send.
type SendResult struct {
	MessageID      string
	GroupMessageID string
	// Recipients is the per-recipient status the provider reported on
	// acceptance (group MMS reports one per recipient).
	Recipients []RecipientStatus
}

// RecipientStatus is one recipient's status as a provider reports it.
type RecipientStatus struct {
	Number         string
	Status         Status
	ProviderStatus string
	ErrorCode      string
	ErrorClass     ErrorClass
	OptOut         bool
}

// MessageStatus is the answer to a status lookup.
type MessageStatus struct {
	MessageID  string
	Recipients []RecipientStatus
}

// SendError is a provider's refusal or a transport failure on send. Class
// decides what happens next; callers branch on it, never on the message.
type SendError struct {
	Provider   string
	HTTPStatus int           // 0 for transport failures
	Code       string        // provider error code ("40300", "21610", "10011"...)
	Detail     string        // provider's text; may be shown to operators
	Class      ErrorClass    // classification per docs/design.md §4
	OptOut     bool          // the recipient opted out: record a suppression
	RetryAfter time.Duration // for ClassNotSent: how long to wait, if the provider said
	Err        error         // the underlying transport error, if any
}

func (e *SendError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("%s send: %s: %v", e.Provider, e.Class, e.Err)
	case e.Code != "":
		return fmt.Sprintf("%s send: HTTP %d code %s (%s): %s", e.Provider, e.HTTPStatus, e.Code, e.Class, e.Detail)
	default:
		return fmt.Sprintf("%s send: HTTP %d (%s)", e.Provider, e.HTTPStatus, e.Class)
	}
}

func (e *SendError) Unwrap() error { return e.Err }

// ClassOf returns the class of a send error: the SendError's class, or
// ClassUncertain for any other error (an unclassified failure may have sent).
func ClassOf(err error) ErrorClass {
	if err == nil {
		return ClassNone
	}
	var se *SendError
	if errors.As(err, &se) {
		return se.Class
	}
	return ClassUncertain
}

// WebhookRequest is an incoming webhook as received: the URL the provider
// posted to (for Twilio signatures), the headers and the raw body.
type WebhookRequest struct {
	URL    string
	Header http.Header
	Body   []byte
}

// Webhook errors; the HTTP layer maps them to status codes.
var (
	// ErrBadSignature: the signature is missing, malformed, wrong or outside
	// the replay window. Nothing was parsed. → 401/403.
	ErrBadSignature = errors.New("webhook signature invalid")
	// ErrMalformed: the signature held but the body could not be parsed. → 400.
	ErrMalformed = errors.New("webhook body malformed")
	// ErrGroupMMSUnsupported: the provider has no group MMS send.
	ErrGroupMMSUnsupported = errors.New("provider does not support group MMS")
)

// SentMessage is one message a provider's own record says it accepted.
type SentMessage struct {
	MessageID string
	From      string
	To        string
	Text      string
	CreatedAt time.Time
}

// SentLister is implemented by a provider that can list the messages it
// accepted from one of our numbers since a time (Twilio's message list;
// the simulator). After a failover onto an asynchronous standby the
// claims of the messages sent just before it may be gone; this is how
// crewcast finds out which of them did go out before anything is resent
// (docs/design.md §19).
type SentLister interface {
	ListSent(ctx context.Context, from string, since time.Time) ([]SentMessage, error)
}

// Provider is one SMS/MMS provider: send, look up, and turn webhooks into
// Events. Implementations must not retry sends on their own.
type Provider interface {
	// Name is the provider's short name: "telnyx", "twilio".
	Name() string
	// Send sends one message to req.To[0].
	Send(ctx context.Context, req SendRequest) (SendResult, error)
	// SendGroupMMS sends one group MMS to all of req.To (≤ MaxGroupMMS), or
	// returns ErrGroupMMSUnsupported.
	SendGroupMMS(ctx context.Context, req SendRequest) (SendResult, error)
	// Lookup asks the provider for a message's current status.
	Lookup(ctx context.Context, messageID string) (MessageStatus, error)
	// ParseWebhook verifies the request's signature before reading the body
	// as anything but bytes, then parses it. It returns ErrBadSignature or
	// ErrMalformed (wrapped) on failure. A valid webhook that carries nothing
	// crewcast tracks returns no events and no error.
	ParseWebhook(req WebhookRequest) ([]Event, error)
}

// Call outcomes of a ladder's voice call (docs/design.md §17,
// recipient.call_ended).
const (
	CallAnswered = "answered"
	CallNoAnswer = "no_answer"
	CallBusy     = "busy"
	CallMachine  = "machine"
	CallFailed   = "failed"
)

// CallEvent is a verified voice callback of a ladder's call: a gather's
// digit or the call's status (Twilio TwiML and Telnyx TeXML post the same
// form fields).
type CallEvent struct {
	CallSID    string
	From, To   string // our number, the person's
	CallStatus string // the provider's word
	AnsweredBy string
	Digits     string // the gather's, "" on a status callback
	// Query is the callback URL's query.
	Query url.Values
}

// Outcome maps a final status to a call outcome; ok is false for a status
// that is not final (queued, initiated, ringing, in-progress).
func (e CallEvent) Outcome() (outcome string, ok bool) {
	switch strings.ToLower(e.CallStatus) {
	case "completed":
		if strings.HasPrefix(e.AnsweredBy, "machine") || e.AnsweredBy == "fax" {
			return CallMachine, true
		}
		return CallAnswered, true
	case "no-answer", "canceled":
		return CallNoAnswer, true
	case "busy":
		return CallBusy, true
	case "failed":
		return CallFailed, true
	}
	return "", false
}
