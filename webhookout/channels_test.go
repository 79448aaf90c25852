package webhookout

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// A ladder's call placed, its end and a mail sent are webhook events
// about their recipient; a text follow-up and a step not made are not.
func TestDeriveLadderAttempts(t *testing.T) {
	g := store.GroupRow{ID: "g1", Status: crewcast.GroupAwaiting, Seq: 9}
	rows := map[int]store.DeliveryRow{0: {GroupID: "g1", Number: "+15550100001"}, 1: {GroupID: "g1", Number: "+15550100002"}}
	lookup := func(i int) (store.DeliveryRow, bool) { r, ok := rows[i]; return r, ok }
	out := Derive(Change{Group: g, PrevStatus: crewcast.GroupAwaiting, Recipient: lookup, Time: at, Events: []actor.Event{
		{Seq: 7, Type: group.TypeFollowupOutcomes, Data: []byte(`{"outcomes":[{"send_id":"f0-2","i":[0],"result":"accepted","channel":"voice"},` +
			`{"send_id":"f1-2","i":[1],"result":"accepted"},{"send_id":"f1-3","i":[1],"result":"skipped","channel":"email"}]}`)},
		{Seq: 8, Type: group.TypeCallEnded, Data: []byte(`{"i":0,"outcome":"answered","digits":"1"}`)},
		{Seq: 9, Type: group.TypeFollowupOutcomes, Data: []byte(`{"outcomes":[{"send_id":"f1-3","i":[1],"result":"accepted","channel":"email"}]}`)},
	}})
	if got := types(out); !reflect.DeepEqual(got, []string{RecipientCallPlaced, RecipientCallEnded, RecipientEmailSent}) {
		t.Fatalf("derives %v", got)
	}
	var body struct {
		Type string
		Data struct {
			Seq       uint64
			Outcome   string
			Digits    string
			Recipient struct{ Number string }
		}
	}
	if err := json.Unmarshal(out[1].Payload, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != RecipientCallEnded || body.Data.Outcome != "answered" || body.Data.Digits != "1" || body.Data.Seq != 8 ||
		body.Data.Recipient.Number != "+15550100001" {
		t.Fatalf("call_ended body %s", out[1].Payload)
	}
	for _, typ := range []string{RecipientCallPlaced, RecipientCallEnded, RecipientEmailSent} {
		if !ValidType(typ) {
			t.Errorf("%s cannot be subscribed to", typ)
		}
	}
}
