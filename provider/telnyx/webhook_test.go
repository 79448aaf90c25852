package telnyx

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

func parseSigned(t *testing.T, c *Client, body []byte) ([]crewcast.Event, error) {
	t.Helper()
	return c.ParseWebhook(crewcast.WebhookRequest{Header: Sign(testPrivateKey, testNow, body), Body: body})
}

// TestParseWebhookGolden signs every fixture in testdata/webhooks and
// compares the Events with <fixture>.events.json.
func TestParseWebhookGolden(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	files, err := filepath.Glob("testdata/webhooks/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".events.json") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			events, err := parseSigned(t, c, body)
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON(t, "webhooks/"+name+".events.json", events)
		})
	}
	if n < 9 {
		t.Fatalf("found %d webhook fixtures, want at least 9", n)
	}
}

func TestParseWebhookSemantics(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	parse := func(name string) []crewcast.Event {
		t.Helper()
		events, err := parseSigned(t, c, readTestdata(t, "webhooks/"+name+".json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return events
	}

	t.Run("message.sent", func(t *testing.T) {
		ev := parse("message_sent")
		want := crewcast.Event{Provider: "telnyx", EventID: "b301ed3f-1490-491f-995f-6e64e69674d4", Kind: crewcast.KindSent,
			MessageID: "40385f64-5717-4562-b3fc-2c963f66afa6", From: "+15550100000", To: "+15550100001",
			Status: crewcast.StatusSent, ProviderStatus: "sent", Attempt: 1, Text: "Crew call 7am",
			OccurredAt: time.Date(2026, 3, 1, 7, 0, 1, 484e6, time.UTC)}
		if len(ev) != 1 || !eventEqual(ev[0], want) {
			t.Errorf("got %+v\nwant %+v", ev, want)
		}
	})
	t.Run("finalized delivered with +00:00 and numeric cost", func(t *testing.T) {
		ev := parse("message_finalized_delivered")
		if len(ev) != 1 || ev[0].Kind != crewcast.KindStatus || ev[0].Status != crewcast.StatusDelivered ||
			ev[0].Attempt != 2 || !ev[0].OccurredAt.Equal(time.Date(2026, 3, 1, 7, 0, 4, 123e6, time.UTC)) ||
			ev[0].ErrorClass != crewcast.ClassNone {
			t.Errorf("got %+v", ev)
		}
	})
	t.Run("finalized failed carries code and class", func(t *testing.T) {
		ev := parse("message_finalized_failed")
		if len(ev) != 1 || ev[0].Status != crewcast.StatusFailed || ev[0].ErrorCode != "40008" || ev[0].ErrorClass != crewcast.ClassCarrier {
			t.Errorf("got %+v", ev)
		}
	})
	t.Run("expired 40005 is failed but uncertain", func(t *testing.T) {
		ev := parse("message_finalized_expired")
		if len(ev) != 1 || ev[0].Status != crewcast.StatusFailed || ev[0].ErrorCode != "40005" || ev[0].ErrorClass != crewcast.ClassUncertain {
			t.Errorf("got %+v", ev)
		}
	})
	t.Run("delivery_unconfirmed is unknown and uncertain", func(t *testing.T) {
		ev := parse("message_finalized_unconfirmed")
		if len(ev) != 1 || ev[0].Status != crewcast.StatusUnknown || ev[0].ErrorClass != crewcast.ClassUncertain {
			t.Errorf("got %+v", ev)
		}
	})
	t.Run("group finalized gives one event per recipient", func(t *testing.T) {
		ev := parse("message_finalized_group")
		if len(ev) != 3 {
			t.Fatalf("got %d events, want 3", len(ev))
		}
		type row struct {
			to     string
			status crewcast.Status
			code   string
			class  crewcast.ErrorClass
		}
		want := []row{
			{"+15550100001", crewcast.StatusDelivered, "", ""},
			{"+15550100002", crewcast.StatusFailed, "40004", crewcast.ClassCarrier},
			{"+15550100003", crewcast.StatusUnknown, "", crewcast.ClassUncertain}, // the error names another recipient
		}
		for i, e := range ev {
			got := row{e.To, e.Status, e.ErrorCode, e.ErrorClass}
			if got != want[i] || e.EventID != "c0ffee00-0000-4000-8000-000000000005" ||
				e.GroupMessageID != "a9f1c2d3-0000-4000-8000-00000000000a" || e.From != "+15550100000" {
				t.Errorf("event %d = %+v, want %+v", i, e, want[i])
			}
		}
	})
	t.Run("inbound SMS", func(t *testing.T) {
		ev := parse("message_received")
		want := crewcast.Event{Provider: "telnyx", EventID: "d1e2f3a4-0000-4000-8000-000000000006", Kind: crewcast.KindInbound,
			MessageID: "e2f3a4b5-0000-4000-8000-000000000007", From: "+15550100001", To: "+15550100000", Text: "YES",
			Attempt: 1, OccurredAt: time.Date(2026, 3, 1, 7, 5, 0, 250e6, time.UTC)}
		if len(ev) != 1 || !eventEqual(ev[0], want) {
			t.Errorf("got %+v\nwant %+v", ev, want)
		}
	})
	t.Run("inbound group MMS reply", func(t *testing.T) {
		ev := parse("message_received_group")
		if len(ev) != 1 {
			t.Fatalf("got %d events", len(ev))
		}
		e := ev[0]
		if e.From != "+15550100002" || e.To != "+15550100000" || e.Attempt != 3 || e.GroupMessageID != "" ||
			!slices.Equal(e.CC, []string{"+15550100000", "+15550100001", "+15550100003"}) ||
			!slices.Equal(e.Media, []string{"https://media.example.com/a.jpg", "https://media.example.com/b.jpg"}) {
			t.Errorf("got %+v", e)
		}
	})
	t.Run("unknown event type", func(t *testing.T) {
		if ev := parse("unknown_event"); ev != nil {
			t.Errorf("got %+v, want no events", ev)
		}
	})
}

func eventEqual(a, b crewcast.Event) bool {
	return a.Provider == b.Provider && a.EventID == b.EventID && a.Kind == b.Kind && a.MessageID == b.MessageID &&
		a.GroupMessageID == b.GroupMessageID && a.From == b.From && a.To == b.To && a.Status == b.Status &&
		a.ProviderStatus == b.ProviderStatus && a.ErrorCode == b.ErrorCode && a.ErrorClass == b.ErrorClass &&
		a.OptOut == b.OptOut && a.OccurredAt.Equal(b.OccurredAt) && a.Text == b.Text &&
		slices.Equal(a.Media, b.Media) && slices.Equal(a.CC, b.CC) && a.Attempt == b.Attempt
}

func TestParseWebhookLenientDecoding(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	cases := []struct {
		name string
		body string
		want func([]crewcast.Event) bool
	}{
		{"from as string, to as single object", `{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":{"phone_number":"+2","status":"sent"}}}}`,
			func(ev []crewcast.Event) bool { return len(ev) == 1 && ev[0].From == "+1" && ev[0].To == "+2" }},
		{"to as bare strings", `{"data":{"event_type":"message.received","id":"e","payload":{"id":"m","from":{"phone_number":"+1"},"to":["+2"],"text":null,"media":null,"cc":null}}}`,
			func(ev []crewcast.Event) bool {
				return len(ev) == 1 && ev[0].To == "+2" && ev[0].Text == "" && ev[0].CC == nil
			}},
		{"cost amount as number", `{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"sent"}],"cost":{"amount":0.5,"currency":"USD"}}}}`,
			func(ev []crewcast.Event) bool { return len(ev) == 1 }},
		{"cost amount as string", `{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"sent"}],"cost":{"amount":"0.5","currency":"USD"}}}}`,
			func(ev []crewcast.Event) bool { return len(ev) == 1 }},
		{"nulls everywhere optional", `{"data":{"event_type":"message.finalized","id":"e","occurred_at":null,"payload":{"id":"m","group_message_id":null,"from":null,"to":[{"phone_number":"+2","status":"delivered","carrier":null}],"cc":null,"errors":null,"media":null,"cost":null}},"meta":null}`,
			func(ev []crewcast.Event) bool {
				return len(ev) == 1 && ev[0].Status == crewcast.StatusDelivered && ev[0].OccurredAt.IsZero() && ev[0].Attempt == 0
			}},
		{"attempt as string, error code as number", `{"data":{"event_type":"message.finalized","id":"e","payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"delivery_failed"}],"errors":[{"code":40300}]}},"meta":{"attempt":"2"}}`,
			func(ev []crewcast.Event) bool {
				return len(ev) == 1 && ev[0].Attempt == 2 && ev[0].ErrorCode == "40300" && ev[0].OptOut && ev[0].ErrorClass == crewcast.ClassRecipient
			}},
		{"failed without errors is carrier", `{"data":{"event_type":"message.finalized","id":"e","payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"sending_failed"}]}}}`,
			func(ev []crewcast.Event) bool {
				return len(ev) == 1 && ev[0].ErrorClass == crewcast.ClassCarrier && ev[0].ErrorCode == ""
			}},
		{"unrecognized word on message.sent is sent", `{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"handed_over"}]}}}`,
			func(ev []crewcast.Event) bool {
				return len(ev) == 1 && ev[0].Status == crewcast.StatusSent && ev[0].ProviderStatus == "handed_over" && ev[0].ErrorClass == ""
			}},
		{"unrecognized word on message.finalized is unknown", `{"data":{"event_type":"message.finalized","id":"e","payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"vanished"}]}}}`,
			func(ev []crewcast.Event) bool {
				return len(ev) == 1 && ev[0].Status == crewcast.StatusUnknown && ev[0].ErrorClass == crewcast.ClassUncertain
			}},
		{"unknown fields and record types ignored", `{"extra":true,"data":{"record_type":"event","event_type":"message.sent","id":"e","new":{"a":[1]},"payload":{"id":"m","from":"+1","to":[{"phone_number":"+2","status":"sent","new":[]}],"new":null}}}`,
			func(ev []crewcast.Event) bool { return len(ev) == 1 }},
		{"unknown event type with odd payload", `{"data":{"event_type":"call.hangup","id":7,"payload":[1,2]}}`,
			func(ev []crewcast.Event) bool { return ev == nil }},
		{"occurred_at without fraction", `{"data":{"event_type":"message.sent","id":"e","occurred_at":"2026-03-01T07:00:00+00:00","payload":{"id":"m","from":"+1","to":"+2"}}}`,
			func(ev []crewcast.Event) bool { return len(ev) == 1 && ev[0].OccurredAt.Equal(testNow) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := parseSigned(t, c, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(ev) {
				t.Errorf("events = %+v", ev)
			}
		})
	}
}

func TestParseWebhookMalformed(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	for name, body := range map[string]string{
		"not JSON":                     `this is not json`,
		"empty body":                   ``,
		"truncated":                    `{"data":{"event_type":"message.sent"`,
		"empty object":                 `{}`,
		"data not an object":           `{"data":5}`,
		"no event type":                `{"data":{"id":"e","payload":{"id":"m"}}}`,
		"event type not a string":      `{"data":{"event_type":{"x":1},"id":"e"}}`,
		"no data.id":                   `{"data":{"event_type":"message.sent","payload":{"id":"m","from":"+1","to":"+2"}}}`,
		"no payload":                   `{"data":{"event_type":"message.finalized","id":"e"}}`,
		"payload without id":           `{"data":{"event_type":"message.finalized","id":"e","payload":{"to":"+2"}}}`,
		"payload not an object":        `{"data":{"event_type":"message.finalized","id":"e","payload":"x"}}`,
		"bad occurred_at":              `{"data":{"event_type":"message.sent","id":"e","occurred_at":"yesterday","payload":{"id":"m","from":"+1","to":"+2"}}}`,
		"finalized without recipients": `{"data":{"event_type":"message.finalized","id":"e","payload":{"id":"m","from":"+1","to":[]}}}`,
		"recipient without number":     `{"data":{"event_type":"message.finalized","id":"e","payload":{"id":"m","from":"+1","to":[{"status":"delivered"}]}}}`,
		"received without from":        `{"data":{"event_type":"message.received","id":"e","payload":{"id":"m","to":"+2","text":"hi"}}}`,
		"received without to":          `{"data":{"event_type":"message.received","id":"e","payload":{"id":"m","from":"+1","text":"hi"}}}`,
		"to of the wrong type":         `{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":7}}}`,
		"attempt not a number":         `{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":"+2"}},"meta":{"attempt":"first"}}`,
		"media of the wrong type":      `{"data":{"event_type":"message.received","id":"e","payload":{"id":"m","from":"+1","to":"+2","media":"x"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseSigned(t, c, []byte(body))
			if !errors.Is(err, crewcast.ErrMalformed) || errors.Is(err, crewcast.ErrBadSignature) {
				t.Errorf("err = %v, want only ErrMalformed", err)
			}
		})
	}
}

// BenchmarkParseEvents decodes a verified message.finalized body, the
// most common webhook.
func BenchmarkParseEvents(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "webhooks", "message_finalized_delivered.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if ev, err := parseEvents(body); err != nil || len(ev) == 0 {
			b.Fatal(ev, err)
		}
	}
}
