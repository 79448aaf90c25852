package group

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Eraser returns a journal rewriter that erases one person from a group's
// events, applied to the group's events in journal order: their number is
// replaced by replacement wherever it appears (roster, sender, escalation
// numbers, any text field such as reconcile evidence); their roster entry
// loses everything else that came from them (name, contact id, time zone
// and the text a template rendered from their name and fields); the text
// and media of their replies are emptied; their name in the escalation
// message as sent ({{no_reply_names}}) is replaced by replacement; and,
// with redactText, the group's message text and media are emptied too,
// with the follow-up and escalation texts of its policy and the
// escalation message as sent. The group's text also goes when they were
// its only recipient (it may be their rendered text). Other recipients
// are untouched.
func Eraser(number, replacement string, redactText bool) func(typ string, data []byte) ([]byte, error) {
	return EraserWith(number, replacement, EraseTexts{Message: redactText, Escalation: redactText})
}

// EraseTexts says which texts an erasure empties besides the person's own
// replies.
type EraseTexts struct {
	// Message: the group's text and media and its follow-up text (sent to
	// every recipient): once nobody else is sent them.
	Message bool
	// Escalation: the escalation text, in the policy and as sent: when the
	// person was sent it and nobody else will be (the escalation happens
	// once).
	Escalation bool
}

// EscalatedTo reports whether the group's escalation was decided and
// sends to number: then its text was sent to them and is sent to nobody
// else again.
func (g *Group) EscalatedTo(number string) bool {
	if g == nil || g.Escalation == nil || g.Policy == nil || g.Policy.Escalate == nil {
		return false
	}
	for _, to := range g.Policy.Escalate.To {
		if to == number {
			return true
		}
	}
	return false
}

// EraserWith is Eraser with the texts to empty spelled out.
func EraserWith(number, replacement string, texts EraseTexts) func(typ string, data []byte) ([]byte, error) {
	redactText := texts.Message
	var theirs map[int]bool // roster indices of the person, from Created
	var names []string      // the person's names in the roster, from Created
	// A whole number only: never the prefix of a longer one.
	re := regexp.MustCompile(regexp.QuoteMeta(number) + `([^0-9]|$)`)
	return func(typ string, data []byte) ([]byte, error) {
		e, err := Decode(typ, data)
		if err != nil {
			return nil, fmt.Errorf("erasure: %w", err)
		}
		switch v := e.(type) {
		case Created:
			theirs, names = map[int]bool{}, nil
			for i := range v.Recipients {
				if r := &v.Recipients[i]; r.Number == number {
					if n := strings.TrimSpace(r.Name); n != "" {
						names = append(names, n)
					}
					// Only the suppression flag is not theirs: it is state.
					*r = RosterEntry{Number: replacement, Suppressed: r.Suppressed}
					theirs[i] = true
				}
			}
			if v.From == number {
				v.From = replacement
			}
			if redactText || (len(theirs) > 0 && len(theirs) == len(v.Recipients)) {
				v.Text, v.MediaURLs = "", nil
			}
			if v.Policy != nil && (texts.Message || texts.Escalation) {
				p := rewritePolicy(v.Policy, false, nil)
				if texts.Message && p.Followup != nil {
					p.Followup.Text = ""
				}
				if texts.Escalation && p.Escalate != nil {
					p.Escalate.Text = ""
				}
				v.Policy = p
			}
			e = v
		case Escalated:
			if !texts.Escalation {
				// {{no_reply_names}} listed them by name (or number).
				text := v.Text
				for _, n := range names {
					text = replaceWholeName(text, n, replacement)
				}
				if text == v.Text {
					return re.ReplaceAll(data, []byte(replacement+"$1")), nil
				}
				v.Text = text
			} else if v.Text == "" {
				return re.ReplaceAll(data, []byte(replacement+"$1")), nil
			} else {
				v.Text = ""
			}
			e = v
		case Replied:
			if !theirs[v.Index] || (v.Text == "" && v.Media == nil) {
				return data, nil
			}
			v.Text, v.Media = "", nil
			e = v
		default:
			return re.ReplaceAll(data, []byte(replacement+"$1")), nil
		}
		_, out, err := Encode(e)
		if err != nil {
			return nil, err
		}
		return re.ReplaceAll(out, []byte(replacement+"$1")), nil
	}
}

// replaceWholeName replaces every occurrence of name in text that is not
// part of a longer word (no letter or digit right before or after it) by
// replacement: erasing "Al" leaves "Alice" and "Sal" alone.
func replaceWholeName(text, name, replacement string) string {
	var b strings.Builder
	done := 0 // text[:done] is written
	for from := 0; ; {
		k := strings.Index(text[from:], name)
		if k < 0 {
			b.WriteString(text[done:])
			return b.String()
		}
		start, end := from+k, from+k+len(name)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (start == 0 || !wordRune(before)) && (end == len(text) || !wordRune(after)) {
			b.WriteString(text[done:start])
			b.WriteString(replacement)
			done = end
		}
		from = end
	}
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
