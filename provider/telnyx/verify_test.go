package telnyx

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// The published vector from docs/providers.md §1.8 (RFC 8032 test-1 key).
const (
	vectorTimestamp = "1700000000"
	vectorBody      = `{"data":{"event_type":"message.finalized","id":"evt-1"},"meta":{"attempt":1}}`
	vectorSignature = "u0Qe+Xuh0+/wpD5hqTnQS4CrVoIlg22gEC6m/6HJWgP9h4uqLwQ5O1bQDodqJTOsdm9vxFD9PM5VP/lkU84QDA=="
)

func vectorPublicKey(t *testing.T) ed25519.PublicKey {
	t.Helper()
	pub, err := ParsePublicKey(testPublicKeyB64)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

func TestVerifyPublishedVector(t *testing.T) {
	h := http.Header{}
	h.Set("telnyx-signature-ed25519", vectorSignature)
	h.Set("telnyx-timestamp", vectorTimestamp)
	if err := Verify(vectorPublicKey(t), h, []byte(vectorBody), time.Unix(1700000000, 0), DefaultTolerance); err != nil {
		t.Fatalf("published vector rejected: %v", err)
	}
	// Ed25519 is deterministic, so Sign must reproduce the vector exactly.
	got := Sign(testPrivateKey, time.Unix(1700000000, 0), []byte(vectorBody))
	if got.Get(SignatureHeader) != vectorSignature || got.Get(TimestampHeader) != vectorTimestamp {
		t.Errorf("Sign = %v, want the published vector", got)
	}
	if !testPrivateKey.Public().(ed25519.PublicKey).Equal(vectorPublicKey(t)) {
		t.Error("test seed does not match the published public key")
	}
}

func TestVerifyRejects(t *testing.T) {
	pub := vectorPublicKey(t)
	now := time.Unix(1700000000, 0)
	body := []byte(vectorBody)
	_, otherKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPub := otherKey.Public().(ed25519.PublicKey)
	signed := func(ts time.Time, b []byte) http.Header { return Sign(testPrivateKey, ts, b) }
	flip := func(i int) []byte {
		b := []byte(vectorBody)
		b[i] ^= 0x01
		return b
	}
	withSig := func(sig string) http.Header {
		h := signed(now, body)
		h.Set(SignatureHeader, sig)
		return h
	}
	withTS := func(ts string) http.Header {
		h := signed(now, body)
		h.Set(TimestampHeader, ts)
		return h
	}
	sig := base64.StdEncoding.EncodeToString
	good, _ := base64.StdEncoding.DecodeString(vectorSignature)

	cases := []struct {
		name   string
		pub    ed25519.PublicKey
		header http.Header
		body   []byte
	}{
		{"forged with another key", pub, Sign(otherKey, now, body), body},
		{"verified with the wrong key", otherPub, signed(now, body), body},
		{"public key of 31 bytes", pub[:31], signed(now, body), body},
		{"no public key", nil, signed(now, body), body},
		{"first body byte flipped", pub, signed(now, body), flip(0)},
		{"middle body byte flipped", pub, signed(now, body), flip(len(vectorBody) / 2)},
		{"last body byte flipped", pub, signed(now, body), flip(len(vectorBody) - 1)},
		{"body truncated", pub, signed(now, body), body[:len(body)-1]},
		{"body extended", pub, signed(now, body), append([]byte(vectorBody), ' ')},
		{"signature header missing", pub, func() http.Header { h := signed(now, body); h.Del(SignatureHeader); return h }(), body},
		{"signature header empty", pub, withSig(""), body},
		{"signature not base64", pub, withSig("not*base64!"), body},
		{"signature URL-safe base64", pub, withSig(base64.URLEncoding.EncodeToString(good)), body},
		{"signature 63 bytes", pub, withSig(sig(good[:63])), body},
		{"signature 65 bytes", pub, withSig(sig(append(good[:64:64], 0))), body},
		{"signature all zero", pub, withSig(sig(make([]byte, 64))), body},
		{"timestamp header missing", pub, func() http.Header { h := signed(now, body); h.Del(TimestampHeader); return h }(), body},
		{"timestamp header empty", pub, withTS(""), body},
		{"timestamp not numeric", pub, withTS("17000000a0"), body},
		{"timestamp with sign", pub, withTS("+1700000000"), body},
		{"timestamp negative", pub, withTS("-1700000000"), body},
		{"timestamp with fraction", pub, withTS("1700000000.0"), body},
		{"timestamp with space", pub, withTS(" 1700000000"), body},
		{"timestamp in milliseconds", pub, withTS("1700000000000"), body},
		{"timestamp huge", pub, withTS("99999999999999999999999"), body},
		{"timestamp changed within the window", pub, withTS("1700000001"), body},
		{"timestamp 301 s old", pub, signed(now.Add(-301*time.Second), body), body},
		{"timestamp 301 s ahead", pub, signed(now.Add(301*time.Second), body), body},
		{"timestamp one day old", pub, signed(now.Add(-24*time.Hour), body), body},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.pub, tc.header, tc.body, now, DefaultTolerance)
			if !errors.Is(err, crewcast.ErrBadSignature) {
				t.Errorf("Verify = %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestVerifyWindow(t *testing.T) {
	pub := vectorPublicKey(t)
	now := time.Unix(1700000000, 0)
	body := []byte(vectorBody)
	for _, off := range []int{-300, -299, -1, 0, 1, 299, 300} {
		h := Sign(testPrivateKey, now.Add(time.Duration(off)*time.Second), body)
		if err := Verify(pub, h, body, now, DefaultTolerance); err != nil {
			t.Errorf("offset %+d s rejected: %v", off, err)
		}
	}
	for _, off := range []int{-301, 301} {
		h := Sign(testPrivateKey, now.Add(time.Duration(off)*time.Second), body)
		if err := Verify(pub, h, body, now, DefaultTolerance); !errors.Is(err, crewcast.ErrBadSignature) {
			t.Errorf("offset %+d s: %v, want ErrBadSignature", off, err)
		}
	}
	// The boundary is exact: half a second past 300 s is outside.
	h := Sign(testPrivateKey, now, body)
	if err := Verify(pub, h, body, now.Add(300*time.Second+500*time.Millisecond), DefaultTolerance); !errors.Is(err, crewcast.ErrBadSignature) {
		t.Errorf("300.5 s: %v, want ErrBadSignature", err)
	}
}

func TestVerifyHeaderNamesIgnoreCase(t *testing.T) {
	pub := vectorPublicKey(t)
	now := time.Unix(1700000000, 0)
	for _, names := range [][2]string{
		{"telnyx-signature-ed25519", "telnyx-timestamp"},
		{"TELNYX-SIGNATURE-ED25519", "TELNYX-TIMESTAMP"},
		{"Telnyx-Signature-Ed25519", "Telnyx-Timestamp"},
	} {
		// Built by hand so the keys stay exactly as written.
		h := http.Header{names[0]: {vectorSignature}, names[1]: {vectorTimestamp}}
		if err := Verify(pub, h, []byte(vectorBody), now, DefaultTolerance); err != nil {
			t.Errorf("%v: %v", names, err)
		}
	}
}

func TestParseWebhookVerifiesBeforeDecoding(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	notJSON := []byte("this is { not json")
	unknownEvent := readTestdata(t, "webhooks/unknown_event.json")

	// A bad signature wins over a body that would not decode...
	h := Sign(testPrivateKey, testNow, []byte("something else"))
	_, err := c.ParseWebhook(crewcast.WebhookRequest{Header: h, Body: notJSON})
	if !errors.Is(err, crewcast.ErrBadSignature) || errors.Is(err, crewcast.ErrMalformed) {
		t.Errorf("unsigned non-JSON: %v, want only ErrBadSignature", err)
	}
	// ...and over a body that would decode to "nothing to track".
	_, err = c.ParseWebhook(crewcast.WebhookRequest{Header: http.Header{}, Body: unknownEvent})
	if !errors.Is(err, crewcast.ErrBadSignature) {
		t.Errorf("unsigned unknown event: %v, want ErrBadSignature", err)
	}
	// The same non-JSON body, signed, reaches the decoder.
	_, err = c.ParseWebhook(crewcast.WebhookRequest{Header: Sign(testPrivateKey, testNow, notJSON), Body: notJSON})
	if !errors.Is(err, crewcast.ErrMalformed) || errors.Is(err, crewcast.ErrBadSignature) {
		t.Errorf("signed non-JSON: %v, want only ErrMalformed", err)
	}
	// The published vector verifies, then fails decoding: it has no payload.
	pc := newTestClient(t, "http://127.0.0.1:1", func(cfg *Config) {
		cfg.Now = func() time.Time { return time.Unix(1700000000, 0) }
	})
	vh := http.Header{SignatureHeader: {vectorSignature}, TimestampHeader: {vectorTimestamp}}
	if _, err := pc.ParseWebhook(crewcast.WebhookRequest{Header: vh, Body: []byte(vectorBody)}); !errors.Is(err, crewcast.ErrMalformed) {
		t.Errorf("published vector: %v, want ErrMalformed (verified, but no payload)", err)
	}
}

func TestParseWebhookUsesInjectedClockAndTolerance(t *testing.T) {
	body := readTestdata(t, "webhooks/message_sent.json")
	c := newTestClient(t, "http://127.0.0.1:1", func(cfg *Config) { cfg.Tolerance = 10 * time.Second })
	for off, wantOK := range map[int]bool{-11: false, -10: true, 10: true, 11: false} {
		h := Sign(testPrivateKey, testNow.Add(time.Duration(off)*time.Second), body)
		_, err := c.ParseWebhook(crewcast.WebhookRequest{Header: h, Body: body})
		if (err == nil) != wantOK {
			t.Errorf("offset %+d s with 10 s tolerance: err = %v, want ok=%v", off, err, wantOK)
		}
	}
}

func TestParseUnixSeconds(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1700000000": 1700000000, "000123": 123, "999999999999999999": 999999999999999999} {
		if got, ok := parseUnixSeconds(in); !ok || got != want {
			t.Errorf("parseUnixSeconds(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "1e9", "0x10", "١٢٣", "1000000000000000000", strconv.Itoa(-1)} {
		if _, ok := parseUnixSeconds(in); ok {
			t.Errorf("parseUnixSeconds(%q) accepted", in)
		}
	}
}
