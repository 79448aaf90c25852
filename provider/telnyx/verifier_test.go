package telnyx

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"math/big"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// verifierAccepts reports whether a Verifier for pub accepts sig over
// message (which starts with the timestamp and "|", as Telnyx signs). A
// key NewVerifier refuses counts as rejecting every signature.
func verifierAccepts(t testing.TB, pub ed25519.PublicKey, message, sig []byte) bool {
	t.Helper()
	v, err := NewVerifier(pub)
	if err != nil {
		return false
	}
	const ts = "1700000000"
	h := http.Header{SignatureHeader: {base64.StdEncoding.EncodeToString(sig)}, TimestampHeader: {ts}}
	// The verifier signs over "ts|body"; strip that prefix from message so
	// both sides check the same bytes.
	if len(message) < len(ts)+1 || string(message[:len(ts)+1]) != ts+"|" {
		t.Fatalf("message must start with %q", ts+"|")
	}
	err = v.Verify(h, message[len(ts)+1:], time.Unix(1700000000, 0), DefaultTolerance)
	if err != nil && !errors.Is(err, crewcast.ErrBadSignature) {
		t.Fatalf("error %v does not wrap ErrBadSignature", err)
	}
	return err == nil
}

// edgeKeys are public-key encodings where Ed25519 implementations are
// known to disagree: the identity and other small-order points, and
// non-canonical encodings (y ≥ p) with and without the sign bit.
func edgeKeys() []ed25519.PublicKey {
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	enc := func(y *big.Int, sign bool) ed25519.PublicKey {
		b := make([]byte, 32)
		be := y.FillBytes(make([]byte, 32))
		for i := range b {
			b[i] = be[31-i]
		}
		if sign {
			b[31] |= 0x80
		}
		return b
	}
	var keys []ed25519.PublicKey
	for y := int64(0); y < 19; y++ {
		for _, sign := range []bool{false, true} {
			keys = append(keys, enc(big.NewInt(y), sign))                      // canonical small y (0 and 1 are small-order points)
			keys = append(keys, enc(new(big.Int).Add(p, big.NewInt(y)), sign)) // non-canonical y+p
		}
	}
	keys = append(keys, enc(new(big.Int).Sub(p, big.NewInt(1)), false)) // y = -1: order 2
	return keys
}

// TestVerifierMatchesStdlib holds the voi-based Verifier to exactly the
// decisions crypto/ed25519.Verify makes: valid signatures, every single
// bit flipped in the signature, a non-canonical S, and the edge-case keys
// with the signatures small-order keys admit.
func TestVerifierMatchesStdlib(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	check := func(name string, pub ed25519.PublicKey, msg, sig []byte) {
		t.Helper()
		want := ed25519.Verify(pub, msg, sig)
		if got := verifierAccepts(t, pub, msg, sig); got != want {
			t.Fatalf("%s: Verifier accepts=%v, crypto/ed25519 accepts=%v (pub %x sig %x)", name, got, want, pub, sig)
		}
	}
	valid := 0
	for k := 0; k < 8; k++ {
		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(r.IntN(256))
		}
		priv := ed25519.NewKeyFromSeed(seed)
		pub := priv.Public().(ed25519.PublicKey)
		msg := []byte("1700000000|" + `{"data":{"id":"` + strconv.Itoa(k) + `"}}`)
		sig := ed25519.Sign(priv, msg)
		check("valid", pub, msg, sig)
		if ed25519.Verify(pub, msg, sig) {
			valid++
		}
		for bit := 0; bit < 8*len(sig); bit++ {
			bad := append([]byte(nil), sig...)
			bad[bit/8] ^= 1 << (bit % 8)
			check("flipped signature bit "+strconv.Itoa(bit), pub, msg, bad)
		}
		// S + L: the same scalar, non-canonically encoded.
		l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
		s := new(big.Int).SetBytes(reverse(sig[32:]))
		nonCanon := append(append([]byte(nil), sig[:32]...), reverse(new(big.Int).Add(s, l).FillBytes(make([]byte, 32)))...)
		check("S+L", pub, msg, nonCanon)
		check("other message", pub, append(append([]byte(nil), msg...), ' '), sig)
	}
	if valid != 8 {
		t.Fatalf("only %d of 8 valid signatures verified", valid)
	}
	// Small-order and non-canonical keys: R = identity with S = 0 satisfies
	// the cofactorless equation for any small-order A whose [k]A is the
	// identity, so some of these are accepted by crypto/ed25519 too.
	identity := make([]byte, 32)
	identity[0] = 1
	zeroS := append(append([]byte(nil), identity...), make([]byte, 32)...)
	accepted := 0
	for i, pub := range edgeKeys() {
		for m := 0; m < 16; m++ {
			msg := []byte("1700000000|" + strconv.Itoa(i) + "/" + strconv.Itoa(m))
			check("edge key R=identity S=0", pub, msg, zeroS)
			if ed25519.Verify(pub, msg, zeroS) {
				accepted++
			}
			random := make([]byte, 64)
			for j := range random {
				random[j] = byte(r.IntN(256))
			}
			random[63] &= 0x0f // keep S canonical so the equation is what decides
			check("edge key random signature", pub, msg, random)
		}
	}
	if accepted == 0 {
		t.Fatal("no edge-key signature was accepted by crypto/ed25519: the edge cases test nothing")
	}
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}

// FuzzVerifierMatchesStdlib: for any key, message and signature the
// Verifier decides as crypto/ed25519.Verify does.
func FuzzVerifierMatchesStdlib(f *testing.F) {
	msg := []byte("1700000000|" + vectorBody)
	sig := ed25519.Sign(testPrivateKey, msg)
	pub := testPrivateKey.Public().(ed25519.PublicKey)
	f.Add([]byte(pub), []byte(vectorBody), sig)
	for _, k := range edgeKeys()[:6] {
		f.Add([]byte(k), []byte("x"), make([]byte, 64))
	}
	f.Fuzz(func(t *testing.T, pub, body, sig []byte) {
		if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
			return
		}
		msg := append([]byte("1700000000|"), body...)
		want := ed25519.Verify(pub, msg, sig)
		if got := verifierAccepts(t, pub, msg, sig); got != want {
			t.Fatalf("Verifier accepts=%v, crypto/ed25519 accepts=%v", got, want)
		}
	})
}

// BenchmarkVerify compares the Verifier with crypto/ed25519 on a typical
// webhook body.
func BenchmarkVerify(b *testing.B) {
	body := make([]byte, 900)
	h := Sign(testPrivateKey, time.Unix(1700000000, 0), body)
	pub := testPrivateKey.Public().(ed25519.PublicKey)
	now := time.Unix(1700000000, 0)
	b.Run("verifier", func(b *testing.B) {
		v, err := NewVerifier(pub)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if err := v.Verify(h, body, now, DefaultTolerance); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("package-level", func(b *testing.B) { // expands the key every call
		for b.Loop() {
			if err := Verify(pub, h, body, now, DefaultTolerance); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		sig, _ := base64.StdEncoding.DecodeString(h.Get(SignatureHeader))
		msg := append([]byte(h.Get(TimestampHeader)+"|"), body...)
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("rejected")
			}
		}
	})
}
