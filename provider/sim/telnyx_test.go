package sim

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTelnyxAuth(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"send", http.MethodPost, "/v2/messages", sendBody(alice, "hi")},
		{"group", http.MethodPost, "/v2/messages/group_mms", map[string]any{"from": ourNumber, "to": []string{alice}, "text": "hi"}},
		{"get", http.MethodGet, "/v2/messages/x", nil},
		{"get group", http.MethodGet, "/v2/messages/group/x", nil},
	} {
		for _, key := range []string{"", "KEYwrong", c.keys.TelnyxAPIKey + "x"} {
			r := c.mustDo(c.telnyxReq(tc.method, tc.path, key, tc.body))
			var e tErrors
			r.decode(t, &e)
			if r.status != http.StatusUnauthorized || len(e.Errors) != 1 || e.Errors[0].Code != "10009" {
				t.Errorf("%s with key %q: %d %s, want 401 code 10009", tc.name, key, r.status, r.body)
			}
		}
	}
	if got := c.ledger(); len(got) != 0 {
		t.Fatalf("unauthorised sends recorded: %v", got)
	}
	if r := c.telnyxSend(sendBody(alice, "hi")); r.status != http.StatusOK {
		t.Fatalf("right key: %d %s", r.status, r.body)
	}
}

func TestTelnyxSendRecordsAndSignsWebhooks(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/webhooks/telnyx?x=1")})

	r := c.telnyxSend(sendBody(alice, "Crew call 7am"))
	if r.status != http.StatusOK {
		t.Fatalf("send: %d %s", r.status, r.body)
	}
	m := telnyxData(t, r)
	if m.ID == "" || m.Direction != "outbound" || m.From.PhoneNumber != ourNumber || len(m.To) != 1 ||
		m.To[0].PhoneNumber != alice || m.To[0].Status != "queued" || m.Text != "Crew call 7am" {
		t.Fatalf("send answer: %s", r.body)
	}
	led := c.ledger()
	if len(led) != 1 || led[0].ID != m.ID || led[0].From != ourNumber || led[0].To != alice ||
		led[0].Text != "Crew call 7am" || !led[0].ReceivedAt.Equal(fixedNow) {
		t.Fatalf("ledger: %+v", led)
	}

	sent := telnyxEvent(t, s, rc.next(t))
	final := telnyxEvent(t, s, rc.next(t))
	if sent.Data.EventType != "message.sent" || final.Data.EventType != "message.finalized" {
		t.Fatalf("order: %s then %s", sent.Data.EventType, final.Data.EventType)
	}
	for _, ev := range []tEvent{sent, final} {
		p := ev.Data.Payload
		if p.ID != m.ID || p.RecordType != "message" || p.Direction != "outbound" || len(p.To) != 1 || p.To[0].PhoneNumber != alice {
			t.Fatalf("payload: %+v", p)
		}
		if ev.Meta.Attempt != 1 || ev.Meta.DeliveredTo != rc.url("/webhooks/telnyx?x=1") {
			t.Fatalf("meta: %+v", ev.Meta)
		}
	}
	if sent.Data.ID == final.Data.ID {
		t.Fatal("two events share an event id")
	}
	if sent.Data.Payload.To[0].Status != "sent" || final.Data.Payload.To[0].Status != "delivered" ||
		final.Data.Payload.CompletedAt == nil || len(final.Data.Payload.Errors) != 0 {
		t.Fatalf("statuses: %+v / %+v", sent.Data.Payload, final.Data.Payload)
	}
	rc.drained(t, s)

	got := telnyxData(t, c.telnyxGet("/v2/messages/"+m.ID))
	if got.ID != m.ID || got.To[0].Status != "delivered" || got.SentAt == nil {
		t.Fatalf("GET after delivery: %+v", got)
	}
	if r := c.telnyxGet("/v2/messages/nope"); r.status != http.StatusNotFound {
		t.Fatalf("GET unknown: %d", r.status)
	}
	if r := c.telnyxGet("/v2/messages/group/" + m.ID); r.status != http.StatusNotFound {
		t.Fatalf("GET group of a single message: %d", r.status)
	}
}

