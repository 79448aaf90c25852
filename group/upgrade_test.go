package group

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// updateFixtures rewrites the golden journal. Never run it to make a
// failing test pass: the fixture is what a database written by an earlier
// version holds, and that cannot change after the fact.
var updateFixtures = flag.Bool("update-fixtures", false, "rewrite testdata/journal-v1.jsonl from the events in this test")

// journalV1 is the fixture written by crewcast's first schema version:
// one line per journal event, {"type": ..., "data": <event JSON as
// journaled>}.
const journalV1 = "testdata/journal-v1.jsonl"

// fixtureLine is one journaled event of the golden file.
type fixtureLine struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// v1Events is a history that uses every event type and most fields, as
// the code that wrote journal-v1.jsonl produced them.
func v1Events() []Event {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	return []Event{
		Created{ID: "g_fixture", From: "+15550100000", Text: "Crew call 7am", MediaURLs: []string{"https://example.com/map.png"},
			Mode: crewcast.ModeIndividual, At: at(0), By: "key_1",
			Settings: Settings{MaxAttempts: 2, Backoff: []time.Duration{time.Minute, 5 * time.Minute}, CheckAfter: 15 * time.Minute, Deadline: time.Hour, ClaimWindow: 30 * time.Minute},
			Recipients: []RosterEntry{{Number: "+15550100001", Name: "Ana"}, {Number: "+15550100002"}, {Number: "+15550100003"},
				{Number: "+15550100004"}, {Number: "+15550100005"}, {Number: "+15550100006", Suppressed: true}}},
		Claimed{At: at(1), Sends: []Send{{ID: "s1", Indices: []int{0}}, {ID: "s2", Indices: []int{1}}, {ID: "s3", Indices: []int{2}}, {ID: "s4", Indices: []int{3}}}},
		Outcomes{At: at(2), Outcomes: []Outcome{
			{SendID: "s1", Indices: []int{0}, Result: ResultAccepted, MessageID: "m1"},
			{SendID: "s2", Indices: []int{1}, Result: ResultUncertain, Class: crewcast.ClassUncertain, Detail: "connection reset"},
			{SendID: "s3", Indices: []int{2}, Result: ResultFailed, Code: "40300", Class: crewcast.ClassRecipient, Detail: "blocked"},
			{SendID: "s4", Indices: []int{3}, Result: ResultAccepted, MessageID: "m4", GroupMessageID: "gm4"},
		}},
		Observed{At: at(3), EventID: "ev1", Source: SourceWebhook, Index: 0, MessageID: "m1", Status: crewcast.StatusDelivered,
			ProviderStatus: "delivered", OccurredAt: at(3)},
		Replied{At: at(4), EventID: "in1", Index: 0, Text: "YES", Media: []string{"https://example.com/r.jpg"}, Ack: crewcast.AckYes},
		Checked{At: at(900), Index: 3, ProviderStatus: "sent", NextCheckAt: at(2700)},
		Expired{At: at(3602), Indices: []int{3}, Reason: "no final receipt by the deadline"},
		Resolved{At: at(3700), Index: 1, Outcome: ResolveDelivered, By: "key_1"},
		RetryRequested{At: at(3800), Index: 2, By: "key_1"},
		Claimed{At: at(3801), Sends: []Send{{ID: "s5", Indices: []int{2}}, {ID: "s6", Indices: []int{4}}}},
		Unconfirmed{At: at(3802), Indices: []int{2}, Reason: "process stopped before the send's outcome was recorded"},
		Outcomes{At: at(3803), Outcomes: []Outcome{{SendID: "s6", Indices: []int{4}, Result: ResultHalted, Code: "10002", Class: crewcast.ClassSender, Detail: "invalid sender"}}},
		Resumed{At: at(3900), By: "key_1"},
		Observed{At: at(3901), Source: SourceReconcile, Index: 2, MessageID: "m5", Status: crewcast.StatusDelivered, Evidence: "orphan webhook for the same number within the claim window"},
		Replied{At: at(3902), EventID: "in2", Index: 3, Text: "STOP", Keyword: KeywordStop},
		Canceled{At: at(4000), By: "key_1"},
	}
}

// TestJournalV1FixtureStillReplays holds today's code to the journal that
// earlier versions wrote: every line must decode to exactly the event it
// was written from (a renamed or retyped JSON tag fails here), and the
// history must replay through Apply to the same statuses.
func TestJournalV1FixtureStillReplays(t *testing.T) {
	want := v1Events()
	if *updateFixtures {
		var buf bytes.Buffer
		for _, e := range want {
			typ, data, err := Encode(e)
			if err != nil {
				t.Fatal(err)
			}
			line, err := json.Marshal(fixtureLine{Type: typ, Data: data})
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.FromSlash(journalV1), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(filepath.FromSlash(journalV1))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Event
	types := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var l fixtureLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %d: %v", len(got)+1, err)
		}
		e, err := Decode(l.Type, l.Data)
		if err != nil {
			t.Fatalf("line %d: %v", len(got)+1, err)
		}
		got = append(got, e)
		types[l.Type] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("fixture has %d events, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d (%s) decodes differently from what was written:\n got %+v\nwant %+v", i+1, want[i].Type(), got[i], want[i])
		}
	}
	for _, typ := range []string{TypeCreated, TypeClaimed, TypeOutcomes, TypeObserved, TypeReplied, TypeUnconfirmed,
		TypeChecked, TypeExpired, TypeCanceled, TypeResolved, TypeRetry, TypeResumed} {
		if !types[typ] {
			t.Errorf("fixture has no %s event", typ)
		}
	}

	g := &Group{}
	for i, e := range got {
		if err := g.Apply(e); err != nil {
			t.Fatalf("replay event %d: %v", i+1, err)
		}
	}
	wantStatus := []crewcast.Status{crewcast.StatusDelivered, crewcast.StatusDelivered, crewcast.StatusDelivered,
		crewcast.StatusOptedOut, crewcast.StatusCanceled, crewcast.StatusOptedOut}
	for i, r := range g.Recipients {
		if r.Status != wantStatus[i] {
			t.Errorf("recipient %d: status %s after replay, want %s", i, r.Status, wantStatus[i])
		}
	}
	if g.Status != crewcast.GroupCanceled || g.Settings.MaxAttempts != 2 || g.Recipients[0].Name != "Ana" {
		t.Errorf("group after replay: status %s, max attempts %d, name %q", g.Status, g.Settings.MaxAttempts, g.Recipients[0].Name)
	}
}
