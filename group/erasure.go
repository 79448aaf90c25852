package group

import (
	"fmt"
	"regexp"
)

// Eraser returns a journal rewriter that erases one person from a group's
// events, applied to the group's events in journal order: their number is
// replaced by replacement wherever it appears (roster, sender, any text
// field such as reconcile evidence), their name dropped, the text and
// media of their replies emptied, and, with redactText, the group's
// message text and media too. Other recipients are untouched.
func Eraser(number, replacement string, redactText bool) func(typ string, data []byte) ([]byte, error) {
	var theirs map[int]bool // roster indices of the person, from Created
	// A whole number only: never the prefix of a longer one.
	re := regexp.MustCompile(regexp.QuoteMeta(number) + `([^0-9]|$)`)
	return func(typ string, data []byte) ([]byte, error) {
		e, err := Decode(typ, data)
		if err != nil {
			return nil, fmt.Errorf("erasure: %w", err)
		}
		switch v := e.(type) {
		case Created:
			theirs = map[int]bool{}
			for i := range v.Recipients {
				if v.Recipients[i].Number == number {
					v.Recipients[i].Number, v.Recipients[i].Name = replacement, ""
					theirs[i] = true
				}
			}
			if v.From == number {
				v.From = replacement
			}
			if redactText {
				v.Text, v.MediaURLs = "", nil
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
