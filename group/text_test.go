package group

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 27 item 11: message texts accepted NUL, other C0 controls and the
// bidirectional embedding, override and isolate characters (a U+202E in a
// text reverses what the recipient's phone shows after it).
func TestCheckTextRejectsControlAndBidiCharacters(t *testing.T) {
	for _, ok := range []string{"", "Crew call 7am", "line one\nline two\r\n\ttabbed", "Café – 7h, ça va ? 👷", "שלום עולם", "مرحبا"} {
		if e := CheckText("text", ok); e != nil {
			t.Errorf("CheckText(%q) = %v, want nil", ok, e)
		}
	}
	var bad []rune
	for r := rune(0); r < 0x20; r++ {
		if r != '\n' && r != '\r' && r != '\t' {
			bad = append(bad, r)
		}
	}
	for r := rune(0x202A); r <= 0x202E; r++ {
		bad = append(bad, r)
	}
	for r := rune(0x2066); r <= 0x2069; r++ {
		bad = append(bad, r)
	}
	for _, r := range bad {
		// "é" is two bytes and "👷" four: the position counts characters.
		text := "é👷a" + string(r) + "b"
		e := CheckText("followup.text", text)
		if e == nil {
			t.Errorf("CheckText accepted U+%04X", r)
			continue
		}
		if e.Field != "followup.text" || e.Position != 4 || !strings.Contains(e.Message, fmt.Sprintf("U+%04X", r)) ||
			!strings.Contains(e.Message, "character 4") {
			t.Errorf("U+%04X: got %+v, want field followup.text, position 4, a message naming U+%04X and character 4", r, e, r)
		}
	}
}

// Every message text a create request carries is checked by Plan: the
// text, the follow-up and escalation texts, and the response options'
// keys and labels.
func TestPlanRejectsControlCharactersInEveryText(t *testing.T) {
	base := func() Request {
		return Request{From: "+15550100000", To: []string{"+15550100001"}, Text: "Crew call"}
	}
	cases := []struct {
		field string
		mod   func(*Request)
	}{
		{"text", func(r *Request) { r.Text = "Crew\x00call" }},
		{"text", func(r *Request) { r.Text = "Hi {{first_name}}\u202E" }},
		{"followup.text", func(r *Request) { r.Followup = &FollowupInput{After: "10m", Max: 1, Text: "again\u2066"} }},
		{"escalate.text", func(r *Request) {
			r.Escalate = &EscalateInput{After: "30m", To: []string{"+15550100009"}, Text: "\x1bnobody"}
		}},
		{"responses[1].label", func(r *Request) {
			r.Responses = []Option{{Key: "1", Label: "Coming"}, {Key: "2", Label: "No\u202Bway"}}
		}},
		{"responses[0].key", func(r *Request) { r.Responses = []Option{{Key: "1\x07", Label: "Coming"}} }},
	}
	for _, c := range cases {
		req := base()
		c.mod(&req)
		_, errs := Plan("g1", req, DefaultSettings(), nil, t0)
		found := false
		for _, e := range errs {
			if e.Field == c.field && e.Position > 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: Plan gave %+v, want a problem on %s naming the position", c.field, errs, c.field)
		}
		if got := CheckTexts(req); len(got) != 1 || got[0].Field != c.field {
			t.Errorf("%s: CheckTexts gave %+v", c.field, got)
		}
	}
	if errs := CheckTexts(base()); len(errs) != 0 {
		t.Errorf("CheckTexts of a clean request: %+v", errs)
	}
}
