package group

import (
	"fmt"
)

// forbiddenRune names the characters no message text may hold, or
// returns "" for an allowed one: NUL and the other C0 control characters
// (tab, line feed and carriage return excepted), which carriers and
// phones handle unpredictably, and the bidirectional embedding, override
// and isolate characters (U+202A–U+202E, U+2066–U+2069), which make a
// phone show the text after them in another order than it was written.
func forbiddenRune(r rune) string {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ""
	case r < 0x20:
		return "a control character"
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return "a bidirectional formatting character"
	}
	return ""
}

// CheckText returns the problem with a message text, or nil: the first
// character it may not hold, by its position (1-based, counted in
// characters, i.e. Unicode code points, not bytes).
func CheckText(field, text string) *FieldError {
	pos := 0
	for _, r := range text {
		pos++
		if what := forbiddenRune(r); what != "" {
			return &FieldError{Field: field, Position: pos,
				Message: fmt.Sprintf("character %d is U+%04X, %s, which a message text may not contain", pos, r, what)}
		}
	}
	return nil
}

// CheckOptionTexts checks the keys and labels of response options (what a
// recipient reads in the hint and may type back), naming each as
// field[i].key or field[i].label.
func CheckOptionTexts(field string, opts []Option) []FieldError {
	var errs []FieldError
	for i, o := range opts {
		if e := CheckText(fmt.Sprintf("%s[%d].key", field, i), o.Key); e != nil {
			errs = append(errs, *e)
		}
		if e := CheckText(fmt.Sprintf("%s[%d].label", field, i), o.Label); e != nil {
			errs = append(errs, *e)
		}
	}
	return errs
}

// CheckTexts checks every message text a create request carries: text,
// followup.text, escalate.text and the response options' keys and labels.
func CheckTexts(req Request) []FieldError {
	var errs []FieldError
	add := func(field, text string) {
		if e := CheckText(field, text); e != nil {
			errs = append(errs, *e)
		}
	}
	add("text", req.Text)
	if req.Followup != nil {
		add("followup.text", req.Followup.Text)
		for i, st := range req.Followup.Steps {
			add(fmt.Sprintf("followup.steps[%d].text", i), st.Text)
		}
	}
	if req.Escalate != nil {
		add("escalate.text", req.Escalate.Text)
	}
	return append(errs, CheckOptionTexts("responses", req.Responses)...)
}
