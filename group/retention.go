package group

import "fmt"

// RewriteEvent applies the retention policy to one journal event: with
// redact, message and reply bodies (and media) are emptied; with number
// non-nil, phone numbers are replaced by number(n) and names are dropped.
// Events are otherwise unchanged, so the rewritten journal still replays.
func RewriteEvent(typ string, data []byte, redact bool, number func(string) string) ([]byte, error) {
	e, err := Decode(typ, data)
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	switch v := e.(type) {
	case Created:
		if redact {
			v.Text, v.MediaURLs = "", nil
			for i := range v.Recipients {
				v.Recipients[i].Text = "" // rendered texts are bodies too
			}
		}
		if number != nil {
			// The sender's number is hashed too, as the store does for
			// the group row: one rule for every number.
			v.From = number(v.From)
			for i := range v.Recipients {
				v.Recipients[i].Number = number(v.Recipients[i].Number)
				v.Recipients[i].Name = ""
				v.Recipients[i].ContactID = "" // it leads back to the number
			}
		}
		v.Policy = rewritePolicy(v.Policy, redact, number)
		e = v
	case Replied:
		if redact {
			v.Text, v.Media = "", nil
		}
		e = v
	default:
		pe, ok := rewritePolicyEvent(e, redact, number)
		if !ok {
			return data, nil
		}
		e = pe
	}
	_, out, err := Encode(e)
	return out, err
}
