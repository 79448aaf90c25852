package group

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
)

func TestTemplateRender(t *testing.T) {
	vars := TemplateVars{Name: "  Ada  King ", Fields: map[string]string{"site": "North", "blank": " "}}
	for _, tc := range []struct{ text, want, err string }{
		{"Hi {{name}}", "Hi Ada  King", ""},
		{"Hi {{ first_name }}!", "Hi Ada!", ""},
		{"At {{fields.site}}", "At North", ""},
		{`At {{fields.gate | default "gate 1"}}`, "At gate 1", ""},
		{`At {{fields.blank | default "gate 1"}}`, "At gate 1", ""},
		{`{{fields.site|default "x"}}`, "North", ""},
		{"At {{fields.gate}}", "", "fields.gate"},
		{"no vars", "no vars", ""},
	} {
		tp, err := ParseTemplate(tc.text)
		if err != nil {
			t.Fatalf("parse %q: %v", tc.text, err)
		}
		got, err := tp.Render(vars)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("render %q: err %v, want one naming %s", tc.text, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("render %q = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
	for _, bad := range []struct{ text, names string }{
		{"Hi {{nickname}}", "nickname"},
		{"Hi {{name", "never closed"},
		{"Hi {{}}", "empty"},
		{`{{name | upper}}`, "unknown filter"},
		{`{{name | default x}}`, "quoted"},
		{`{{fields.a b}}`, "fields.a b"},
	} {
		_, err := ParseTemplate(bad.text)
		var te *TemplateError
		if err == nil || !strings.Contains(err.Error(), bad.names) {
			t.Errorf("parse %q: %v, want an error naming %q", bad.text, err, bad.names)
		} else if !asTemplateError(err, &te) {
			t.Errorf("parse %q: %T, want *TemplateError", bad.text, err)
		}
	}
}

func asTemplateError(err error, te **TemplateError) bool {
	v, ok := err.(*TemplateError)
	*te = v
	return ok
}

// TestPropertyRenderingCannotInject: whatever a recipient's name and fields
// hold (template syntax included), the rendered text is the template with
// exactly their values in place, and never another recipient's.
func TestPropertyRenderingCannotInject(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		value := rapid.SampledFrom([]string{"{{name}}", "{{fields.site}}", "}}", "{{", "Bob", `" | default "x`, "ü😀"})
		gen := func(label string) TemplateVars {
			return TemplateVars{Name: rapid.StringMatching(`[A-Za-z]{1,5}`).Draw(rt, label+"name") + value.Draw(rt, label+"n"),
				Fields: map[string]string{"site": value.Draw(rt, label+"site") + "#" + label}}
		}
		a, b := gen("A"), gen("B")
		tp, err := ParseTemplate("Hi {{name}} at {{fields.site}}.")
		if err != nil {
			rt.Fatal(err)
		}
		ta, err := tp.Render(a)
		if err != nil {
			rt.Fatal(err)
		}
		want := "Hi " + strings.TrimSpace(a.Name) + " at " + strings.TrimSpace(a.Fields["site"]) + "."
		if ta != want {
			rt.Fatalf("rendered %q, want %q", ta, want)
		}
		if strings.Contains(ta, "#B") {
			rt.Fatalf("A's text %q holds B's value", ta)
		}
		if tb, _ := tp.Render(b); strings.Contains(tb, "#A") {
			rt.Fatalf("B's text %q holds A's value", tb)
		}
	})
}

func TestPlanRendersPerRecipientAndStoresCompactly(t *testing.T) {
	req := Request{From: sender, Text: "Hi {{first_name}}", Resolved: []RecipientInput{
		{Number: "+15550100001", Name: "Ada Lovelace", ContactID: "ct_a"},
		{Number: "+15550100002", Name: "Grace", ContactID: "ct_g"},
		{Number: "+15550100001", Name: "Ada again", ContactID: "ct_x"}, // the same number: merged
	}}
	c, errs := Plan("g", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	if len(c.Recipients) != 2 || c.Text != "Hi {{first_name}}" || c.Recipients[0].Text != "Hi Ada" ||
		c.Recipients[1].Text != "Hi Grace" || c.Recipients[0].ContactID != "ct_a" {
		t.Fatalf("created = %+v", c)
	}
	g := &Group{}
	if err := g.Apply(c); err != nil {
		t.Fatal(err)
	}
	if g.TextFor(0) != "Hi Ada" || g.TextFor(1) != "Hi Grace" {
		t.Fatalf("TextFor = %q, %q", g.TextFor(0), g.TextFor(1))
	}
	// Identical texts: stored once, as the group's text.
	req.Text = "Crew call {{fields.when | default \"7am\"}}"
	c, errs = Plan("g", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	if c.Text != "Crew call 7am" || c.Recipients[0].Text != "" || c.Recipients[1].Text != "" {
		t.Fatalf("identical texts kept copies: %+v", c)
	}
	// group_mms cannot send different texts.
	req.Text, req.Mode = "Hi {{name}}", crewcast.ModeGroupMMS
	if _, errs := Plan("g", req, Settings{}, nil, t0); len(errs) == 0 || !strings.Contains(errs[0].Message, "group_mms") {
		t.Fatalf("group_mms with per-recipient texts: %v", errs)
	}
	// The longest rendered text is what the segment limit judges.
	req.Mode = ""
	req.Resolved[1].Name = strings.Repeat("x", 1600)
	if _, errs := Plan("g", req, Settings{}, nil, t0); len(errs) == 0 || errs[0].Field != "text" {
		t.Fatalf("an over-long rendered text: %v", errs)
	}
}

func TestRewriteEventRedactsRenderedTexts(t *testing.T) {
	c, _ := Plan("g", Request{From: sender, Text: "Hi {{name}}", Resolved: []RecipientInput{
		{Number: "+15550100001", Name: "Ada", ContactID: "ct_a"}, {Number: "+15550100002", Name: "Bo"}}}, Settings{}, nil, t0)
	_, data, _ := Encode(c)
	out, err := RewriteEvent(TypeCreated, data, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "Hi Ada") || strings.Contains(string(out), "Hi Bo") {
		t.Fatalf("redacted event keeps rendered texts: %s", out)
	}
	out, _ = RewriteEvent(TypeCreated, data, false, func(string) string { return "h" })
	if strings.Contains(string(out), "ct_a") {
		t.Fatalf("hashed event keeps the contact id: %s", out)
	}
}

var opts = []Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Can't make it", Ack: crewcast.AckNo},
	{Key: "L", Label: "Late"}}

func TestParseResponse(t *testing.T) {
	for text, want := range map[string]string{
		"1": "1", " 1. ": "1", "coming": "1", "COMING!": "1", "can't make it": "2", "2 sorry": "2",
		"yes": "1", "Y": "1", "ok": "1", "NO": "2", "n": "2", "late": "L", "l": "L",
		"STOP": "", "stop": "", "start": "", "help": "", "maybe": "", "": "", "3": "",
	} {
		if got := ParseResponse(opts, text); got != want {
			t.Errorf("ParseResponse(%q) = %q, want %q", text, got, want)
		}
	}
	if got := ParseResponse(nil, "1"); got != "" {
		t.Errorf("no options: %q", got)
	}
	if errs := CheckOptions("responses", []Option{{Key: "STOP", Label: "x"}, {Key: "1", Label: "a"}, {Key: "1", Label: "b"},
		{Key: "a b", Label: "c"}, {Key: "3", Label: ""}, {Key: "4", Label: "d", Ack: "maybe"}}, &Quorum{Response: "9"}); len(errs) != 7 {
		t.Errorf("CheckOptions found %d problems: %v", len(errs), errs)
	}
}

// TestPropertyResponsesRoundTripAndStopNeverAnswers: every option's key and
// label choose it, whatever their case; the latest answer wins; STOP and
// START never change a recipient's response.
func TestPropertyResponsesRoundTripAndStopNeverAnswers(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(rt, "options")
		var os []Option
		used := map[string]bool{}
		for range n {
			k := rapid.StringMatching(`[0-9A-Za-z]{1,3}`).Filter(func(s string) bool {
				return !used[strings.ToLower(s)] && ParseKeyword(s) == ""
			}).Draw(rt, "key")
			used[strings.ToLower(k)] = true
			l := rapid.StringMatching(`[A-Za-z][a-z']{2,10}( [a-z]{1,6})?`).Filter(func(s string) bool {
				return !used[strings.ToLower(s)] && ParseKeyword(s) == ""
			}).Draw(rt, "label")
			used[strings.ToLower(l)] = true
			os = append(os, Option{Key: k, Label: l})
		}
		if errs := CheckOptions("responses", os, nil); len(errs) > 0 {
			rt.Skip("generated options clash")
		}
		for _, o := range os {
			for _, text := range []string{o.Key, strings.ToUpper(o.Label), strings.ToLower(o.Label), " " + o.Label + "!"} {
				if got := ParseResponse(os, text); got != o.Key {
					rt.Fatalf("%q chose %q, want %q (options %v)", text, got, o.Key, os)
				}
			}
		}
		c, _ := Plan("g", Request{From: sender, To: numbers(1), Text: "x", Responses: os}, Settings{}, nil, t0)
		g := &Group{}
		if err := g.Apply(c); err != nil {
			rt.Fatal(err)
		}
		want := ""
		for i := range rapid.IntRange(1, 12).Draw(rt, "replies") {
			var text string
			if rapid.Bool().Draw(rt, "keyword") {
				text = rapid.SampledFrom([]string{"STOP", "start", "Stop", "UNSUBSCRIBE", "help"}).Draw(rt, "kw")
			} else {
				o := rapid.SampledFrom(os).Draw(rt, "answer")
				text, want = o.Label, o.Key
			}
			r, ok := g.Reply(crewcast.Event{EventID: "e" + string(rune('a'+i)), Kind: crewcast.KindInbound, From: numbers(1)[0], Text: text},
				t0.Add(time.Duration(i)*time.Second))
			if !ok {
				rt.Fatal("reply not matched")
			}
			if err := g.Apply(r); err != nil {
				rt.Fatal(err)
			}
			if got := g.Recipients[0].Response; got != want {
				rt.Fatalf("after %q: response %q, want %q", text, got, want)
			}
		}
		counts := g.Counts()
		for _, o := range os {
			wantN := 0
			if o.Key == want {
				wantN = 1
			}
			if counts[CountResponsePrefix+o.Key] != wantN {
				rt.Fatalf("count of %q = %d, want %d", o.Key, counts[CountResponsePrefix+o.Key], wantN)
			}
		}
	})
}

