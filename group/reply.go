package group

import (
	"strings"
	"unicode"

	"github.com/crewcast/crewcast"
)

// Reply words: acknowledgements accept the short answers crews use. The
// STOP, START and HELP keywords are in optout.go.
var (
	yesWords = map[string]bool{"y": true, "yes": true, "yep": true, "yeah": true, "ok": true, "okay": true, "k": true, "1": true, "confirm": true, "confirmed": true, "ack": true, "👍": true}
	noWords  = map[string]bool{"n": true, "no": true, "nope": true, "2": true, "cant": true, "can't": true, "cannot": true, "decline": true}
)

// normalizeReply lower-cases a reply, trims it and strips surrounding
// punctuation, so that "Yes!" and " YES." both read "yes".
func normalizeReply(text string) string {
	t := strings.ToLower(strings.TrimSpace(text))
	t = strings.TrimFunc(t, func(r rune) bool { return unicode.IsPunct(r) && r != '\'' || unicode.IsSpace(r) })
	return strings.Join(strings.Fields(t), " ")
}

// ParseKeyword returns KeywordStop, KeywordStart or KeywordHelp when the
// whole reply is one of those keywords or an opt-out phrase (see
// ClassifyReply), else "".
func ParseKeyword(text string) string {
	return ClassifyReply(text).Keyword
}

// ParseAck reads an acknowledgement: a reply that is, or starts with, a
// yes or no word ("YES", "ok", "1", "no - running late"). Anything else is
// no acknowledgement.
func ParseAck(text string) crewcast.Ack {
	t := normalizeReply(text)
	if t == "" {
		return crewcast.AckNone
	}
	first := strings.FieldsFunc(t, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == '-' || r == '.' || r == '!' })
	for _, cand := range []string{t, first[0]} {
		switch {
		case yesWords[cand]:
			return crewcast.AckYes
		case noWords[cand]:
			return crewcast.AckNo
		}
	}
	return crewcast.AckNone
}
