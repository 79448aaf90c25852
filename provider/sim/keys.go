package sim

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// Keys are the credentials a client needs to talk to the simulator and to
// verify its webhooks, as served at GET /sim/keys.
type Keys struct {
	// TelnyxPublicKey is the std-base64 raw 32-byte Ed25519 public key that
	// verifies Telnyx webhooks (CREWCAST_TELNYX_PUBLIC_KEY).
	TelnyxPublicKey string `json:"telnyx_public_key"`
	// TelnyxAPIKey is the Bearer key for the Telnyx endpoints.
	TelnyxAPIKey string `json:"telnyx_api_key"`
	// TwilioAccountSID is the Basic-auth user and the {sid} path segment.
	TwilioAccountSID string `json:"twilio_account_sid"`
	// TwilioAuthToken is the Basic-auth password and the HMAC key of
	// X-Twilio-Signature.
	TwilioAuthToken string `json:"twilio_auth_token"`
}

// secrets are the keys in usable form.
type secrets struct {
	telnyxPriv ed25519.PrivateKey
	telnyxAPI  string
	twilioSID  string
	twilioTok  string
}

func (s secrets) public() Keys {
	return Keys{
		TelnyxPublicKey:  base64.StdEncoding.EncodeToString(s.telnyxPriv.Public().(ed25519.PublicKey)),
		TelnyxAPIKey:     s.telnyxAPI,
		TwilioAccountSID: s.twilioSID,
		TwilioAuthToken:  s.twilioTok,
	}
}

// SeedKeys returns the keys a simulator started with this seed (and no key
// flags) uses, so tests can configure a client before the simulator runs.
func SeedKeys(seed int64) Keys {
	return seedSecrets(seed).public()
}

// seedSecrets derives every key from the seed with SHA-256 over a label, so
// changing one derivation never shifts another.
func seedSecrets(seed int64) secrets {
	derive := func(label string) []byte {
		h := sha256.Sum256([]byte("crewcast-sim/v1/" + label + "/" + strconv.FormatInt(seed, 10)))
		return h[:]
	}
	return secrets{
		telnyxPriv: ed25519.NewKeyFromSeed(derive("telnyx-signing")),
		telnyxAPI:  "KEY" + hex.EncodeToString(derive("telnyx-api")[:16]),
		twilioSID:  "AC" + hex.EncodeToString(derive("twilio-sid")[:16]),
		twilioTok:  hex.EncodeToString(derive("twilio-token")[:16]),
	}
}

// randomSecrets draws fresh keys from crypto/rand.
func randomSecrets() secrets {
	b := make([]byte, ed25519.SeedSize+16+16+16)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error
	return secrets{
		telnyxPriv: ed25519.NewKeyFromSeed(b[:32]),
		telnyxAPI:  "KEY" + hex.EncodeToString(b[32:48]),
		twilioSID:  "AC" + hex.EncodeToString(b[48:64]),
		twilioTok:  hex.EncodeToString(b[64:80]),
	}
}

// newSecrets picks seeded or random keys, then applies the configured ones.
func newSecrets(cfg Config) secrets {
	var s secrets
	if cfg.Seed != nil {
		s = seedSecrets(*cfg.Seed)
	} else {
		s = randomSecrets()
	}
	if cfg.TelnyxSigningKey != nil {
		s.telnyxPriv = cfg.TelnyxSigningKey
	}
	if cfg.TelnyxAPIKey != "" {
		s.telnyxAPI = cfg.TelnyxAPIKey
	}
	if cfg.TwilioAccountSID != "" {
		s.twilioSID = cfg.TwilioAccountSID
	}
	if cfg.TwilioAuthToken != "" {
		s.twilioTok = cfg.TwilioAuthToken
	}
	return s
}
