package password

import (
	"context"
	"errors"
	"strings"
	"testing"
)

var cheap = Params{Memory: 64, Time: 1, Threads: 1}

func TestHashVerify(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(cheap, 1)
	enc, err := h.Hash(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=64,t=1,p=1$") || strings.Contains(enc, "correct") {
		t.Fatalf("encoded = %q", enc)
	}
	if err := h.Verify(ctx, enc, "correct horse battery"); err != nil {
		t.Fatalf("right password: %v", err)
	}
	if err := h.Verify(ctx, enc, "correct horse batterz"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("wrong password: %v", err)
	}
	if err := h.Verify(ctx, "", "anything at all"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("no user: %v", err)
	}
	// A hash made with other parameters still verifies (they are encoded).
	enc2, _ := NewHasher(Params{Memory: 128, Time: 2, Threads: 1}, 1).Hash(ctx, "pw pw pw pw pw")
	if err := h.Verify(ctx, enc2, "pw pw pw pw pw"); err != nil {
		t.Fatalf("other params: %v", err)
	}
	if enc3, _ := h.Hash(ctx, "correct horse battery"); enc3 == enc {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for _, bad := range []string{"$argon2i$v=19$m=64,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$aGFzaA", "garbage"} {
		if err := h.Verify(ctx, bad, "x"); !errors.Is(err, ErrMismatch) {
			t.Fatalf("malformed %q: %v", bad, err)
		}
	}
}

func TestVerifyWaitsForASlot(t *testing.T) {
	h := NewHasher(cheap, 1)
	h.sem <- struct{}{} // the only slot is busy
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Verify(ctx, "", "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with no slot and a done context = %v", err)
	}
}

func TestCheckAndGenerate(t *testing.T) {
	if Check("short") == "" || Check(strings.Repeat("x", MaxLen+1)) == "" || Check(strings.Repeat("é", MinLen)) != "" {
		t.Fatal("length bounds are in characters")
	}
	a, b := Generate(), Generate()
	if a == b || len(a) != 20 || Check(a) != "" {
		t.Fatalf("Generate = %q, %q", a, b)
	}
}
