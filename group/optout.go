package group

import (
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Opt-out by any reasonable means (docs/operations.md, "Opt-outs"): a
// reply is an opt-out when, with case, accents, punctuation and polite
// words set aside, it is a carrier keyword, a Spanish one, or a plain
// request to stop. Everything here is on the normalized form (see
// consentText): lower case, no accents, no apostrophes, words separated
// by single spaces.
var (
	stopPhrases = setOf(
		// The carriers' keywords.
		"stop", "stopall", "stop all", "unsubscribe", "cancel", "end", "quit", "revoke", "optout", "opt out",
		// Spanish.
		"baja", "alto", "parar", "cancelar", "no mas mensajes",
		// Plain requests.
		"stop texting", "stop texting me", "stop messaging me", "stop sending me texts", "stop sending texts",
		"stop sending these", "stop sending me these", "stop sending me messages", "unsubscribe me",
		"remove me", "remove me from this list", "remove me from the list", "remove me from your list",
		"take me off this list", "take me off the list", "take me off your list",
		"no more texts", "no more text", "no more messages",
		"do not text me", "dont text me", "do not text me again", "dont text me again")
	startPhrases = setOf("start", "unstop", "subscribe", "optin", "opt in")
	helpPhrases  = setOf("help", "info")
	// stopTokens are the words, and stopInside the phrases, whose presence
	// among other words makes a reply a possible opt-out.
	stopTokens = setOf("stop", "stopall", "unsubscribe", "cancel", "end", "quit", "revoke", "optout",
		"baja", "alto", "parar", "cancelar")
	stopInside = []string{"opt out", "remove me", "take me off", "stop texting", "no more texts", "do not text", "dont text"}
	// Polite words are set aside wherever they stand.
	politeWords   = setOf("please", "pls", "plz", "thanks", "thx", "gracias")
	politePhrases = [][2]string{{"thank", "you"}, {"por", "favor"}}
)

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Classification is what a reply says about consent: Keyword is
// KeywordStop, KeywordStart, KeywordHelp or ""; PossibleOptOut flags a
// reply that is not an opt-out but contains a stop word among other words
// ("I can't stop by today"), for a person to decide.
type Classification struct {
	Keyword        string
	PossibleOptOut bool
}

// ClassifyReply classifies one reply's text. It is a pure function of the
// text; a reply that answers a group's response options is never an
// opt-out, which Group.Reply decides before calling it.
func ClassifyReply(text string) Classification {
	words := consentWords(text)
	t := strings.Join(words, " ")
	switch {
	case t == "":
		return Classification{}
	case stopPhrases[t]:
		return Classification{Keyword: KeywordStop}
	case startPhrases[t]:
		return Classification{Keyword: KeywordStart}
	case helpPhrases[t]:
		return Classification{Keyword: KeywordHelp}
	}
	for _, w := range words {
		if stopTokens[w] {
			return Classification{PossibleOptOut: true}
		}
	}
	padded := " " + t + " "
	for _, p := range stopInside {
		if strings.Contains(padded, " "+p+" ") {
			return Classification{PossibleOptOut: true}
		}
	}
	return Classification{}
}

// accents returns a transformer that removes combining marks after
// decomposition: "Cancelár" reads "Cancelar", "más" reads "mas". A chain
// keeps state while it runs, so each call gets its own.
func accents() transform.Transformer {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}

// consentWords normalizes a reply into its words: lower case, accents
// removed, apostrophes dropped ("don't" → "dont"), other punctuation and
// symbols as spaces, polite words left out.
func consentWords(text string) []string {
	t, _, err := transform.String(accents(), text)
	if err != nil {
		t = text
	}
	t = strings.Map(func(r rune) rune {
		switch {
		case r == '\'' || r == '’' || r == '‘':
			return -1
		case unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsSpace(r) || unicode.IsControl(r):
			return ' '
		}
		return unicode.ToLower(r)
	}, t)
	fields := strings.Fields(t)
	words := fields[:0]
	for i := 0; i < len(fields); i++ {
		if politeWords[fields[i]] {
			continue
		}
		if i+1 < len(fields) && isPolitePair(fields[i], fields[i+1]) {
			i++
			continue
		}
		words = append(words, fields[i])
	}
	return words
}

func isPolitePair(a, b string) bool {
	for _, p := range politePhrases {
		if a == p[0] && b == p[1] {
			return true
		}
	}
	return false
}