func TestQuorumMetCancelsSendsNotYetMade(t *testing.T) {
	for _, keep := range []bool{false, true} {
		c, errs := Plan("g", Request{From: sender, To: numbers(4), Text: "Who can come?", Responses: opts,
			Quorum: &Quorum{Response: "1", Count: 2, KeepSending: keep}}, Settings{}, nil, t0)
		if errs != nil {
			t.Fatal(errs)
		}
		if !strings.HasSuffix(c.Text, "\nReply 1 Coming, 2 Can't make it, L Late") {
			t.Fatalf("hint missing: %q", c.Text)
		}
		h := &harness{t: t, g: &Group{}}
		h.apply(c)
		cl := h.claim(t0, 2) // two sent, two still pending
		for _, s := range cl.Sends {
			h.outcome(s, crewcast.SendResult{MessageID: "m" + s.ID}, nil, t0)
		}
		reply := func(i int, id, text string) {
			r, ok := h.g.Reply(crewcast.Event{EventID: id, Kind: crewcast.KindInbound, From: h.g.Recipients[i].Number, Text: text}, t0.Add(time.Minute))
			if !ok {
				t.Fatal("reply not matched")
			}
			h.apply(r)
		}
		reply(0, "a", "yes")
		if _, ok := h.g.QuorumReached(t0); ok {
			t.Fatal("quorum met with one answer")
		}
		reply(1, "b", "2")
		reply(1, "c", "Coming") // the later answer replaces the earlier one
		q, ok := h.g.QuorumReached(t0.Add(time.Minute))
		if !ok || q.Count != 2 || q.Response != "1" || q.Cancel == keep {
			t.Fatalf("QuorumReached = %+v, %v", q, ok)
		}
		h.apply(q)
		if h.g.Quorum.MetAt.IsZero() {
			t.Fatal("met_at not set")
		}
		if _, again := h.g.QuorumReached(t0.Add(2 * time.Minute)); again {
			t.Fatal("quorum met twice")
		}
		wantPending := crewcast.StatusCanceled
		if keep {
			wantPending = crewcast.StatusPending
		}
		if h.status(2) != wantPending || h.status(3) != wantPending || h.status(0) != crewcast.StatusSent {
			t.Fatalf("keep=%v statuses %s %s %s", keep, h.status(0), h.status(2), h.status(3))
		}
		counts := h.g.Counts()
		if counts["responses.1"] != 2 || counts["responses.2"] != 0 || counts["responses.L"] != 0 {
			t.Fatalf("tally %v", counts)
		}
		var a Answers
		if err := json.Unmarshal([]byte(h.g.AnswersJSON()), &a); err != nil || a.Quorum == nil || a.Quorum.MetAt.IsZero() {
			t.Fatalf("answers %s: %v", h.g.AnswersJSON(), err)
		}
		h.replay()
	}
}

