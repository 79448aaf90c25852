package group

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Counts nest the tally per response option on the wire and flatten it
// back; a row written before no_reply was counted gets it derived.
func TestCountsJSONRoundTripAndView(t *testing.T) {
	c := CountsJSON{"delivered": 2, CountResponsePrefix + "1": 3}
	b, err := json.Marshal(c)
	if err != nil || string(b) != `{"delivered":2,"responses":{"1":3}}` {
		t.Fatalf("marshal %s %v", b, err)
	}
	var back CountsJSON
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("unmarshal %v %v", back, err)
	}
	v := ViewCounts(map[string]int{"delivered": 3, "opted_out": 1, CountReplied: 1, CountResponsePrefix + "2": 1})
	if v[CountNoReply] != 2 || v["pending"] != 0 || v[CountResponsePrefix+"2"] != 1 || len(v) != len(CountKeys)+1 {
		t.Fatalf("view %v", v)
	}
	if _, ok := v["pending"]; !ok {
		t.Fatal("a count key is missing from the view")
	}
}
