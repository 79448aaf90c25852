package group

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
)

// A large group.created event encodes byte for byte as json.Marshal
// encodes it, whatever its strings hold: the journal format is
// encoding/json's, and the hand-written roster must not drift from it.
func TestEncodeCreatedIsJSONMarshal(t *testing.T) {
	piece := rapid.SampledFrom([]string{"", "a", "Site 3", `"`, `\`, "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
		"ü", "😀", "\u2028", "\u2029", "\xff", "\xe2\x80", "\xed\xa0\x80", "+15550100001", "America/Chicago"})
	str := func(rt *rapid.T, label string) string {
		return piece.Draw(rt, label+"1") + piece.Draw(rt, label+"2") + piece.Draw(rt, label+"3")
	}
	rapid.Check(t, func(rt *rapid.T) {
		c := Created{ID: "g1", From: "+15550100000", Text: str(rt, "text"), Mode: crewcast.ModeIndividual,
			At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), By: str(rt, "by"), Settings: Settings{MaxAttempts: 2}}
		n := rapid.SampledFrom([]int{0, 1, rosterByHand - 1, rosterByHand, rosterByHand + 7}).Draw(rt, "n")
		for i := range n {
			e := RosterEntry{Number: "+1555010" + string(rune('0'+i%10)) + "000"}
			if rapid.IntRange(0, 9).Draw(rt, "odd") == 0 { // a few entries with every field drawn
				e = RosterEntry{Number: str(rt, "number"), Name: str(rt, "name"), Suppressed: rapid.Bool().Draw(rt, "sup"),
					ContactID: str(rt, "contact"), Text: str(rt, "rtext"), TZ: str(rt, "tz")}
			}
			c.Recipients = append(c.Recipients, e)
		}
		if rapid.Bool().Draw(rt, "policy") {
			c.Policy = &Policy{Priority: PriorityCritical, Timezone: str(rt, "ptz")}
		}
		_, got, err := Encode(c)
		if err != nil {
			rt.Fatal(err)
		}
		want, err := json.Marshal(c)
		if err != nil {
			rt.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			rt.Fatalf("differs at byte %d:\n got …%.80s\nwant …%.80s", i, got[max(0, i-20):], want[max(0, i-20):])
		}
	})
}

// Every byte value and the runes encoding/json treats specially, one
// string each.
func TestAppendJSONStringEveryByte(t *testing.T) {
	var cases []string
	for b := range 256 {
		cases = append(cases, "x"+string([]byte{byte(b)})+"y")
	}
	cases = append(cases, "\u2028", "\u2029", "\ufffd", "😀", "\xf0\x9f\x98", "")
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}