// TestPlanRosterCrewsFirst: the roster is in the order given, crews'
// members (and the other directory choices: tags, contacts) first, then
// to/recipients (docs/design.md §15): a callout's waves text it in this
// order. A number in both keeps its first place; a name given with it in
// recipients still wins over the contact's. A bad number in to is named by
// its own index.
func TestPlanRosterCrewsFirst(t *testing.T) {
	numbers := func(c Created) string {
		var out []string
		for _, r := range c.Recipients {
			out = append(out, r.Number+"="+r.Name)
		}
		return strings.Join(out, " ")
	}
	crew := []RecipientInput{
		{Number: "+15550100001", Name: "Ada", ContactID: "ct_a"},
		{Number: "+15550100002", Name: "Bo", ContactID: "ct_b"},
		{Number: "+15550100003", Name: "Cy", ContactID: "ct_c"},
	}
	c, errs := Plan("g", Request{From: sender, Text: "x", To: []string{"+15550100009", "+15550100003"}, Resolved: crew}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	if got, want := numbers(c), "+15550100001=Ada +15550100002=Bo +15550100003=Cy +15550100009="; got != want {
		t.Errorf("to after the crew: roster %q, want %q", got, want)
	}
	c, errs = Plan("g", Request{From: sender, Text: "Hi {{name}}", Resolved: crew,
		Recipients: []RecipientInput{{Number: "+15550100008", Name: "Dee"}, {Number: "+1 555 010 0002", Name: "Boss"}}}, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	if got, want := numbers(c), "+15550100001=Ada +15550100002=Boss +15550100003=Cy +15550100008=Dee"; got != want {
		t.Errorf("recipients after the crew: roster %q, want %q", got, want)
	}
	if c.Recipients[1].ContactID != "ct_b" || c.Recipients[1].Text != "Hi Boss" {
		t.Errorf("the crew member named in recipients: %+v", c.Recipients[1])
	}
	_, errs = Plan("g", Request{From: sender, Text: "x", To: []string{"+15550100009", "12345"}, Resolved: crew}, Settings{}, nil, t0)
	if len(errs) != 1 || errs[0].Field != "to[1]" {
		t.Errorf("a bad number in to after a crew: %+v", errs)
	}
	_, errs = Plan("g", Request{From: sender, Text: "x", To: []string{"+15550100009"}, Resolved: []RecipientInput{{Number: "12345"}}}, Settings{}, nil, t0)
	if len(errs) != 1 || errs[0].Field != "contacts" {
		t.Errorf("a bad directory number: %+v", errs)
	}
}
