package telnyx

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

// Webhook signature headers. Matching is case-insensitive.
const (
	SignatureHeader = "Telnyx-Signature-Ed25519"
	TimestampHeader = "Telnyx-Timestamp"
)

// Verify checks a Telnyx webhook signature: the Ed25519 signature in the
// telnyx-signature-ed25519 header (standard base64, 64 bytes) must be valid
// for publicKey over the telnyx-timestamp header value, "|", and the raw
// body; and the timestamp (Unix seconds, digits only) must be within
// tolerance of now, inclusive. It reads the body only as bytes. Every
// failure wraps crewcast.ErrBadSignature.
//
// Verify expands the key on every call; a long-lived caller builds one
// Verifier instead.
func Verify(publicKey ed25519.PublicKey, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	v, err := NewVerifier(publicKey)
	if err != nil {
		return badSignature("%v", err)
	}
	return v.Verify(header, body, now, tolerance)
}

// Verifier checks Telnyx webhook signatures against one public key.
//
// The Ed25519 check uses curve25519-voi with the key's precomputed
// tables and its crypto/ed25519-compatible rules (cofactorless equation,
// small-order and non-canonical keys as the standard library treats
// them), so it accepts exactly what crypto/ed25519.Verify accepts, in
// about half the time: at thousands of webhooks a second the signature
// check is the largest single cost of an acknowledgement.
// TestVerifierMatchesStdlib and FuzzVerifierMatchesStdlib hold it to that.
type Verifier struct {
	key *voi.ExpandedPublicKey
}

// stdlibRules makes voi decide exactly as crypto/ed25519.Verify does.
var stdlibRules = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// NewVerifier precomputes publicKey's tables. A key that is not 32 bytes,
// or not a curve point at all (crypto/ed25519 would reject every
// signature under it), is an error.
func NewVerifier(publicKey ed25519.PublicKey) (*Verifier, error) {
	if len(publicKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("public key is %d bytes, want %d", len(publicKey), ed25519.PublicKeySize)
	}
	k, err := voi.NewExpandedPublicKey(voi.PublicKey(publicKey))
	if err != nil {
		return nil, fmt.Errorf("public key is not an Ed25519 point: %w", err)
	}
	return &Verifier{key: k}, nil
}

// Verify checks header and body as the package-level Verify does.
func (v *Verifier) Verify(header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	sigText := adapter.HeaderValue(header, SignatureHeader)
	if sigText == "" {
		return badSignature("missing %s header", SignatureHeader)
	}
	tsText := adapter.HeaderValue(header, TimestampHeader)
	if tsText == "" {
		return badSignature("missing %s header", TimestampHeader)
	}
	ts, ok := parseUnixSeconds(tsText)
	if !ok {
		return badSignature("%s is not decimal Unix seconds", TimestampHeader)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > tolerance || skew < -tolerance {
		return badSignature("timestamp is %v away from now, outside ±%v", skew.Round(time.Second), tolerance)
	}
	var sig [ed25519.SignatureSize + 3]byte // room to tell a longer one apart
	if base64.StdEncoding.DecodedLen(len(sigText)) > len(sig) {
		return badSignature("signature is longer than %d bytes", ed25519.SignatureSize)
	}
	n, err := base64.StdEncoding.Decode(sig[:], []byte(sigText))
	if err != nil {
		return badSignature("signature is not standard base64")
	}
	if n != ed25519.SignatureSize {
		return badSignature("signature is %d bytes, want %d", n, ed25519.SignatureSize)
	}
	signed := make([]byte, 0, len(tsText)+1+len(body))
	signed = append(append(append(signed, tsText...), '|'), body...)
	if !voi.VerifyExpandedWithOptions(v.key, signed, sig[:n], stdlibRules) {
		return badSignature("signature does not match")
	}
	return nil
}

// Sign returns the headers Telnyx would send with body at timestamp ts,
// signed with privateKey. The simulator and tests use it; production only
// verifies.
func Sign(privateKey ed25519.PrivateKey, ts time.Time, body []byte) http.Header {
	tsText := strconv.FormatInt(ts.Unix(), 10)
	signed := append([]byte(tsText+"|"), body...)
	h := http.Header{}
	h.Set(SignatureHeader, base64.StdEncoding.EncodeToString(ed25519.Sign(privateKey, signed)))
	h.Set(TimestampHeader, tsText)
	return h
}

func badSignature(format string, args ...any) error {
	return fmt.Errorf("telnyx: %w: %s", crewcast.ErrBadSignature, fmt.Sprintf(format, args...))
}

// parseUnixSeconds accepts 1 to 18 ASCII digits: no sign, no spaces, no
// fraction, nothing that could overflow.
func parseUnixSeconds(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
