package email

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
)

// A token is what a link in a mail carries: what it does (answer or
// unsubscribe), for which group, recipient and option, signed with the
// server's key (HMAC-SHA256). Tokens do not expire by time: an answer
// token stops working when its group completes, which the answering side
// checks against the group's state (docs/design.md §17).

// Token kinds.
const (
	KindAnswer      = "a"
	KindUnsubscribe = "u"
)

// Token is the signed content of a link.
type Token struct {
	Kind      string
	Group     string
	Recipient int    // index in the group's roster
	Option    string // the response option's key ("" for unsubscribe)
}

// ErrBadToken is any token that does not verify: forged, altered, cut.
var ErrBadToken = errors.New("the link is not valid")

const tokenVersion = "1"

func (t Token) payload() []byte {
	return []byte(strings.Join([]string{tokenVersion, t.Kind, t.Group, strconv.Itoa(t.Recipient), t.Option}, "\x00"))
}

func mac(key, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("crewcast email link\x00"))
	h.Write(msg)
	return h.Sum(nil)
}

// Sign returns the token as URL-safe text: payload.signature.
func Sign(key []byte, t Token) string {
	p := t.payload()
	enc := base64.RawURLEncoding
	return enc.EncodeToString(p) + "." + enc.EncodeToString(mac(key, p))
}

// Verify checks s's signature before reading anything of it.
func Verify(key []byte, s string) (Token, error) {
	enc := base64.RawURLEncoding
	ps, ss, ok := strings.Cut(s, ".")
	if !ok || len(s) > 2048 {
		return Token{}, ErrBadToken
	}
	p, err1 := enc.DecodeString(ps)
	sig, err2 := enc.DecodeString(ss)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, mac(key, p)) {
		return Token{}, ErrBadToken
	}
	f := strings.Split(string(p), "\x00")
	if len(f) != 5 || f[0] != tokenVersion || (f[1] != KindAnswer && f[1] != KindUnsubscribe) || f[2] == "" {
		return Token{}, ErrBadToken
	}
	i, err := strconv.Atoi(f[3])
	if err != nil || i < 0 {
		return Token{}, ErrBadToken
	}
	return Token{Kind: f[1], Group: f[2], Recipient: i, Option: f[4]}, nil
}

// OptOutHash is how an opted-out address is kept (store.EmailOptOuts): a
// keyed hash of the trimmed, lowercased address, never the address.
func OptOutHash(key []byte, address string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("crewcast email opt-out\x00"))
	h.Write([]byte(strings.ToLower(strings.TrimSpace(address))))
	return hex.EncodeToString(h.Sum(nil))
}
