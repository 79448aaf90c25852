// Package password hashes and checks board users' passwords with argon2id
// (golang.org/x/crypto/argon2), the memory-hard hash OWASP recommends.
// Hashes are stored in the PHC string format
// ($argon2id$v=19$m=…,t=…,p=…$salt$hash), so parameters can be raised
// later without invalidating stored hashes.
//
// Hashing costs Params.Memory KiB and a few tens of milliseconds of CPU;
// a Hasher lets only a few run at once, so a burst of sign-ins queues
// instead of exhausting memory.
//
// Concurrency: a Hasher is safe for concurrent use.
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
}

// DefaultParams are OWASP's minimum recommendation for argon2id (19 MiB,
// two passes, one thread).
var DefaultParams = Params{Memory: 19 * 1024, Time: 2, Threads: 1}

// Length bounds of a password, in characters (MaxLen also bounds the
// work an attacker can ask of the hash).
const (
	MinLen = 12
	MaxLen = 256
)

// ErrMismatch: the password does not match the hash.
var ErrMismatch = errors.New("password does not match")

// Check reports why pw cannot be a password ("" when it can).
func Check(pw string) string {
	n := utf8.RuneCountInString(pw)
	switch {
	case !utf8.ValidString(pw):
		return "must be valid UTF-8"
	case n < MinLen:
		return fmt.Sprintf("at least %d characters", MinLen)
	case n > MaxLen:
		return fmt.Sprintf("at most %d characters", MaxLen)
	}
	return ""
}

// Hasher hashes and verifies passwords, at most a few at a time.
type Hasher struct {
	p   Params
	sem chan struct{}
	// dummy is a hash of a random password, verified against when there
	// is no user, so that an unknown email costs the same time as a wrong
	// password.
	dummy     string
	dummyOnce sync.Once
}

// NewHasher returns a Hasher with parameters p (zero: DefaultParams) that
// runs at most concurrent hashes at once (≤ 0: 2).
func NewHasher(p Params, concurrent int) *Hasher {
	if p == (Params{}) {
		p = DefaultParams
	}
	if concurrent <= 0 {
		concurrent = 2
	}
	return &Hasher{p: p, sem: make(chan struct{}, concurrent)}
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() { <-h.sem }

// Hash returns the PHC-encoded argon2id hash of pw with a fresh salt.
func (h *Hasher) Hash(ctx context.Context, pw string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return h.hash(pw), nil
}

func (h *Hasher) hash(pw string) string {
	salt := make([]byte, 16)
	_, _ = rand.Read(salt) // crypto/rand.Read never fails (Go ≥ 1.24)
	sum := argon2.IDKey([]byte(pw), salt, h.p.Time, h.p.Memory, h.p.Threads, 32)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, h.p.Memory, h.p.Time, h.p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(sum))
}

var b64 = base64.RawStdEncoding

// Verify checks pw against encoded: nil on a match, ErrMismatch
// otherwise (also for a malformed hash). An empty encoded verifies
// against a dummy hash, taking the same time, and returns ErrMismatch:
// pass "" when there is no such user.
func (h *Hasher) Verify(ctx context.Context, encoded, pw string) error {
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer h.release()
	if encoded == "" {
		h.dummyOnce.Do(func() { h.dummy = h.hash(Generate()) })
		_ = verify(h.dummy, pw)
		return ErrMismatch
	}
	if !verify(encoded, pw) {
		return ErrMismatch
	}
	return nil
}

func verify(encoded, pw string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return false
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil ||
		p.Memory == 0 || p.Memory > 1<<20 || p.Time == 0 || p.Time > 16 || p.Threads == 0 {
		return false
	}
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 64 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// Generate returns a random one-time password: 20 characters from an
// alphabet without look-alikes (about 115 bits).
func Generate() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 20)
	for i := range b {
		var r [1]byte
		for {
			_, _ = rand.Read(r[:])
			if int(r[0]) < 256-256%len(alphabet) {
				break
			}
		}
		b[i] = alphabet[int(r[0])%len(alphabet)]
	}
	return string(b)
}
