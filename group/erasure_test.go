package group

import (
	"strings"
	"testing"
	"time"
)

// erasedPerson is the person of the erasure tests: a saved contact with
// fields, sent a template, who replied.
var erasedPerson = struct {
	number, name, first, last, site, contactID, tz, reply string
}{"+15550100002", "Bartholomew Vantongeren", "Bartholomew", "Vantongeren", "Kestrelmoor", "ct_8f3kq2", "America/Chicago",
	"Quillhaven bridge is shut, there by 7"}

// erasureJournal is the journal of a template group to the person and one
// raw number, with an escalation that named whoever had not answered and
// the person's reply, as Encode writes it.
func erasureJournal(t *testing.T) (typs []string, datas [][]byte) {
	t.Helper()
	p := erasedPerson
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	req := Request{From: "+15550100000", To: []string{p.number, "+15550100003"},
		Text: `Hi {{first_name | default "crew"}}, gate code 7741 at {{fields.site | default "depot"}}`,
		Known: map[string]RecipientInput{p.number: {Number: p.number, Name: p.name, ContactID: p.contactID,
			Fields: map[string]string{"site": p.site}, Timezone: p.tz}},
		PolicyInput: PolicyInput{Escalate: &EscalateInput{After: "30m", To: []string{"+15550109999"}}}}
	c, errs := Plan("g1", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	if errs := PlanPolicy(&c, req, PolicyDefaults{Timezone: "UTC"}, NormalizeNumber); errs != nil {
		t.Fatalf("plan policy: %v", errs)
	}
	if c.Recipients[0].Text != "Hi Bartholomew, gate code 7741 at Kestrelmoor" || c.Recipients[0].ContactID != p.contactID {
		t.Fatalf("the roster does not hold the person's rendered text and contact: %+v", c.Recipients[0])
	}
	g := &Group{}
	if err := g.Apply(c); err != nil {
		t.Fatal(err)
	}
	esc, ok := g.Escalate(t0.Add(31 * time.Minute))
	if !ok || !strings.Contains(esc.Text, p.name) {
		t.Fatalf("the escalation does not name the person: %+v", esc)
	}
	for _, e := range []Event{c, esc, Replied{At: t0.Add(40 * time.Minute), EventID: "in-1", Index: 0, Text: p.reply}} {
		typ, data, err := Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		typs, datas = append(typs, typ), append(datas, data)
	}
	return typs, datas
}

// The person's values, none of which may be left in a rewritten event.
func erasedValues() []string {
	p := erasedPerson
	return []string{p.number, strings.TrimPrefix(p.number, "+"), p.number[2:], p.name, p.first, p.last, p.site,
		p.contactID, p.tz, p.reply, "Quillhaven"}
}

// Erasing a person from a group that is still sending to others removes
// everything derived from them: their number and name, the text rendered
// for them from their name and fields, their contact id and time zone,
// their replies, and their name in the escalation text that listed who
// had not answered. The other recipient keeps their own.
func TestEraserRemovesEverythingDerivedFromThePerson(t *testing.T) {
	for _, texts := range []EraseTexts{{}, {Message: true, Escalation: true}} {
		typs, datas := erasureJournal(t)
		erase := EraserWith(erasedPerson.number, "h:0123abcd", texts)
		g := &Group{}
		for i := range datas {
			out, err := erase(typs[i], datas[i])
			if err != nil {
				t.Fatalf("%+v: rewrite %s: %v", texts, typs[i], err)
			}
			for _, v := range erasedValues() {
				if strings.Contains(string(out), v) {
					t.Errorf("%+v: %s still holds %q: %s", texts, typs[i], v, out)
				}
			}
			e, err := Decode(typs[i], out)
			if err != nil {
				t.Fatalf("%+v: decode the rewritten %s: %v", texts, typs[i], err)
			}
			if err := g.Apply(e); err != nil {
				t.Fatalf("%+v: replay the rewritten %s: %v", texts, typs[i], err)
			}
		}
		other := g.Recipient("+15550100003")
		if other == nil || other.Text != "Hi crew, gate code 7741 at depot" {
			t.Errorf("%+v: the other recipient lost their own text: %+v", texts, other)
		}
		if texts.Escalation {
			continue
		}
		if want := "No answer yet from h:0123abcd, +15550100003 (0 of 2 answered)"; g.Escalation == nil || g.Escalation.Text != want {
			t.Errorf("%+v: escalation text %q, want %q", texts, g.Escalation.Text, want)
		}
	}
}

// A name is erased from an escalation text as a whole name only: another
// person whose name starts with it keeps theirs.
func TestEraserErasesWholeNamesInTheEscalationText(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	c := Created{ID: "g1", From: "+15550100000", Text: "Crew call", At: t0, Recipients: []RosterEntry{
		{Number: "+15550100002", Name: "Al"}, {Number: "+15550100003", Name: "Alice"}, {Number: "+15550100004", Name: "Sal"}}}
	erase := Eraser("+15550100002", "h:1", false)
	typ, data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := erase(typ, data); err != nil {
		t.Fatal(err)
	}
	typ, data, err = Encode(Escalated{At: t0, Text: "No answer yet from Al, Alice, Sal; Al? (0 of 3 answered)"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := erase(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	e, err := Decode(typ, out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := e.(Escalated).Text, "No answer yet from h:1, Alice, Sal; h:1? (0 of 3 answered)"; got != want {
		t.Fatalf("escalation text %q, want %q", got, want)
	}
}

// A template group sent only to the person has their rendered text as its
// own text (every recipient got the same): it goes with them even while
// the group is not finished.
func TestEraserEmptiesTheTextOfAGroupOnlyToThem(t *testing.T) {
	p := erasedPerson
	req := Request{From: "+15550100000", To: []string{p.number}, Text: `Hi {{first_name}}, gate code 7741 at {{fields.site}}`,
		Known: map[string]RecipientInput{p.number: {Number: p.number, Name: p.name, ContactID: p.contactID,
			Fields: map[string]string{"site": p.site}}}}
	c, errs := Plan("g1", req, Settings{}, nil, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	if c.Text != "Hi Bartholomew, gate code 7741 at Kestrelmoor" {
		t.Fatalf("group text %q: want the person's rendered text", c.Text)
	}
	typ, data, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := EraserWith(p.number, "h:1", EraseTexts{})(typ, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range erasedValues() {
		if strings.Contains(string(out), v) {
			t.Errorf("the rewritten creation still holds %q: %s", v, out)
		}
	}
}
