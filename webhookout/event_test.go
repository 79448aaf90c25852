package webhookout

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func types(rows []store.OutboxRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Type)
	}
	return out
}

func TestDerive(t *testing.T) {
	g := store.GroupRow{ID: "g1", Status: crewcast.GroupSending, Seq: 1, Counts: map[string]int{"pending": 2}}
	alice := store.DeliveryRow{GroupID: "g1", Number: "+15550100001", Status: crewcast.StatusPending}
	bob := store.DeliveryRow{GroupID: "g1", Number: "+15550100002", Status: crewcast.StatusPending}
	rows := map[int]store.DeliveryRow{0: alice, 1: bob}
	lookup := func(i int) (store.DeliveryRow, bool) { r, ok := rows[i]; return r, ok }

	// Creation: group.created only; first statuses are not changes.
	created := Derive(Change{Group: g, Events: []actor.Event{{Seq: 1, Type: group.TypeCreated}},
		Dirty: []RecipientChange{{Row: alice}, {Row: bob}}, Recipient: lookup, Time: at})
	if got := types(created); !reflect.DeepEqual(got, []string{GroupCreated}) {
		t.Fatalf("creation derives %v", got)
	}

	// A claim and a delivery: only changed recipients are reported, events
	// that report nothing (send.claimed) are skipped.
	alice2 := alice
	alice2.Status = crewcast.StatusDelivered
	g.Seq = 3
	upd := Derive(Change{Group: g, PrevStatus: crewcast.GroupSending,
		Events:    []actor.Event{{Seq: 2, Type: group.TypeClaimed}, {Seq: 3, Type: group.TypeObserved}},
		Dirty:     []RecipientChange{{Row: alice2, PrevStatus: crewcast.StatusPending}, {Row: bob, PrevStatus: crewcast.StatusPending}},
		Recipient: lookup, Time: at})
	if got := types(upd); !reflect.DeepEqual(got, []string{RecipientUpdated}) {
		t.Fatalf("status change derives %v", got)
	}
	var body struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			GroupID   string         `json:"group_id"`
			Seq       uint64         `json:"seq"`
			Recipient map[string]any `json:"recipient"`
		} `json:"data"`
	}
	if err := json.Unmarshal(upd[0].Payload, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != RecipientUpdated || !body.Timestamp.Equal(at) || body.Data.GroupID != "g1" || body.Data.Seq != 3 ||
		body.Data.Recipient["status"] != "delivered" || body.Data.Recipient["number"] != alice.Number {
		t.Fatalf("body = %s", upd[0].Payload)
	}
	if upd[0].GroupID != "g1" || upd[0].Seq != 3 || upd[0].MsgID != MsgID("g1", 3, RecipientUpdated, alice.Number) {
		t.Fatalf("row = %+v", upd[0])
	}

	// A reply (recipient-scoped journal event, index from "i") that also
	// completes the group.
	g.Status, g.Seq = crewcast.GroupComplete, 4
	rep := Derive(Change{Group: g, PrevStatus: crewcast.GroupAwaiting,
		Events:    []actor.Event{{Seq: 4, Type: group.TypeReplied, Data: []byte(`{"i":1,"text":"yes"}`)}},
		Recipient: lookup, Time: at})
	if got := types(rep); !reflect.DeepEqual(got, []string{RecipientReplied, GroupCompleted}) {
		t.Fatalf("reply + completion derives %v", got)
	}
	var rb struct {
		Data struct {
			Recipient struct{ Number string } `json:"recipient"`
		} `json:"data"`
	}
	_ = json.Unmarshal(rep[0].Payload, &rb)
	if rb.Data.Recipient.Number != bob.Number {
		t.Fatalf("reply reports %q, want bob", rb.Data.Recipient.Number)
	}
	// Pure: the same change gives the same rows, ids included.
	again := Derive(Change{Group: g, PrevStatus: crewcast.GroupAwaiting,
		Events:    []actor.Event{{Seq: 4, Type: group.TypeReplied, Data: []byte(`{"i":1,"text":"yes"}`)}},
		Recipient: lookup, Time: at})
	if !reflect.DeepEqual(rep, again) {
		t.Fatal("Derive is not deterministic")
	}
	// A status already reached is not reported again.
	if got := types(Derive(Change{Group: g, PrevStatus: crewcast.GroupComplete, Time: at})); len(got) != 0 {
		t.Fatalf("unchanged status derives %v", got)
	}
	for _, st := range []crewcast.GroupStatus{crewcast.GroupCanceled, crewcast.GroupPaused} {
		g.Status = st
		got := types(Derive(Change{Group: g, PrevStatus: crewcast.GroupSending, Time: at}))
		if want := statusRules[st]; !reflect.DeepEqual(got, []string{want}) {
			t.Fatalf("%s derives %v, want %s", st, got, want)
		}
	}
}

