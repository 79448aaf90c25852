package group

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
)

// headOf is what DecodeCreatedHead must return for data: Decode's event
// without its roster.
func headOf(t testing.TB, data []byte) Created {
	t.Helper()
	ev, err := Decode(TypeCreated, data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	c := ev.(Created)
	c.Recipients = nil
	return c
}

// Every group.created event decodes to the same head either way, whatever
// its strings hold (quotes, backslashes, brackets, the word "recipients")
// and wherever its policy is.
func TestDecodeCreatedHeadMatchesDecode(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tricky := rapid.SampledFrom([]string{"", `"`, `\`, `\"`, `\\`, "]", "}", "{[", `"recipients":[`, "ü😀", "\n", "\u2028", "x"})
		str := func(label string) string {
			return tricky.Draw(rt, label+"1") + rapid.StringMatching(`[a-z ]{0,4}`).Draw(rt, label+"2") + tricky.Draw(rt, label+"3")
		}
		c := Created{ID: "g1", From: "+15550100000", Text: str("text"), Mode: crewcast.ModeIndividual,
			At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), By: str("by"),
			Settings: Settings{MaxAttempts: 2, CheckAfter: time.Minute}}
		for i := range rapid.IntRange(0, 5).Draw(rt, "n") {
			c.Recipients = append(c.Recipients, RosterEntry{Number: "+1555010000" + string(rune('0'+i)), Name: str("name"),
				ContactID: str("contact"), Text: str("rtext"), TZ: str("tz"), Suppressed: i%2 == 0})
		}
		if rapid.Bool().Draw(rt, "responses") {
			c.Responses = []Option{{Key: "1", Label: str("label")}}
		}
		if rapid.Bool().Draw(rt, "policy") {
			c.Policy = &Policy{Priority: PriorityCritical, Timezone: "America/Chicago",
				Escalate: &Escalate{After: time.Hour, To: []string{"+15550100009"}, Text: str("esc")}}
		}
		_, data, err := Encode(c)
		if err != nil {
			rt.Fatal(err)
		}
		if rapid.Bool().Draw(rt, "indent") {
			var b bytes.Buffer
			if err := json.Indent(&b, data, " ", "\t"); err != nil {
				rt.Fatal(err)
			}
			data = b.Bytes()
		}
		got, err := DecodeCreatedHead(data)
		if err != nil {
			rt.Fatalf("DecodeCreatedHead: %v", err)
		}
		if want := headOf(t, data); !reflect.DeepEqual(got, want) {
			rt.Fatalf("head\n got %+v\nwant %+v", got, want)
		}
	})
}

// The events earlier versions wrote decode the same way too.
func TestDecodeCreatedHeadReadsTheV1Journal(t *testing.T) {
	f, err := os.Open(journalV1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var l fixtureLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Type != TypeCreated {
			continue
		}
		n++
		got, err := DecodeCreatedHead(l.Data)
		if err != nil {
			t.Fatal(err)
		}
		if want := headOf(t, l.Data); !reflect.DeepEqual(got, want) || got.ID == "" {
			t.Fatalf("head\n got %+v\nwant %+v", got, want)
		}
	}
	if n == 0 {
		t.Fatal("no group.created in the fixture")
	}
}

// Data the scan cannot follow falls back to a whole decode: an escaped
// key still names the roster, and what is not JSON is an error.
func TestDecodeCreatedHeadFallsBack(t *testing.T) {
	data := []byte(`{"id":"g1","recip\u0069ents":[{"number":"+15550100001"}],"policy":{"priority":"critical"}}`)
	got, err := DecodeCreatedHead(data)
	if err != nil || got.ID != "g1" || got.Recipients != nil || got.Policy == nil || got.Policy.Priority != PriorityCritical {
		t.Fatalf("escaped key: %+v, %v", got, err)
	}
	for _, bad := range []string{``, `[]`, `{"id":"g1","recipients":[{"number":"+1555`, `{"id":"g1" "recipients":[]}`, `{"recipients":[]`} {
		if _, err := DecodeCreatedHead([]byte(bad)); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
}
