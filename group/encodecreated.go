package group

import (
	"encoding/json"
	"unicode/utf8"
)

// Encoding a large group.created event. json.Marshal reaches each of a
// roster's 100,000 entries through reflection and grows its buffer by
// doubling up to the 13 MB it ends with; the roster is written here
// instead, by hand, into a buffer sized once, byte for byte as
// json.Marshal writes it (the property test holds that), so the journal
// format does not change and old events decode as before.

// rosterByHand is the roster size from which encodeCreated writes the
// roster itself.
const rosterByHand = 256

// encodeCreated returns json.Marshal(c).
func encodeCreated(c Created) ([]byte, error) {
	if len(c.Recipients) < rosterByHand {
		return json.Marshal(c)
	}
	roster := c.Recipients
	c.Recipients = nil
	head, err := json.Marshal(c) // "recipients":null where the roster goes
	if err != nil {
		return nil, err
	}
	start, end, ok := memberValue(head, "recipients")
	if !ok {
		c.Recipients = roster
		return json.Marshal(c)
	}
	size := len(head) + 2
	for i := range roster {
		e := &roster[i]
		size += 64 + len(e.Number) + len(e.Name) + len(e.ContactID) + len(e.Text) + len(e.TZ)
	}
	out := make([]byte, 0, size)
	out = append(out, head[:start]...)
	out = appendRoster(out, roster)
	return append(out, head[end:]...), nil
}

// appendRoster appends roster as json.Marshal writes a []RosterEntry.
func appendRoster(b []byte, roster []RosterEntry) []byte {
	b = append(b, '[')
	for i := range roster {
		e := &roster[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"number":`...)
		b = appendJSONString(b, e.Number)
		if e.Name != "" {
			b = append(b, `,"name":`...)
			b = appendJSONString(b, e.Name)
		}
		if e.Suppressed {
			b = append(b, `,"suppressed":true`...)
		}
		if e.ContactID != "" {
			b = append(b, `,"contact_id":`...)
			b = appendJSONString(b, e.ContactID)
		}
		if e.Text != "" {
			b = append(b, `,"text":`...)
			b = appendJSONString(b, e.Text)
		}
		if e.TZ != "" {
			b = append(b, `,"tz":`...)
			b = appendJSONString(b, e.TZ)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string:
// HTML characters and control characters escaped, invalid UTF-8 replaced
// by U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