func TestTelnyxValidation(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	nine := []string{}
	for i := range 9 {
		nine = append(nine, "+1555010010"+string(rune('0'+i)))
	}
	for _, tc := range []struct {
		name   string
		path   string
		body   any
		status int
		code   string
	}{
		{"no from", "/v2/messages", map[string]any{"to": alice, "text": "x"}, 422, "10004"},
		{"bad from", "/v2/messages", map[string]any{"from": "5550100", "to": alice, "text": "x"}, 422, "10016"},
		{"no to", "/v2/messages", map[string]any{"from": ourNumber, "text": "x"}, 422, "10004"},
		{"list to", "/v2/messages", map[string]any{"from": ourNumber, "to": []string{alice}, "text": "x"}, 422, "10015"},
		{"bad to", "/v2/messages", map[string]any{"from": ourNumber, "to": "0123", "text": "x"}, 422, "10016"},
		{"no text", "/v2/messages", map[string]any{"from": ourNumber, "to": alice}, 422, "10004"},
		{"bad webhook", "/v2/messages", map[string]any{"from": ourNumber, "to": alice, "text": "x", "webhook_url": "ftp://x"}, 422, "10015"},
		{"not json", "/v2/messages", "nope", 400, "10015"},
		{"group of nine", "/v2/messages/group_mms", map[string]any{"from": ourNumber, "to": nine, "text": "x"}, 422, "10015"},
		{"group empty", "/v2/messages/group_mms", map[string]any{"from": ourNumber, "to": []string{}, "text": "x"}, 422, "10004"},
		{"group repeat", "/v2/messages/group_mms", map[string]any{"from": ourNumber, "to": []string{alice, alice}, "text": "x"}, 422, "10015"},
		{"group has sender", "/v2/messages/group_mms", map[string]any{"from": ourNumber, "to": []string{alice, ourNumber}, "text": "x"}, 422, "10015"},
	} {
		r := c.mustDo(c.telnyxReq(http.MethodPost, tc.path, c.keys.TelnyxAPIKey, tc.body))
		var e tErrors
		r.decode(t, &e)
		if r.status != tc.status || len(e.Errors) != 1 || e.Errors[0].Code != tc.code || e.Errors[0].Title == "" {
			t.Errorf("%s: %d %s, want %d code %s", tc.name, r.status, r.body, tc.status, tc.code)
		}
	}
	if got := c.ledger(); len(got) != 0 {
		t.Fatalf("invalid sends recorded: %v", got)
	}
	eight := nine[:8]
	if r := c.telnyxGroup(map[string]any{"from": ourNumber, "to": eight, "text": "x"}); r.status != http.StatusOK {
		t.Fatalf("group of eight: %d %s", r.status, r.body)
	}
}

func TestTelnyxGroupMMS(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/hooks")})
	members := []string{alice, bob, carol}
	r := c.telnyxGroup(map[string]any{"from": ourNumber, "to": members, "text": "Gate B, 6am", "media_urls": []string{"https://example.com/map.png"}})
	if r.status != http.StatusOK {
		t.Fatalf("group send: %d %s", r.status, r.body)
	}
	m := telnyxData(t, r)
	if m.GroupMessageID != m.ID || m.Type != "MMS" || len(m.To) != 3 {
		t.Fatalf("group answer: %s", r.body)
	}
	for i, to := range m.To {
		if to.PhoneNumber != members[i] || to.Status != "queued" {
			t.Fatalf("to[%d] = %+v", i, to)
		}
	}
	led := c.ledger()
	if len(led) != 3 {
		t.Fatalf("ledger rows: %+v", led)
	}
	for i, l := range led {
		if l.ID != m.ID || l.To != members[i] || l.From != ourNumber || l.Text != "Gate B, 6am" {
			t.Fatalf("ledger[%d] = %+v", i, l)
		}
	}

	// One sent and one finalized per recipient, that recipient in to and
	// the other members in cc, sent first for each.
	seen := map[string][]string{}
	for _, h := range rc.collect(t, 6) {
		ev := telnyxEvent(t, s, h)
		p := ev.Data.Payload
		if p.ID != m.ID || p.GroupMessageID != m.ID || len(p.To) != 1 {
			t.Fatalf("per-recipient payload: %s", h.body)
		}
		who := p.To[0].PhoneNumber
		var cc []string
		for _, a := range p.CC {
			cc = append(cc, a.PhoneNumber)
		}
		var want []string
		for _, n := range members {
			if n != who {
				want = append(want, n)
			}
		}
		if !slices.Equal(cc, want) {
			t.Fatalf("cc for %s = %v, want %v", who, cc, want)
		}
		seen[who] = append(seen[who], ev.Data.EventType+"/"+p.To[0].Status)
	}
	for _, n := range members {
		if !slices.Equal(seen[n], []string{"message.sent/sent", "message.finalized/delivered"}) {
			t.Fatalf("events for %s: %v", n, seen[n])
		}
	}
	rc.drained(t, s)

	var group struct {
		Data []tMessage `json:"data"`
	}
	g := c.telnyxGet("/v2/messages/group/" + m.ID)
	g.decode(t, &group)
	if g.status != http.StatusOK || len(group.Data) != 3 {
		t.Fatalf("GET group: %d %s", g.status, g.body)
	}
	for i, d := range group.Data {
		if d.ID != m.ID || d.GroupMessageID != m.ID || len(d.To) != 1 || d.To[0].PhoneNumber != members[i] || d.To[0].Status != "delivered" {
			t.Fatalf("group[%d] = %+v", i, d)
		}
	}
	whole := telnyxData(t, c.telnyxGet("/v2/messages/"+m.ID))
	if len(whole.To) != 3 {
		t.Fatalf("GET whole group: %+v", whole)
	}
}

