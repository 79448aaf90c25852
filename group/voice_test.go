package group

import (
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
