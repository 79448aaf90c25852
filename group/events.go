package group

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/crewcast/crewcast"
)

// Event is one fact in a group's journal. Apply turns events into state;
// nothing else changes a Group.
type Event interface {
	// Type is the journal type name, e.g. "group.created".
	Type() string
}

// Journal type names.
const (
	TypeCreated     = "group.created"
	TypeClaimed     = "send.claimed"
	TypeOutcomes    = "send.outcomes"
	TypeObserved    = "status.observed"
	TypeReplied     = "reply.received"
	TypeUnconfirmed = "send.unconfirmed"
	TypeChecked     = "status.checked"
	TypeExpired     = "status.expired"
	TypeCanceled    = "group.canceled"
	TypeQuorumMet   = "group.quorum_met"
	TypeResolved    = "recipient.resolved"
	TypeRetry       = "recipient.retry"
	TypeResumed     = "group.resumed"
	TypeSuppressed  = "recipient.suppressed"
)

// RosterEntry is one recipient as the group was created.
type RosterEntry struct {
	Number string `json:"number"`
	Name   string `json:"name,omitempty"`
	// Suppressed is set when the number was on the suppression list at
	// creation: the recipient starts as opted_out and is never sent to.
	Suppressed bool `json:"suppressed,omitempty"`
	// ContactID is the contact this recipient was chosen as ("" for a raw
	// number nobody has saved).
	ContactID string `json:"contact_id,omitempty"`
	// Text is this recipient's rendered text when it differs from the
	// group's (templates, docs/design.md §11); "" means the group's text.
	Text string `json:"text,omitempty"`
	// TZ is the recipient's IANA time zone ("" = the policy's default),
	// for quiet hours.
	TZ string `json:"tz,omitempty"`
}

// Created starts a group's journal.
type Created struct {
	ID   string `json:"id"`
	From string `json:"from"`
	// Pool and Senders, for a pool group (pool.go): Senders[i] is the
	// number recipient i is texted from.
	Pool       string        `json:"pool,omitempty"`
	Senders    []string      `json:"senders,omitempty"`
	Text       string        `json:"text"`
	MediaURLs  []string      `json:"media_urls,omitempty"`
	Mode       crewcast.Mode `json:"mode"`
	At         time.Time     `json:"at"`
	Settings   Settings      `json:"settings"`
	Recipients []RosterEntry `json:"recipients"`
	// Responses are the answers the group asks for; Quorum, when set, is
	// how many of one answer it needs.
	Responses []Option     `json:"responses,omitempty"`
	Quorum    *QuorumState `json:"quorum,omitempty"`
	// By names who created the group (an API key id), for the audit trail.
	By string `json:"by,omitempty"`
	// Policy: follow-ups, escalation, send_at, quiet hours (followup.go).
	Policy *Policy `json:"policy,omitempty"`
}

// Send is one provider call: one recipient in individual mode, the whole
// thread in group MMS mode.
type Send struct {
	ID      string `json:"send_id"`
	Indices []int  `json:"i"`
}

// Claimed records claims, committed before any of these sends is made.
// Each claimed recipient's attempt count grows by one.
type Claimed struct {
	At    time.Time `json:"at"`
	Sends []Send    `json:"sends"`
}

// Results of a provider send, as recorded in Outcome.Result.
const (
	ResultAccepted    = "accepted"     // provider accepted: now sent
	ResultFailed      = "failed"       // definite failure: never resent automatically
	ResultRetry       = "retry"        // certainly not sent: pending again after backoff
	ResultRateLimited = "rate_limited" // 429: pending again after Retry-After; attempt given back
	ResultUncertain   = "uncertain"    // may have been sent: unconfirmed
	ResultHalted      = "halted"       // sender/config failure: group paused; attempt given back
	// ResultSuppressed: not sent, because the number was on the
	// suppression list when the provider call was about to be made (a
	// suppression committed after the claim): opted_out; attempt given back.
	ResultSuppressed = "suppressed"
)

// Outcome is what became of one Send.
type Outcome struct {
	SendID         string              `json:"send_id"`
	Indices        []int               `json:"i"`
	Result         string              `json:"result"`
	MessageID      string              `json:"message_id,omitempty"`
	GroupMessageID string              `json:"group_message_id,omitempty"`
	Code           string              `json:"code,omitempty"`
	Class          crewcast.ErrorClass `json:"class,omitempty"`
	Detail         string              `json:"detail,omitempty"`
	OptOut         bool                `json:"opt_out,omitempty"`
	// Provider is the provider that made the call ("" = the default).
	Provider string `json:"provider,omitempty"`
	// Suppressed, for ResultSuppressed, lists the recipients found on the
	// suppression list (nil: all of Indices); the others of the send are
	// pending again with the attempt given back.
	Suppressed []int `json:"suppressed,omitempty"`
	// RetryAt is when a retry or rate-limited recipient may be claimed again.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Channel is a ladder step's channel when it is not a text ("voice",
	// "email"; follow-up outcomes only).
	Channel string `json:"channel,omitempty"`
}

