package tracker

import (
	"context"
	"errors"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// A group chosen from the directory that would text nobody is refused.
func TestCreateFromDirectoryWithNobodyReachableIsRefused(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for _, n := range nums(2) {
		if err := e.st.AddSuppression(ctx, store.Suppression{Number: n, Reason: "stop"}); err != nil {
			t.Fatal(err)
		}
	}
	req := group.Request{From: from, Text: "x", Crews: []string{"Night"},
		Resolved: []group.RecipientInput{{Number: nums(2)[0]}, {Number: nums(2)[1]}}}
	if _, _, err := e.tr.Create(ctx, req, CreateOptions{}); !errors.Is(err, ErrNoneReachable) {
		t.Fatalf("Create = %v, want ErrNoneReachable", err)
	}
	// Raw numbers keep today's behaviour: a group whose recipients are all
	// opted out is created and says so.
	if _, _, err := e.tr.Create(ctx, group.Request{From: from, Text: "x", To: nums(2)}, CreateOptions{}); err != nil {
		t.Fatalf("raw numbers: %v", err)
	}
}

// Each recipient is sent their own rendered text; replies are tallied per
// option; the quorum is journaled and cancels the sends not yet made.
func TestPerRecipientTextsTallyAndQuorum(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SendRate, c.SendBurst = 0.0001, 2 })
	ctx := context.Background()
	var resolved []group.RecipientInput
	for i, n := range nums(4) {
		resolved = append(resolved, group.RecipientInput{Number: n, Name: []string{"Ada", "Bo", "Cy", "Di"}[i], ContactID: "ct_" + n})
	}
	req := group.Request{From: from, Text: "Hi {{name}}, can you come?", Crews: []string{"All"}, Resolved: resolved,
		Responses: []group.Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Cannot", Ack: crewcast.AckNo}},
		Quorum:    &group.Quorum{Response: "1", Count: 2}}
	id, _, err := e.tr.Create(ctx, req, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(id, "two sent", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		n := 0
		for _, r := range rows {
			if r.Status == crewcast.StatusSent {
				n++
			}
		}
		return n == 2
	})
	texts := map[string]string{}
	for _, s := range e.prov.sent() {
		texts[s.To[0]] = s.Text
	}
	if texts[nums(4)[0]] != "Hi Ada, can you come?\nReply 1 Coming, 2 Cannot" || texts[nums(4)[1]] != "Hi Bo, can you come?\nReply 1 Coming, 2 Cannot" {
		t.Fatalf("texts sent = %q", texts)
	}
	var sent []string
	for _, r := range rows {
		if r.Status == crewcast.StatusSent {
			sent = append(sent, r.Number)
		}
	}
	in := func(evID, fromNum, text string) {
		t.Helper()
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: evID, Kind: crewcast.KindInbound, From: fromNum, To: from, Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	in("r1", sent[0], "Cannot")
	in("r2", sent[0], "coming") // the later answer wins
	e.waitGroup(id, "first answer", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Counts["responses.1"] == 1 })
	in("r3", sent[1], "STOP") // never an answer
	in("r4", sent[1], "y")    // YES → the option whose ack is yes
	g, rows := e.waitGroup(id, "quorum", func(g store.GroupRow, _ []store.DeliveryRow) bool {
		return g.Counts["responses.1"] == 2 && g.Counts["canceled"] == 2
	})
	if g.Counts["responses.2"] != 0 || g.Status != crewcast.GroupCanceled {
		t.Fatalf("group after quorum: %+v", g)
	}
	for _, r := range rows {
		if (r.Number == sent[0] || r.Number == sent[1]) && r.Response != "1" {
			t.Fatalf("response of %s = %q", r.Number, r.Response)
		}
	}
	var types []string
	if err := e.st.Load(ctx, id, 0, func(ev actor.Event) error { types = append(types, ev.Type); return nil }); err != nil {
		t.Fatal(err)
	}
	met := 0
	for _, ty := range types {
		if ty == group.TypeQuorumMet {
			met++
		}
	}
	if met != 1 {
		t.Fatalf("journal has %d group.quorum_met events: %v", met, types)
	}
	if len(e.prov.sent()) != 2 {
		t.Fatalf("%d sends after the quorum canceled the rest", len(e.prov.sent()))
	}
}