// Every event type a mapping produces may be subscribed to.
func TestRulesProduceKnownTypes(t *testing.T) {
	for jt, r := range journalRules {
		if !ValidType(r.Type) {
			t.Errorf("journal %s maps to unknown %s", jt, r.Type)
		}
	}
	for st, typ := range statusRules {
		if !ValidType(typ) {
			t.Errorf("status %s maps to unknown %s", st, typ)
		}
	}
	if ValidType(EndpointTest) || ValidType("group.nope") {
		t.Error("endpoint.test or an unknown type is subscribable")
	}
}

func TestUnmatchedAndDisabledBodies(t *testing.T) {
	r := Unmatched("unmatched", 7, store.Reply{Provider: "telnyx", EventID: "ev1", Number: "+15550100009",
		To: "+15550100000", Text: "can't stop by, who is this", ReceivedAt: at, PossibleOptOut: true}, at)
	var b struct {
		Type string `json:"type"`
		Data struct {
			GroupID string        `json:"group_id"`
			Seq     uint64        `json:"seq"`
			Reply   apitype.Reply `json:"reply"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Payload, &b); err != nil {
		t.Fatal(err)
	}
	if b.Type != InboundUnmatched || b.Data.Seq != 7 || b.Data.Reply.Number != "+15550100009" || b.Data.Reply.Media == nil ||
		!bytes.Contains(r.Payload, []byte(`"possible_opt_out":true`)) {
		t.Fatalf("unmatched body %s", r.Payload)
	}
	d := Disabled(store.WebhookEndpoint{ID: "ep1", URL: "https://x.example/"}, "gone", at)
	if d.Type != EndpointDisabled || d.Endpoint != "" {
		t.Fatalf("disabled row %+v: must go to subscribers, not to the endpoint", d)
	}
}

// BenchmarkDerive: the commit path's cost per recipient status change when
// an endpoint exists (one recipient.updated row, its JSON body included).
func BenchmarkDerive(b *testing.B) {
	g := store.GroupRow{ID: "g1", Status: crewcast.GroupSending, Seq: 9, Counts: map[string]int{"sent": 100}}
	dirty := make([]RecipientChange, 100)
	for i := range dirty {
		dirty[i] = RecipientChange{PrevStatus: crewcast.StatusSending, Row: store.DeliveryRow{GroupID: "g1",
			Number: "+1555010" + string(rune('0'+i%10)) + "00" + string(rune('0'+i/10)), Status: crewcast.StatusSent,
			Attempts: 1, ProviderMessageID: "msg-abc", SentAt: at, ClaimedAt: at, UpdatedAt: at}}
	}
	c := Change{Group: g, PrevStatus: crewcast.GroupSending, Dirty: dirty, Time: at,
		Events: []actor.Event{{Seq: 9, Type: group.TypeOutcomes}}}
	b.ReportAllocs()
	for b.Loop() {
		if rows := Derive(c); len(rows) != 100 {
			b.Fatal(len(rows))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/change")
}

// The answers of issue 13 reach subscribers: a reply that chose a response
// option is also recipient.responded, and the quorum's moment is
// group.quorum_met (docs/design.md §13).
func TestDeriveResponsesAndQuorum(t *testing.T) {
	g := store.GroupRow{ID: "g1", Status: crewcast.GroupAwaiting, Seq: 6}
	bob := store.DeliveryRow{GroupID: "g1", Number: "+15550100002", Status: crewcast.StatusDelivered}
	lookup := func(i int) (store.DeliveryRow, bool) { return bob, i == 1 }
	got := types(Derive(Change{Group: g, PrevStatus: crewcast.GroupAwaiting,
		Events: []actor.Event{
			{Seq: 5, Type: group.TypeReplied, Data: []byte(`{"i":1,"text":"1","response":"1"}`)},
			{Seq: 6, Type: group.TypeQuorumMet, Data: []byte(`{"response":"1","count":1}`)},
		},
		Recipient: lookup, Time: at}))
	if want := []string{RecipientReplied, RecipientResponded, GroupQuorumMet}; !reflect.DeepEqual(got, want) {
		t.Fatalf("answer + quorum derive %v, want %v", got, want)
	}
	// A reply that chose nothing is only a reply.
	got = types(Derive(Change{Group: g, PrevStatus: crewcast.GroupAwaiting,
		Events:    []actor.Event{{Seq: 7, Type: group.TypeReplied, Data: []byte(`{"i":1,"text":"maybe"}`)}},
		Recipient: lookup, Time: at}))
	if want := []string{RecipientReplied}; !reflect.DeepEqual(got, want) {
		t.Fatalf("plain reply derives %v, want %v", got, want)
	}
}

// Callouts that fill: a wave and a re-opened quota are group events, and
// recipient.selected is one event per person selected (docs/architecture.md,
// "Waves and exact quotas"); standby and not_needed are not their own types.
func TestDeriveCalloutEvents(t *testing.T) {
	g := store.GroupRow{ID: "g1", Status: crewcast.GroupSending, Seq: 9}
	rows := []store.DeliveryRow{{GroupID: "g1", Number: "+15550100001"}, {GroupID: "g1", Number: "+15550100002"},
		{GroupID: "g1", Number: "+15550100003"}}
	lookup := func(i int) (store.DeliveryRow, bool) {
		if i < 0 || i >= len(rows) {
			return store.DeliveryRow{}, false
		}
		return rows[i], true
	}
	out := Derive(Change{Group: g, PrevStatus: crewcast.GroupSending,
		Events: []actor.Event{
			{Seq: 5, Type: group.TypeWaveSent, Data: []byte(`{"wave":1,"i":[0,1]}`)},
			{Seq: 6, Type: group.TypeSelected, Data: []byte(`{"i":[0,2]}`)},
			{Seq: 7, Type: group.TypeStandby, Data: []byte(`{"i":[1]}`)},
			{Seq: 8, Type: group.TypeNotNeeded, Data: []byte(`{"i":[1]}`)},
			{Seq: 9, Type: group.TypeQuorumReopened, Data: []byte(`{}`)},
		},
		Recipient: lookup, Time: at})
	if want := []string{GroupWaveSent, RecipientSelected, RecipientSelected, GroupQuorumReopened}; !reflect.DeepEqual(types(out), want) {
		t.Fatalf("derive %v, want %v", types(out), want)
	}
	if out[1].MsgID == out[2].MsgID || !strings.Contains(string(out[2].Payload), rows[2].Number) {
		t.Fatalf("selected rows %s / %s", out[1].Payload, out[2].Payload)
	}
	for _, typ := range []string{GroupWaveSent, GroupQuorumReopened, RecipientSelected} {
		if !ValidType(typ) {
			t.Errorf("%s cannot be subscribed to", typ)
		}
	}
}
