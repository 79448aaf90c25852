package group

import (
	"errors"
	"net/mail"
	"strings"
)

// maxEmailLen is the longest address a contact may hold (RFC 5321's
// path limit less its angle brackets).
const maxEmailLen = 254

// NormalizeEmail checks a contact's email address (docs/design.md §17):
// "" (none) or one bare address such as ada@example.org, without a display
// name. It returns the address trimmed, its domain in lower case.
func NormalizeEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	bad := errors.New("not an email address such as ada@example.org")
	if len(s) > maxEmailLen || strings.ContainsAny(s, "<>,;\r\n\t ") {
		return "", bad
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "", bad
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || !strings.Contains(s[at+1:], ".") {
		return "", bad
	}
	return s[:at] + "@" + strings.ToLower(s[at+1:]), nil
}
