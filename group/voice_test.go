package group

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// A call's end is journaled for its recipient, survives encoding, and is
// applied once.
func TestCallEndedAppliesOnce(t *testing.T) {
	g := &Group{}
	now := time.Date(2026, 12, 3, 10, 42, 0, 0, time.UTC)
	if err := g.Apply(Created{ID: "g1", From: "+15550100000", Text: "x", Mode: crewcast.ModeIndividual, At: now,
		Recipients: []RosterEntry{{Number: "+15550100001"}}}); err != nil {
		t.Fatal(err)
	}
	ev := crewcast.Event{Kind: crewcast.KindCallEnded, EventID: "CA1:busy", To: "+15550100001", ProviderStatus: "busy"}
	ce, ok := g.CallEnd(ev, now)
	if !ok || ce.Index != 0 || ce.Outcome != "busy" {
		t.Fatalf("CallEnd = %+v %v", ce, ok)
	}
	typ, data, err := Encode(ce)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(typ, data)
	if err != nil || typ != "recipient.call_ended" {
		t.Fatalf("decode %s: %v", typ, err)
	}
	if err := g.Apply(back); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.CallEnd(ev, now); ok {
		t.Fatal("the same call end decided twice")
	}
	if _, ok := g.CallEnd(crewcast.Event{Kind: crewcast.KindCallEnded, EventID: "CA2", To: "+15550100009"}, now); ok {
		t.Fatal("a call end for a number not in the group")
	}
}

// An answer records the channel it came by (AnsweredBy) and counts under
// by_channel; a reply that answers nothing does not; the wire nests them.
func TestAnsweredByChannel(t *testing.T) {
	g := &Group{}
	now := time.Date(2026, 12, 3, 10, 42, 0, 0, time.UTC)
	if err := g.Apply(Created{ID: "g1", From: "+15550100000", Text: "x", Mode: crewcast.ModeIndividual, At: now,
		Recipients: []RosterEntry{{Number: "+15550100001"}, {Number: "+15550100002"}, {Number: "+15550100003"}},
		Responses:  []Option{{Key: "1", Label: "Coming"}}}); err != nil {
		t.Fatal(err)
	}
	for i, ev := range []crewcast.Event{
		{Provider: "voice", Kind: crewcast.KindInbound, EventID: "v1", From: "+15550100001", To: "+15550100000", Text: "1"},
		{Provider: "twilio", Kind: crewcast.KindInbound, EventID: "s1", From: "+15550100002", To: "+15550100000", Text: "1"},
		{Provider: "twilio", Kind: crewcast.KindInbound, EventID: "s2", From: "+15550100003", To: "+15550100000", Text: "running late"},
	} {
		rep, ok := g.Reply(ev, now)
		if !ok {
			t.Fatalf("reply %d not for the group", i)
		}
		if err := g.Apply(rep); err != nil {
			t.Fatal(err)
		}
	}
	if a, b, c := g.Recipients[0].AnsweredBy, g.Recipients[1].AnsweredBy, g.Recipients[2].AnsweredBy; a != "voice" || b != "sms" || c != "" {
		t.Fatalf("answered_by %q %q %q", a, b, c)
	}
	counts := g.Counts()
	if counts["by_channel.voice"] != 1 || counts["by_channel.sms"] != 1 || len(counts) != len(CountKeys)+3 {
		t.Fatalf("counts %v", counts)
	}
	b, err := json.Marshal(CountsJSON(counts))
	if err != nil || !strings.Contains(string(b), `"by_channel":{"sms":1,"voice":1}`) {
		t.Fatalf("counts JSON %s, %v", b, err)
	}
}
