package group

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/crewcast/crewcast"
)

var codeOpts = []Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Can't make it", Ack: crewcast.AckNo}}

func TestParseCode(t *testing.T) {
	two := []CodedGroup{{Code: "A", Options: codeOpts}, {Code: "B", Options: codeOpts}}
	letters := []CodedGroup{{Code: "A", Options: []Option{{Key: "Y", Label: "Yes"}, {Key: "N", Label: "No"}}},
		{Code: "B", Options: []Option{{Key: "A", Label: "Alpha"}, {Key: "B", Label: "Bravo"}}}}
	for _, tc := range []struct {
		text   string
		groups []CodedGroup
		code   string
		key    string
	}{
		{"1A", two, "A", "1"},
		{"1a", two, "A", "1"},
		{"1 A", two, "A", "1"},
		{"1  a", two, "A", "1"},
		{"A1", two, "A", "1"},
		{"a1", two, "A", "1"},
		{"a 1", two, "A", "1"},
		{"A 1", two, "A", "1"},
		{" 2B ", two, "B", "2"},
		{"2b.", two, "B", "2"},
		{"(1A)", two, "A", "1"},
		{"1A!", two, "A", "1"},
		{"1-A", two, "A", "1"},
		{"B-2", two, "B", "2"},
		{"B: 2", two, "B", "2"},
		{"1/B", two, "B", "1"},
		{"yes A", two, "A", "1"},
		{"YES b", two, "B", "1"},
		{"no A", two, "A", "2"},
		{"A no", two, "A", "2"},
		{"Coming B", two, "B", "1"},
		{"b coming", two, "B", "1"},
		{"can't make it a", two, "A", "2"},
		{"1B", two, "B", "1"},
		{"2A", two, "A", "2"},
		{"YA", letters, "A", "Y"},
		{"ya", letters, "A", "Y"},
		{"N A", letters, "A", "N"},
		{"A N", letters, "A", "N"},
		{"BA", letters, "B", "A"}, // Y/N are A's keys: "B" letter-last is no key of A
		// Not coded answers.
		{"1", two, "", ""},
		{"yes", two, "", ""},
		{"A", two, "", ""},
		{"1C", two, "", ""},   // no group C
		{"3A", two, "", ""},   // no option 3
		{"yesA", two, "", ""}, // glued to a word
		{"Bye", two, "", ""},
		{"see you at 1", two, "", ""},
		{"STOP", two, "", ""},
		{"stop a", two, "", ""},
		{"HELP", two, "", ""},
		{"", two, "", ""},
		{"1A", nil, "", ""},
		{"AB", []CodedGroup{{Code: "A", Options: []Option{{Key: "B", Label: "x"}}}, {Code: "B", Options: []Option{{Key: "A", Label: "y"}}}}, "", ""}, // two readings
	} {
		code, key, ok := ParseCode(tc.text, tc.groups)
		if ok != (tc.code != "") || code != tc.code || key != tc.key {
			t.Errorf("ParseCode(%q) = %q, %q, %v; want %q, %q", tc.text, code, key, ok, tc.code, tc.key)
		}
	}
}

// FuzzParseCode: parsing never panics, and whatever it reads names one of
// the groups and one of its options.
func FuzzParseCode(f *testing.F) {
	for _, s := range []string{"1A", "a 1", "A1", "yes b", "", "STOP", "é1", "1é", "\xff", "1\u00a0A", "AB", "z9"} {
		f.Add(s)
	}
	groups := []CodedGroup{{Code: "A", Options: codeOpts}, {Code: "B", Options: []Option{{Key: "A", Label: "Alpha"}, {Key: "9", Label: "Nine"}}}}
	f.Fuzz(func(t *testing.T, s string) {
		code, key, ok := ParseCode(s, groups)
		if !ok {
			if code != "" || key != "" {
				t.Fatalf("not ok but %q %q", code, key)
			}
			return
		}
		for _, g := range groups {
			if g.Code == code {
				for _, o := range g.Options {
					if o.Key == key {
						return
					}
				}
			}
		}
		t.Fatalf("ParseCode(%q) = %q %q: not a group's option", s, code, key)
	})
}

func TestCodedHintAndText(t *testing.T) {
	if got := CodedHint(codeOpts, "A"); got != "Reply 1A Coming, 2A Can't make it" {
		t.Fatalf("CodedHint = %q", got)
	}
	if got := CodedHint(codeOpts, ""); got != Hint(codeOpts) {
		t.Fatalf("no code: %q", got)
	}
	text := "North gate 7am\n" + Hint(codeOpts)
	if got := WithCodedHint(text, codeOpts, "B"); got != "North gate 7am\nReply 1B Coming, 2B Can't make it" {
		t.Fatalf("WithCodedHint = %q", got)
	}
	if got := WithCodedHint("No hint here", codeOpts, "B"); got != "No hint here" {
		t.Fatalf("without hint: %q", got)
	}
	if got := WithCodedHint(text, codeOpts, ""); got != text {
		t.Fatalf("no code changed the text: %q", got)
	}
}

