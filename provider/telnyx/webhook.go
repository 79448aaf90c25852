package telnyx

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/crewcast/crewcast"
)

// Webhook event types crewcast tracks; every other event type is
// acknowledged and ignored.
const (
	EventMessageSent      = "message.sent"
	EventMessageFinalized = "message.finalized"
	EventMessageReceived  = "message.received"
)

// envelope is a Telnyx webhook: {"data":{...},"meta":{...}}, decoded in
// one pass with data.payload as a message.
type envelope struct {
	Data *eventData `json:"data"`
	Meta *struct {
		Attempt flexInt `json:"attempt"`
	} `json:"meta"`
}

// eventData is an envelope's data.
type eventData struct {
	ID         flexString `json:"id"`
	EventType  flexString `json:"event_type"`
	OccurredAt flexString `json:"occurred_at"`
	Payload    *message   `json:"payload"`
}

// eventTypeOnly reads just data.event_type, for bodies whose payload is
// not a message: events crewcast does not track may carry any payload.
type eventTypeOnly struct {
	Data *struct {
		EventType flexString `json:"event_type"`
	} `json:"data"`
}

// ParseWebhook verifies req's signature with the configured public key and
// clock, then turns the body into Events:
//   - message.sent and message.finalized give one Event per to[] entry
//     (KindSent / KindStatus), all with the webhook's data.id as EventID
//     and the message's text as Text.
//   - message.received gives one KindInbound Event: From is the sender,
//     To the first to[] entry (our number; a reply reaches one of our
//     numbers per webhook), CC every distinct cc[] participant except the
//     sender, in the order given. CC keeps our own number if Telnyx lists
//     it; the router matches participant sets and knows its numbers.
//   - any other event type gives no Events and no error.
//
// A failed signature wraps crewcast.ErrBadSignature and nothing was
// decoded; a body that verifies but cannot be read wraps
// crewcast.ErrMalformed.
func (c *Client) ParseWebhook(req crewcast.WebhookRequest) ([]crewcast.Event, error) {
	if err := c.verifier.Verify(req.Header, req.Body, c.now(), c.tolerance); err != nil {
		return nil, err
	}
	return parseEvents(req.Body)
}

// parseEvents decodes a verified webhook body.
func parseEvents(body []byte) ([]crewcast.Event, error) {
	env, err := decodeEnvelope(body)
	if env == nil || err != nil {
		return nil, err
	}
	d := env.Data
	var kind crewcast.EventKind
	switch d.EventType {
	case EventMessageSent:
		kind = crewcast.KindSent
	case EventMessageFinalized:
		kind = crewcast.KindStatus
	case EventMessageReceived:
		kind = crewcast.KindInbound
	default:
		return nil, nil
	}
	base, err := baseEvent(env, kind)
	if err != nil {
		return nil, err
	}
	if kind == crewcast.KindInbound {
		return inboundEvents(base, d.Payload)
	}
	return statusEvents(base, d)
}

// decodeEnvelope decodes a webhook body; nil and no error for a payload
// that is not a message of an event type we track.
func decodeEnvelope(body []byte) (*envelope, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		// Either not JSON, or a payload that is not a message: only an
		// error when the event type is one we track.
		var only eventTypeOnly
		if err2 := json.Unmarshal(body, &only); err2 != nil {
			return nil, malformed("decode: %v", err2)
		}
		if only.Data == nil || only.Data.EventType == "" {
			return nil, malformed("no data.event_type")
		}
		switch only.Data.EventType {
		case EventMessageSent, EventMessageFinalized, EventMessageReceived:
			return nil, malformed("decode payload: %v", err)
		}
		return nil, nil
	}
	if env.Data == nil || env.Data.EventType == "" {
		return nil, malformed("no data.event_type")
	}
	return &env, nil
}

// baseEvent is what every event of one webhook shares.
func baseEvent(env *envelope, kind crewcast.EventKind) (crewcast.Event, error) {
	d := env.Data
	if d.ID == "" {
		return crewcast.Event{}, malformed("%s without data.id", d.EventType)
	}
	p := d.Payload
	if p == nil || p.ID == "" {
		return crewcast.Event{}, malformed("%s without payload.id", d.EventType)
	}
	var occurred time.Time
	if d.OccurredAt != "" {
		t, err := time.Parse(time.RFC3339Nano, d.OccurredAt.String())
		if err != nil {
			return crewcast.Event{}, malformed("occurred_at is not RFC 3339")
		}
		occurred = t.UTC()
	}
	base := crewcast.Event{
		Provider:       ProviderName,
		EventID:        d.ID.String(),
		Kind:           kind,
		MessageID:      p.ID.String(),
		GroupMessageID: p.GroupMessageID.String(),
		From:           p.From.PhoneNumber,
		OccurredAt:     occurred,
		// Outbound events carry the body too: it is how an orphan webhook
		// proves which unconfirmed send it belongs to.
		Text: p.Text.String(),
	}
	if env.Meta != nil {
		base.Attempt = int(env.Meta.Attempt)
	}
	return base, nil
}

// inboundEvents is a message.received: one event, the CC'd numbers of a
// group MMS beside it, each once.
func inboundEvents(base crewcast.Event, p *message) ([]crewcast.Event, error) {
	if p.From.PhoneNumber == "" || len(p.To) == 0 || p.To[0].PhoneNumber == "" {
		return nil, malformed("message.received without from or to")
	}
	ev := base
	ev.To = p.To[0].PhoneNumber
	ev.Media = []string(p.Media)
	seen := map[string]bool{p.From.PhoneNumber: true}
	for _, cc := range p.CC {
		if cc.PhoneNumber != "" && !seen[cc.PhoneNumber] {
			seen[cc.PhoneNumber] = true
			ev.CC = append(ev.CC, cc.PhoneNumber)
		}
	}
	return []crewcast.Event{ev}, nil
}

// statusEvents is a message.sent or message.finalized: one event per
// recipient, with its status.
func statusEvents(base crewcast.Event, d *eventData) ([]crewcast.Event, error) {
	p := d.Payload
	if len(p.To) == 0 {
		return nil, malformed("%s without recipients", d.EventType)
	}
	unrecognized := crewcast.StatusUnknown
	if base.Kind == crewcast.KindSent {
		unrecognized = crewcast.StatusSent // message.sent itself says it left
	}
	events := make([]crewcast.Event, 0, len(p.To))
	for _, rs := range recipientStatuses(p, unrecognized) {
		if rs.Number == "" {
			return nil, malformed("%s recipient without phone_number", d.EventType)
		}
		ev := base
		ev.To = rs.Number
		ev.Status = rs.Status
		ev.ProviderStatus = rs.ProviderStatus
		ev.ErrorCode = rs.ErrorCode
		ev.ErrorClass = rs.ErrorClass
		ev.OptOut = rs.OptOut
		events = append(events, ev)
	}
	return events, nil
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("telnyx: %w: %s", crewcast.ErrMalformed, fmt.Sprintf(format, args...))
}
