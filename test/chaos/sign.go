package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// signer makes Telnyx webhooks signed with the simulator's key: the
// harness gives the simulator its signing seed (--telnyx-signing-seed), so
// it can post events of its own that crewcast must accept as genuine.
type signer struct {
	priv ed25519.PrivateKey
}

// newSigner derives a key from seed; seedB64 is what --telnyx-signing-seed
// takes.
func newSigner(seed []byte) (signer, string) {
	return signer{priv: ed25519.NewKeyFromSeed(seed)}, base64.StdEncoding.EncodeToString(seed)
}

// newEventID returns a fresh UUID-shaped event id.
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// statusEvent renders a message.sent or message.finalized event for one
// recipient of one of our messages, as the simulator would.
func statusEvent(eventID, eventType, messageID, from, to, text, status string, at time.Time) []byte {
	payload := map[string]any{
		"record_type": "message", "direction": "outbound", "id": messageID, "type": "SMS",
		"from": map[string]any{"phone_number": from, "carrier": "Telnyx", "line_type": "Wireless"},
		"to":   []map[string]any{{"phone_number": to, "status": status, "carrier": "T-MOBILE USA, INC.", "line_type": "Wireless"}},
		"cc":   []any{}, "text": text, "media": []any{}, "errors": []any{}, "parts": 1,
	}
	return envelope(eventID, eventType, payload, at)
}

// receivedEvent renders a message.received event: person replies text to
// our number.
func receivedEvent(eventID, messageID, person, ours, text string, at time.Time) []byte {
	payload := map[string]any{
		"record_type": "message", "direction": "inbound", "id": messageID, "type": "SMS",
		"from": map[string]any{"phone_number": person, "carrier": "T-MOBILE USA, INC.", "line_type": "Wireless"},
		"to":   []map[string]any{{"phone_number": ours, "status": "webhook_delivered"}},
		"cc":   []any{}, "text": text, "media": []any{}, "errors": []any{}, "parts": 1,
	}
	return envelope(eventID, "message.received", payload, at)
}

func envelope(eventID, eventType string, payload map[string]any, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"data": map[string]any{
			"record_type": "event", "id": eventID, "event_type": eventType,
			"occurred_at": at.UTC().Format("2006-01-02T15:04:05.000+00:00"), "payload": payload,
		},
		"meta": map[string]any{"attempt": 1, "delivered_to": "http://127.0.0.1/webhooks/telnyx"},
	})
	return b
}

// signedPost is a webhook ready to post: its body and headers.
type signedPost struct {
	body []byte
	hdr  http.Header
}

// sign signs body at time at, as Telnyx does: Ed25519 over "timestamp|body".
func (s signer) sign(body []byte, at time.Time) signedPost {
	ts := strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(s.priv, append([]byte(ts+"|"), body...))
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Telnyx-Signature-Ed25519", base64.StdEncoding.EncodeToString(sig))
	h.Set("Telnyx-Timestamp", ts)
	return signedPost{body: body, hdr: h}
}

// post sends a signed webhook to base's Telnyx endpoint and returns the
// HTTP status (0 when there was no answer).
func (p signedPost) post(ctx context.Context, base string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/webhooks/telnyx", bytes.NewReader(p.body))
	if err != nil {
		return 0
	}
	req.Header = p.hdr.Clone()
	resp, err := httpc.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