func TestTelnyxRetriesThenFailover(t *testing.T) {
	t.Parallel()
	t.Run("primary recovers on the third attempt", func(t *testing.T) {
		t.Parallel()
		primary := newReceiver(t, func(n int, _ *http.Request, _ hook) int {
			if n <= 2 {
				return http.StatusInternalServerError
			}
			return http.StatusOK
		})
		failover := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: primary.url("/p"), TelnyxFailoverURL: failover.url("/f")})
		c.telnyxSend(sendBody(alice, "x"))
		var attempts []int
		var id string
		for _, h := range primary.collect(t, 4) {
			ev := telnyxEvent(t, s, h)
			if ev.Data.EventType == "message.sent" {
				attempts = append(attempts, ev.Meta.Attempt)
				if id != "" && ev.Data.ID != id {
					t.Fatalf("event id changed across retries: %s vs %s", id, ev.Data.ID)
				}
				id = ev.Data.ID
			}
		}
		if !slices.Equal(attempts, []int{1, 2, 3}) {
			t.Fatalf("message.sent attempts %v, want 1,2,3", attempts)
		}
		failover.drained(t, s)
		primary.drained(t, s)
	})
	t.Run("primary fails every attempt", func(t *testing.T) {
		t.Parallel()
		primary := newReceiver(t, func(int, *http.Request, hook) int { return http.StatusServiceUnavailable })
		failover := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: primary.url("/p"), TelnyxFailoverURL: failover.url("/f")})
		c.telnyxSend(sendBody(alice, "x"))
		for _, want := range []string{"message.sent", "message.finalized"} {
			for n := 1; n <= 3; n++ {
				ev := telnyxEvent(t, s, primary.next(t))
				if ev.Data.EventType != want || ev.Meta.Attempt != n || ev.Meta.DeliveredTo != primary.url("/p") {
					t.Fatalf("primary attempt: %s #%d to %s, want %s #%d", ev.Data.EventType, ev.Meta.Attempt, ev.Meta.DeliveredTo, want, n)
				}
			}
			ev := telnyxEvent(t, s, failover.next(t))
			if ev.Data.EventType != want || ev.Meta.Attempt != 1 || ev.Meta.DeliveredTo != failover.url("/f") {
				t.Fatalf("failover: %s #%d to %s", ev.Data.EventType, ev.Meta.Attempt, ev.Meta.DeliveredTo)
			}
		}
		primary.drained(t, s)
		failover.drained(t, s)
	})
	t.Run("slow answers count as failures", func(t *testing.T) {
		t.Parallel()
		primary := newReceiver(t, func(_ int, r *http.Request, _ hook) int {
			<-r.Context().Done() // never answer in time
			return http.StatusOK
		})
		failover := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: primary.url("/p"), TelnyxFailoverURL: failover.url("/f"), WebhookTimeout: 50 * time.Millisecond})
		c.telnyxSend(sendBody(alice, "x"))
		ev := telnyxEvent(t, s, failover.next(t))
		if ev.Data.EventType != "message.sent" || ev.Meta.Attempt != 1 {
			t.Fatalf("failover got %s #%d", ev.Data.EventType, ev.Meta.Attempt)
		}
		if got := len(primary.collect(t, 3)); got != 3 {
			t.Fatalf("primary attempts %d", got)
		}
	})
	t.Run("per-message URL overrides the profile URL", func(t *testing.T) {
		t.Parallel()
		profile := newReceiver(t, nil)
		own := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: profile.url("/p")})
		body := sendBody(alice, "x")
		body["webhook_url"] = own.url("/own")
		c.telnyxSend(body)
		for _, h := range own.collect(t, 2) {
			if ev := telnyxEvent(t, s, h); ev.Meta.DeliveredTo != own.url("/own") {
				t.Fatalf("delivered_to %s", ev.Meta.DeliveredTo)
			}
		}
		profile.drained(t, s)
	})
}

func TestTelnyxErrorCodesAreStrings(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	r := c.mustDo(c.telnyxReq(http.MethodPost, "/v2/messages", "", sendBody(alice, "x")))
	if !strings.Contains(string(r.body), `"code":"10009"`) {
		t.Fatalf("code is not a JSON string: %s", r.body)
	}
}