// Outcomes records the results of provider sends, many per event.
type Outcomes struct {
	At       time.Time `json:"at"`
	Outcomes []Outcome `json:"outcomes"`
}

// Sources of an Observed status.
const (
	SourceWebhook   = "webhook"
	SourceLookup    = "lookup"
	SourceReconcile = "reconcile" // an orphan webhook proved an unconfirmed send went out
)

// Observed is a recipient status reported by the provider.
type Observed struct {
	At             time.Time           `json:"at"`
	EventID        string              `json:"event_id,omitempty"`
	Source         string              `json:"source"`
	Index          int                 `json:"i"`
	MessageID      string              `json:"message_id"`
	GroupMessageID string              `json:"group_message_id,omitempty"`
	Status         crewcast.Status     `json:"status"`
	ProviderStatus string              `json:"provider_status,omitempty"`
	Code           string              `json:"code,omitempty"`
	Class          crewcast.ErrorClass `json:"class,omitempty"`
	OptOut         bool                `json:"opt_out,omitempty"`
	OccurredAt     time.Time           `json:"occurred_at,omitzero"`
	// Evidence, for SourceReconcile, says why the orphan matched.
	Evidence string `json:"evidence,omitempty"`
}

// Keywords a reply may carry.
const (
	KeywordStop  = "stop"
	KeywordStart = "start"
	KeywordHelp  = "help"
)

// Replied is a message from a recipient.
type Replied struct {
	At      time.Time    `json:"at"`
	EventID string       `json:"event_id,omitempty"`
	Index   int          `json:"i"`
	Text    string       `json:"text"`
	Media   []string     `json:"media,omitempty"`
	Ack     crewcast.Ack `json:"ack,omitempty"`
	Keyword string       `json:"keyword,omitempty"`
	// PossibleOptOut flags a reply with a stop word among other words
	// ("I can't stop by today"): not an opt-out, for a person to decide.
	PossibleOptOut bool `json:"possible_opt_out,omitempty"`
	// Response is the key of the response option the reply chose ("" =
	// none; a later answer replaces an earlier one).
	Response string `json:"response,omitempty"`
	// Channel is how the answer came when not by text: "voice" (a key
	// pressed on a ladder's call) or "email" (an answer link).
	Channel string `json:"channel,omitempty"`
	// SentAt is when the person sent it, by the provider's clock (Twilio:
	// when crewcast received it); zero in events written before it existed.
	// An answer sent before the recipient's latest one is counted but does
	// not replace it.
	SentAt time.Time `json:"sent_at,omitzero"`
}

// QuorumMet records the moment enough people chose the quorum's answer
// (docs/design.md §11). With Cancel, sends not yet made are canceled, as by
// Canceled.
type QuorumMet struct {
	At       time.Time `json:"at"`
	Response string    `json:"response"`
	Count    int       `json:"count"`
	Cancel   bool      `json:"cancel,omitempty"`
}

// Unconfirmed marks sends whose outcome cannot be known (a crash between
// claim and result).
type Unconfirmed struct {
	At      time.Time `json:"at"`
	Indices []int     `json:"i"`
	Reason  string    `json:"reason"`
}

// Checked records a status lookup that found no final status yet.
type Checked struct {
	At             time.Time `json:"at"`
	Index          int       `json:"i"`
	ProviderStatus string    `json:"provider_status,omitempty"`
	Error          string    `json:"error,omitempty"`
	NextCheckAt    time.Time `json:"next_check_at"`
}

// Expired marks recipients with no final receipt by the deadline as unknown.
type Expired struct {
	At      time.Time `json:"at"`
	Indices []int     `json:"i"`
	Reason  string    `json:"reason"`
}

// Canceled stops a group: pending recipients become canceled; sends in
// flight finish and are recorded.
type Canceled struct {
	At time.Time `json:"at"`
	By string    `json:"by,omitempty"`
}

// Resolutions an operator may give an unconfirmed recipient.
const (
	ResolveDelivered    = "delivered"
	ResolveNotDelivered = "not_delivered"
)

// Resolved is an operator's decision about an unconfirmed or unknown
// recipient. The journal keeps who decided (By) and what the recipient was
// before (From; empty in events written before unknown could be resolved,
// when it was always unconfirmed).
type Resolved struct {
	At      time.Time       `json:"at"`
	Index   int             `json:"i"`
	Outcome string          `json:"outcome"`
	By      string          `json:"by,omitempty"`
	From    crewcast.Status `json:"from,omitempty"`
}

// RetryRequested is an operator's request to send to a failed recipient again.
type RetryRequested struct {
	At    time.Time `json:"at"`
	Index int       `json:"i"`
	By    string    `json:"by,omitempty"`
}

