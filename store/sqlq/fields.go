package sqlq

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// decodeFields decodes a contact's fields column (a JSON object of
// strings, as json.Marshal writes it) exactly as json.Unmarshal into a
// map[string]string does. Reading a 100,000-person crew decodes 100,000
// of them: the common shape, {"site":"Site 3"} with no escapes, is split
// by hand (about a tenth of json.Unmarshal's cost); anything else (an
// escape, whitespace, a value that is not a string, invalid UTF-8, which
// json.Unmarshal replaces) goes to json.Unmarshal.
func decodeFields(s string) (map[string]string, error) {
	if m, ok := plainFields(s); ok {
		return m, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// plainFields parses s when it is {"k":"v",...} with plain strings only
// (no backslash, no control character, valid UTF-8) and no whitespace;
// ok is false for anything else.
func plainFields(s string) (map[string]string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' || strings.IndexByte(s, '\\') >= 0 || !utf8.ValidString(s) {
		return nil, false
	}
	m := map[string]string{}
	rest := s[1 : len(s)-1]
	if rest == "" {
		return m, true
	}
	for {
		k, r, ok := plainString(rest)
		if !ok || r == "" || r[0] != ':' {
			return nil, false
		}
		v, r, ok := plainString(r[1:])
		if !ok {
			return nil, false
		}
		m[k] = v
		if r == "" {
			return m, true
		}
		if r[0] != ',' {
			return nil, false
		}
		rest = r[1:]
	}
}

// plainString reads a JSON string without escapes or control characters
// at the start of s and returns its contents and what follows it.
func plainString(s string) (v, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	v = s[1 : 1+end]
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 {
			return "", "", false
		}
	}
	return v, s[2+end:], true
}
