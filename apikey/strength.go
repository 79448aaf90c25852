package apikey

import (
	"fmt"
	"math"
	"unicode"
)

// MinAdminKeyBits is the least estimated entropy of an admin key given in
// the configuration (CREWCAST_ADMIN_KEY): such a key is a long-lived admin
// secret that anyone may try against the API, so it must be out of reach
// of guessing whatever the throttling.
const MinAdminKeyBits = 128

// EstimateBits estimates the entropy of a secret from its characters, the
// rule docs/operations.md states: length × log2 of the pool of character
// classes actually used (lower case 26, upper case 26, digits 10, anything
// else 33), with low variety taken off:
//
//   - a string that repeats itself ("abab…", "Xy7!Xy7!…") counts once;
//   - from the third character of a run or a sequence on, ("aaaa",
//     "1234", "dcba"), characters count nothing;
//   - the pool is at most twice the number of distinct characters used.
//
// It is an estimate for machine-made secrets: it rewards length and
// variety, not meaning, so it cannot see dictionary words (a long
// passphrase passes). Generate such keys at random. It is hand-written
// rather than a password-strength library (zxcvbn and the like) because
// those judge human passwords with megabytes of word lists, for one check
// at start-up.
func EstimateBits(s string) float64 {
	r := []rune(s)
	r = r[:period(r)]
	var lower, upper, digit, other bool
	distinct := map[rune]bool{}
	counted := 0
	for i, c := range r {
		switch {
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= '0' && c <= '9':
			digit = true
		case unicode.IsPrint(c):
			other = true
		}
		distinct[c] = true
		if i >= 2 {
			if d := c - r[i-1]; d >= -1 && d <= 1 && d == r[i-1]-r[i-2] {
				continue // a run or a sequence goes on
			}
		}
		counted++
	}
	pool := 0
	for _, used := range []struct {
		yes  bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}} {
		if used.yes {
			pool += used.size
		}
	}
	pool = min(pool, 2*len(distinct))
	if pool < 2 {
		return 0
	}
	return float64(counted) * math.Log2(float64(pool))
}

// period returns the length of the shortest p such that r repeats its
// first p characters.
func period(r []rune) int {
	for p := 1; p <= len(r)/2; p++ {
		same := true
		for i := p; i < len(r); i++ {
			if r[i] != r[i-p] {
				same = false
				break
			}
		}
		if same {
			return p
		}
	}
	return len(r)
}

// CheckAdminKeyStrength refuses an admin key estimated below
// MinAdminKeyBits, saying how to make a good one (never repeating it).
func CheckAdminKeyStrength(key string) error {
	bits := EstimateBits(key)
	if bits >= MinAdminKeyBits {
		return nil
	}
	return fmt.Errorf("CREWCAST_ADMIN_KEY (--admin-key) is too weak: about %.0f bits of entropy, at least %d needed; "+
		"use a random key, e.g. `openssl rand -base64 32`, or one made by `crewcast keys create`", bits, MinAdminKeyBits)
}
