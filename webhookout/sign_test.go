package webhookout

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The specification's example (also the official libraries' test vector).
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = 1614265330
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignHMACVector(t *testing.T) {
	got, err := Sign(vecID, time.Unix(vecTS, 0), []byte(vecBody), vecSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got != vecSig {
		t.Fatalf("signature %q, want %q", got, vecSig)
	}
}

func headers(id string, ts time.Time, sig string) http.Header {
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	h.Set("webhook-signature", sig)
	return h
}

// The official Go library verifies crewcast's signatures, including a
// header carrying two during a rotation (either secret verifies).
func TestSignVerifiedByOfficialLibrary(t *testing.T) {
	old, err := NewHMACSecret()
	if err != nil {
		t.Fatal(err)
	}
	cur, err := NewHMACSecret()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"recipient.updated","timestamp":"2026-03-01T12:00:00Z","data":{"group_id":"g1","seq":3}}`)
	now := time.Now()
	sig, err := Sign("msg_abc", now, body, cur, old)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(sig)); n != 2 {
		t.Fatalf("rotation header %q has %d signatures, want 2", sig, n)
	}
	for _, secret := range []string{cur, old} {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, headers("msg_abc", now, sig)); err != nil {
			t.Fatalf("official library rejects the signature with one of the rotation secrets: %v", err)
		}
		if err := wh.Verify(append(body, ' '), headers("msg_abc", now, sig)); err == nil {
			t.Fatal("official library accepts a changed body")
		}
	}
	other, _ := NewHMACSecret()
	wh, _ := standardwebhooks.NewWebhook(other)
	if err := wh.Verify(body, headers("msg_abc", now, sig)); err == nil {
		t.Fatal("a third secret verifies")
	}
}

// verifyV1a is an Ed25519 verifier written from the specification's text
// (the published Go library v0.0.1 has none): the signed content is
// "{id}.{timestamp}.{body}", each space-separated "v1a,<base64>" entry is a
// signature, the public key is whpk_<base64 of 32 bytes>.
func verifyV1a(pub string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(pub, "whpk_"))
	if err != nil || len(key) != ed25519.PublicKeySize {
		return false
	}
	content := h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)
	for _, s := range strings.Fields(h.Get("webhook-signature")) {
		v, sig, ok := strings.Cut(s, ",")
		if !ok || v != "v1a" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && ed25519.Verify(key, []byte(content), raw) {
			return true
		}
	}
	return false
}

func TestSignEd25519(t *testing.T) {
	priv, pub, err := NewEd25519Key()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(priv, "whsk_") || !strings.HasPrefix(pub, "whpk_") {
		t.Fatalf("key prefixes %q %q", priv[:5], pub[:5])
	}
	if p, err := PublicOf(priv); err != nil || p != pub {
		t.Fatalf("PublicOf = %q %v, want %q", p, err, pub)
	}
	priv2, pub2, _ := NewEd25519Key()
	body := []byte(`{"type":"group.completed"}`)
	now := time.Unix(1700000000, 0)
	sig, err := Sign("msg_x", now, body, priv2, priv)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sig, "v1a,") || len(strings.Fields(sig)) != 2 {
		t.Fatalf("signature header %q", sig)
	}
	h := headers("msg_x", now, sig)
	if !verifyV1a(pub, h, body) || !verifyV1a(pub2, h, body) {
		t.Fatal("a rotation key does not verify")
	}
	if verifyV1a(pub, h, []byte(`{"type":"group.canceled"}`)) {
		t.Fatal("verifies a changed body")
	}
	h.Set("webhook-timestamp", "1700000001")
	if verifyV1a(pub, h, body) {
		t.Fatal("verifies a changed timestamp")
	}
}

func TestSealer(t *testing.T) {
	s, err := NewSealer("a server key of some length")
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := s.Seal("ep_1", vecSecret)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sealed), "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") {
		t.Fatal("the sealed form contains the secret")
	}
	if got, err := s.Open("ep_1", sealed); err != nil || got != vecSecret {
		t.Fatalf("open = %q %v", got, err)
	}
	// Bound to its endpoint: copied to another row it does not open.
	if _, err := s.Open("ep_2", sealed); err == nil {
		t.Fatal("a sealed secret opens for another endpoint")
	}
	// A dump alone (no key, or another key) cannot open it.
	if _, err := (&Sealer{}).Open("ep_1", sealed); err == nil {
		t.Fatal("opened without the key")
	}
	other, _ := NewSealer("another server key entirely")
	if _, err := other.Open("ep_1", sealed); err == nil {
		t.Fatal("opened with another key")
	}
	clear, _ := (&Sealer{}).Seal("ep_1", vecSecret)
	if got, err := s.Open("ep_1", clear); err != nil || got != vecSecret {
		t.Fatalf("a secret stored in clear before the key was set: %q %v", got, err)
	}
	if _, err := NewSealer("short"); err == nil {
		t.Fatal("a short key is accepted")
	}
}