// SuppressedRecipient is one recipient found on the suppression list.
type SuppressedRecipient struct {
	Index int `json:"i"`
	// Reason is the suppression's reason (manual, stop, provider_opt_out).
	Reason string `json:"reason"`
}

// Suppressed records pending recipients found on the suppression list
// before they were claimed (a suppression added after the group was
// created): they become opted_out and are never sent to.
type Suppressed struct {
	At         time.Time             `json:"at"`
	Recipients []SuppressedRecipient `json:"recipients"`
}

// Resumed lifts a pause.
type Resumed struct {
	At time.Time `json:"at"`
	By string    `json:"by,omitempty"`
}

func (Created) Type() string        { return TypeCreated }
func (Claimed) Type() string        { return TypeClaimed }
func (Outcomes) Type() string       { return TypeOutcomes }
func (Observed) Type() string       { return TypeObserved }
func (Replied) Type() string        { return TypeReplied }
func (Unconfirmed) Type() string    { return TypeUnconfirmed }
func (Checked) Type() string        { return TypeChecked }
func (Expired) Type() string        { return TypeExpired }
func (Canceled) Type() string       { return TypeCanceled }
func (QuorumMet) Type() string      { return TypeQuorumMet }
func (Resolved) Type() string       { return TypeResolved }
func (RetryRequested) Type() string { return TypeRetry }
func (Resumed) Type() string        { return TypeResumed }
func (Suppressed) Type() string     { return TypeSuppressed }

// Encode returns an event's journal type and JSON data.
func Encode(e Event) (string, []byte, error) {
	var data []byte
	var err error
	if c, ok := e.(Created); ok {
		data, err = encodeCreated(c)
	} else {
		data, err = json.Marshal(e)
	}
	if err != nil {
		return "", nil, fmt.Errorf("encode %s: %w", e.Type(), err)
	}
	return e.Type(), data, nil
}

// Decode parses journal data of the given type.
func Decode(typ string, data []byte) (Event, error) {
	var e Event
	switch typ {
	case TypeCreated:
		e = &Created{}
	case TypeClaimed:
		e = &Claimed{}
	case TypeOutcomes:
		e = &Outcomes{}
	case TypeObserved:
		e = &Observed{}
	case TypeReplied:
		e = &Replied{}
	case TypeUnconfirmed:
		e = &Unconfirmed{}
	case TypeChecked:
		e = &Checked{}
	case TypeExpired:
		e = &Expired{}
	case TypeCanceled:
		e = &Canceled{}
	case TypeQuorumMet:
		e = &QuorumMet{}
	case TypeResolved:
		e = &Resolved{}
	case TypeRetry:
		e = &RetryRequested{}
	case TypeResumed:
		e = &Resumed{}
	case TypeSuppressed:
		e = &Suppressed{}
	case TypeFailoverReconciled:
		e = &FailoverReconciled{}
	default:
		if e = newPolicyEvent(typ); e == nil {
			return nil, fmt.Errorf("decode: unknown event type %q", typ)
		}
	}
	if err := json.Unmarshal(data, e); err != nil {
		return nil, fmt.Errorf("decode %s: %w", typ, err)
	}
	return deref(e), nil
}

// deref turns the pointer Decode filled into the value type Apply expects.
func deref(e Event) Event {
	switch v := e.(type) {
	case *FailoverReconciled:
		return *v
	case *Created:
		return *v
	case *Claimed:
		return *v
	case *Outcomes:
		return *v
	case *Observed:
		return *v
	case *Replied:
		return *v
	case *Unconfirmed:
		return *v
	case *Checked:
		return *v
	case *Expired:
		return *v
	case *Canceled:
		return *v
	case *QuorumMet:
		return *v
	case *Resolved:
		return *v
	case *RetryRequested:
		return *v
	case *Resumed:
		return *v
	case *Suppressed:
		return *v
	}
	return derefPolicyEvent(e)
}

// Indices lists the recipients an event touches (nil for group-wide events
// such as Created, Canceled and Resumed), for per-recipient timelines.
func Indices(e Event) []int {
	switch v := e.(type) {
	case Claimed:
		var out []int
		for _, s := range v.Sends {
			out = append(out, s.Indices...)
		}
		return out
	case Outcomes:
		var out []int
		for _, o := range v.Outcomes {
			out = append(out, o.Indices...)
		}
		return out
	case Observed:
		return []int{v.Index}
	case Replied:
		return []int{v.Index}
	case Unconfirmed:
		return v.Indices
	case Checked:
		return []int{v.Index}
	case Expired:
		return v.Indices
	case Resolved:
		return []int{v.Index}
	case RetryRequested:
		return []int{v.Index}
	case Suppressed:
		out := make([]int, len(v.Recipients))
		for k, r := range v.Recipients {
			out[k] = r.Index
		}
		return out
	}
	return policyEventIndices(e)
}
