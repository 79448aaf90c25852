package apikey

import (
	"encoding/base64"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A configured admin key must carry about 128 bits: random keys in the
// usual formats pass, short or low-variety strings do not, and the error
// says how to make a good key without repeating the weak one.
func TestCheckAdminKeyStrength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) // deterministic: the check never flakes
	read := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for i := range 500 {
		k, _, err := Generate(readerFunc(func(p []byte) (int, error) { copy(p, read(len(p))); return len(p), nil }), "k", []Scope{ScopeAdmin}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, good := range []string{k, base64.StdEncoding.EncodeToString(read(32)), hex.EncodeToString(read(32)),
			hex.EncodeToString(read(16)), base64.RawURLEncoding.EncodeToString(read(24))} {
			if err := CheckAdminKeyStrength(good); err != nil {
				t.Fatalf("try %d: a random key (%d chars) refused: %v", i, len(good), err)
			}
		}
	}
	for _, weak := range []string{
		"", "short", "admin", "password1234", "correcthorse",
		strings.Repeat("a", 60), strings.Repeat("ab", 40), strings.Repeat("Xy7!", 20),
		"0123456789012345678901234567890123456789", "abcdefghijklmnopqrstuvwxyzabcdefghijklmnop",
		"bench-admin-key-0123456789", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
		hex.EncodeToString(read(8)), base64.StdEncoding.EncodeToString(read(12)),
	} {
		err := CheckAdminKeyStrength(weak)
		if err == nil {
			t.Errorf("%q (about %.0f bits) accepted", weak, EstimateBits(weak))
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "openssl rand -base64 32") || !strings.Contains(msg, "128") {
			t.Errorf("the error does not say how to make a good key: %s", msg)
		}
		if len(weak) >= 8 && strings.Contains(msg, weak) {
			t.Errorf("the error repeats the key: %s", msg)
		}
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
