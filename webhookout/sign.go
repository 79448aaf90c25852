package webhookout

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Key prefixes of the Standard Webhooks specification.
const (
	PrefixSecret  = "whsec_" // HMAC-SHA256 secret
	PrefixPrivate = "whsk_"  // Ed25519 private key (its 32-byte seed)
	PrefixPublic  = "whpk_"  // Ed25519 public key
)

var b64 = base64.StdEncoding

// NewHMACSecret returns a new whsec_ secret (32 random bytes).
func NewHMACSecret() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	return PrefixSecret + b64.EncodeToString(k), nil
}

// NewEd25519Key returns a new key pair as whsk_ (seed) and whpk_ strings.
func NewEd25519Key() (private, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	return PrefixPrivate + b64.EncodeToString(priv.Seed()), PrefixPublic + b64.EncodeToString(pub), nil
}

// PublicOf returns the whpk_ public key of a whsk_ private key.
func PublicOf(private string) (string, error) {
	seed, err := b64.DecodeString(strings.TrimPrefix(private, PrefixPrivate))
	if err != nil || len(seed) != ed25519.SeedSize {
		return "", errors.New("webhookout: malformed whsk_ key")
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return PrefixPublic + b64.EncodeToString(pub), nil
}

// Sign returns the webhook-signature header for one message: one
// signature per key (a whsec_ secret gives "v1,…", a whsk_ key "v1a,…"),
// space-separated, so that during a rotation a receiver holding either
// key verifies it. The signed content is "{id}.{timestamp}.{body}" with
// timestamp in Unix seconds, as the specification says.
func Sign(msgID string, ts time.Time, body []byte, keys ...string) (string, error) {
	content := make([]byte, 0, len(msgID)+len(body)+24)
	content = append(content, msgID...)
	content = append(content, '.')
	content = strconv.AppendInt(content, ts.Unix(), 10)
	content = append(content, '.')
	content = append(content, body...)
	sigs := make([]string, 0, len(keys))
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, PrefixSecret):
			secret, err := b64.DecodeString(strings.TrimPrefix(k, PrefixSecret))
			if err != nil || len(secret) == 0 {
				return "", errors.New("webhookout: malformed whsec_ secret")
			}
			m := hmac.New(sha256.New, secret)
			m.Write(content)
			sigs = append(sigs, "v1,"+b64.EncodeToString(m.Sum(nil)))
		case strings.HasPrefix(k, PrefixPrivate):
			seed, err := b64.DecodeString(strings.TrimPrefix(k, PrefixPrivate))
			if err != nil || len(seed) != ed25519.SeedSize {
				return "", errors.New("webhookout: malformed whsk_ key")
			}
			sigs = append(sigs, "v1a,"+b64.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(seed), content)))
		default:
			return "", errors.New("webhookout: unknown key kind")
		}
	}
	if len(sigs) == 0 {
		return "", errors.New("webhookout: no signing key")
	}
	return strings.Join(sigs, " "), nil
}

// SecretKeyEnv names the environment variable holding the server key that
// seals endpoint secrets in the database.
const SecretKeyEnv = "CREWCAST_WEBHOOK_SECRET_KEY"

// Sealer encrypts signing secrets before they are stored (AES-256-GCM with
// a key derived from a server secret kept outside the database, the
// endpoint id as associated data), so that a dump of the database alone
// cannot forge signatures. Without a key secrets are stored marked
// "clear:" and the server says so at start; a sealed secret cannot be
// opened without the key.
type Sealer struct {
	aead cipher.AEAD // nil: no key
}

// NewSealer derives the sealing key from secret ("" = no key). The secret
// should be long and random (e.g. `openssl rand -base64 32`).
func NewSealer(secret string) (*Sealer, error) {
	if secret == "" {
		return &Sealer{}, nil
	}
	if len(secret) < 16 {
		return nil, fmt.Errorf("webhookout: %s must be at least 16 characters", SecretKeyEnv)
	}
	k := sha256.Sum256([]byte("crewcast webhook secrets\x00" + secret))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Keyed reports whether secrets are encrypted.
func (s *Sealer) Keyed() bool { return s.aead != nil }

const (
	sealedTag = "v1:"
	clearTag  = "clear:"
)

// Seal returns what the store keeps for endpoint id's secret.
func (s *Sealer) Seal(id, secret string) ([]byte, error) {
	if s.aead == nil {
		return []byte(clearTag + secret), nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte(sealedTag), nonce...)
	return s.aead.Seal(out, nonce, []byte(secret), []byte(id)), nil
}

// ErrSealed is returned for a sealed secret when no key (or another key)
// is configured.
var ErrSealed = errors.New("webhookout: secret is sealed with a key this server does not have (" + SecretKeyEnv + ")")

// Open returns the secret Seal stored for endpoint id.
func (s *Sealer) Open(id string, stored []byte) (string, error) {
	switch {
	case len(stored) == 0:
		return "", nil
	case strings.HasPrefix(string(stored), clearTag):
		return strings.TrimPrefix(string(stored), clearTag), nil
	case strings.HasPrefix(string(stored), sealedTag):
		if s.aead == nil {
			return "", ErrSealed
		}
		b := stored[len(sealedTag):]
		if len(b) < s.aead.NonceSize() {
			return "", ErrSealed
		}
		plain, err := s.aead.Open(nil, b[:s.aead.NonceSize()], b[s.aead.NonceSize():], []byte(id))
		if err != nil {
			return "", ErrSealed
		}
		return string(plain), nil
	}
	return "", errors.New("webhookout: unknown stored secret format")
}