func TestFreeCode(t *testing.T) {
	if got := FreeCode(nil); got != "A" {
		t.Fatal(got)
	}
	if got := FreeCode([]string{"A", "C"}); got != "B" {
		t.Fatal(got)
	}
	var all []string
	for i := range MaxCodes {
		all = append(all, CodeLetter(i))
	}
	if got := FreeCode(all); got != "" {
		t.Fatal(got)
	}
}

func TestAmbiguousListing(t *testing.T) {
	msg := AmbiguousListing([]OpenRequest{
		{Code: "B", Text: "South gate 9am, bring the long ladder and the spare radios please\n" + Hint(codeOpts), Options: codeOpts},
		{Code: "A", Text: "North gate 7am\n" + Hint(codeOpts), Options: codeOpts},
		{Code: "C", Text: "Hi {{first_name}}, east gate {{fields.time | default \"8am\"}}?", Options: codeOpts},
	})
	for _, want := range []string{"A: North gate 7am — Reply 1A Coming, 2A Can't make it", "B: South gate 9am", "Reply 1B Coming", "e.g. 1A", "C: Hi …, east gate …? — Reply 1C"} {
		if !strings.Contains(msg, want) {
			t.Errorf("listing lacks %q:\n%s", want, msg)
		}
	}
	if strings.Index(msg, "A: ") > strings.Index(msg, "B: ") {
		t.Errorf("not in code order:\n%s", msg)
	}
	if strings.Contains(msg, "spare radios") || !utf8.ValidString(msg) {
		t.Errorf("long text not cut to an excerpt:\n%s", msg)
	}
}

// A recipient's code is journaled, shown in their text's hint, parsed in
// their answers, never changed once given, and replays.
func TestCodesAssignedShowParseReplay(t *testing.T) {
	c, errs := Plan("g1", Request{From: sender, To: numbers(2), Text: "North gate 7am", Responses: codeOpts}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	plain := h.g.TextFor(0)
	if plain != "North gate 7am\n"+Hint(codeOpts) {
		t.Fatalf("text before codes: %q", plain)
	}
	h.apply(CodesAssigned{At: t0, Codes: []AssignedCode{{Index: 0, Code: "B", Shown: true}, {Index: 1, Code: "A"}}})
	if got := h.g.TextFor(0); got != "North gate 7am\nReply 1B Coming, 2B Can't make it" {
		t.Fatalf("coded text: %q", got)
	}
	if got := h.g.TextFor(1); got != plain {
		t.Fatalf("a code not shown changed the text: %q", got)
	}
	if err := h.g.Apply(CodesAssigned{At: t0, Codes: []AssignedCode{{Index: 0, Code: "C"}}}); err == nil {
		t.Fatal("a code changed")
	}
	h.claim(t0, 0)
	for i, tc := range []struct{ text, want string }{{"2B", "2"}, {"b 1", "1"}, {"1", "1"}, {"1C", ""}} {
		rep, ok := h.g.Reply(crewcast.Event{Kind: crewcast.KindInbound, EventID: fmt.Sprint("in", i), From: numbers(1)[0], Text: tc.text}, t0)
		if !ok || rep.Response != tc.want {
			t.Errorf("reply %q: response %q, want %q", tc.text, rep.Response, tc.want)
		}
	}
	h.replay()
}

func TestRequestOpen(t *testing.T) {
	a := Answers{Responses: codeOpts}
	if !RequestOpen(crewcast.GroupComplete, a, t0, t0.Add(time.Hour), 24*time.Hour) {
		t.Error("a delivered group asking for answers is open")
	}
	if RequestOpen(crewcast.GroupCanceled, a, t0, t0, 24*time.Hour) {
		t.Error("canceled is not open")
	}
	if RequestOpen(crewcast.GroupSending, a, t0, t0.Add(25*time.Hour), 24*time.Hour) {
		t.Error("past the window is not open")
	}
	if RequestOpen(crewcast.GroupSending, Answers{}, t0, t0, 24*time.Hour) {
		t.Error("no options: not open")
	}
	met := Answers{Responses: codeOpts, Quorum: &QuorumState{Quorum: Quorum{Response: "1", Count: 1}, MetAt: t0}}
	if RequestOpen(crewcast.GroupSending, met, t0, t0, 24*time.Hour) {
		t.Error("a met quorum is not open")
	}
}

// A follow-up that repeats the text repeats its coded hint.
func TestFollowupRepeatsTheCodedHint(t *testing.T) {
	c, errs := Plan("g1", Request{From: sender, To: numbers(1), Text: "North gate 7am", Responses: codeOpts}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	h.apply(CodesAssigned{At: t0, Codes: []AssignedCode{{Index: 0, Code: "B", Shown: true}}})
	if got := h.g.FollowupTextFor(h.g.Recipients[0]); !strings.HasSuffix(got, "North gate 7am\nReply 1B Coming, 2B Can't make it") {
		t.Fatalf("follow-up text %q", got)
	}
}
