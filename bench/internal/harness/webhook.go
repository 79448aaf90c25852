// Package harness is what crewcast's benchmark programs share: signed
// Telnyx webhooks, load loops that record latencies, an in-process
// crewcast with helpers to drive its API, an event-stream reader, and
// process memory readings. It is used by bench (the service benchmarks)
// and by bench/peers (the comparisons with other projects).
package harness

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/crewcast/crewcast/provider/telnyx"
)

// Signer signs webhooks the way Telnyx does (Ed25519 over
// "timestamp|body"), so a crewcast configured with its public key accepts
// them.
type Signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

// NewSigner makes a signer with a fresh random key pair.
func NewSigner() (*Signer, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate webhook key: %w", err)
	}
	return &Signer{priv: priv, pub: pub}, nil
}

// PublicKey is the verifying key.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.pub }

// PublicKeyBase64 is the verifying key as CREWCAST_TELNYX_PUBLIC_KEY takes it.
func (s *Signer) PublicKeyBase64() string { return base64.StdEncoding.EncodeToString(s.pub) }

// PrivateKey is the signing key (the simulator can sign with it too).
func (s *Signer) PrivateKey() ed25519.PrivateKey { return s.priv }

// Webhook is one signed webhook, ready to post any number of times while
// its timestamp is inside the receiver's replay window (±300 s).
type Webhook struct {
	Body      []byte
	Signature string
	Timestamp string
}

// Sign signs body at time at.
func (s *Signer) Sign(body []byte, at time.Time) Webhook {
	h := telnyx.Sign(s.priv, at, body)
	return Webhook{Body: body, Signature: h.Get(telnyx.SignatureHeader), Timestamp: h.Get(telnyx.TimestampHeader)}
}

// SetHeaders puts the webhook's signature headers and content type on h.
func (w Webhook) SetHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set(telnyx.SignatureHeader, w.Signature)
	h.Set(telnyx.TimestampHeader, w.Timestamp)
}

// Status is what a status webhook says about one outbound message.
type Status struct {
	EventID   string
	MessageID string
	From      string
	To        string
	Text      string
	// Status is Telnyx's recipient status: "sent" makes a message.sent
	// event; "delivered", "delivery_failed"… a message.finalized one.
	Status string
	At     time.Time
}

// StatusBody renders a Telnyx status webhook with the fields and size of a
// real one (the shape of Telnyx's documented message.finalized example,
// about 900 bytes).
func StatusBody(s Status) ([]byte, error) {
	event := "message.finalized"
	if s.Status == "sent" {
		event = "message.sent"
	}
	at := s.At.UTC().Format("2006-01-02T15:04:05.000+00:00")
	return json.Marshal(tnxEnvelope{
		Data: tnxData{
			EventType: event, ID: s.EventID, OccurredAt: at, RecordType: "event",
			Payload: tnxPayload{
				CC: []string{}, CompletedAt: at,
				Cost: tnxAmount{0.0051, "USD"},
				CostBreakdown: map[string]tnxAmount{
					"carrier_fee": {"0.00100", "USD"},
					"rate":        {"0.00400", "USD"},
				},
				Direction: "outbound", Errors: []string{},
				From: tnxParty{Carrier: "Telnyx", LineType: "Wireless", PhoneNumber: s.From},
				ID:   s.MessageID, Media: []string{}, Parts: 1, RecordType: "message", Text: s.Text,
				To:   []tnxParty{{Carrier: "T-MOBILE USA, INC.", LineType: "Wireless", PhoneNumber: s.To, Status: s.Status}},
				Type: "SMS",
			},
		},
		Meta: tnxMeta{Attempt: 1, DeliveredTo: "http://127.0.0.1/webhooks/telnyx"},
	})
}

// Telnyx's webhook JSON, as much of it as StatusBody fills in.
type (
	tnxEnvelope struct {
		Data tnxData `json:"data"`
		Meta tnxMeta `json:"meta"`
	}
	tnxData struct {
		EventType  string     `json:"event_type"`
		ID         string     `json:"id"`
		OccurredAt string     `json:"occurred_at"`
		Payload    tnxPayload `json:"payload"`
		RecordType string     `json:"record_type"`
	}
	tnxMeta struct {
		Attempt     int    `json:"attempt"`
		DeliveredTo string `json:"delivered_to"`
	}
	tnxPayload struct {
		CC            []string             `json:"cc"`
		CompletedAt   string               `json:"completed_at"`
		Cost          tnxAmount            `json:"cost"`
		CostBreakdown map[string]tnxAmount `json:"cost_breakdown"`
		Direction     string               `json:"direction"`
		Errors        []string             `json:"errors"`
		From          tnxParty             `json:"from"`
		ID            string               `json:"id"`
		Media         []string             `json:"media"`
		Parts         int                  `json:"parts"`
		RecordType    string               `json:"record_type"`
		Text          string               `json:"text"`
		To            []tnxParty           `json:"to"`
		Type          string               `json:"type"`
	}
	tnxAmount struct {
		Amount   any    `json:"amount"`
		Currency string `json:"currency"`
	}
	tnxParty struct {
		Carrier     string `json:"carrier"`
		LineType    string `json:"line_type"`
		PhoneNumber string `json:"phone_number"`
		Status      string `json:"status,omitempty"`
	}
)
