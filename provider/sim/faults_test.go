package sim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFaultDuplicate(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{DuplicateRate: 1}})
	c.telnyxSend(sendBody(alice, "x"))
	ids := map[string]int{}
	for _, h := range rc.collect(t, 4) {
		ev := telnyxEvent(t, s, h)
		ids[ev.Data.EventType+" "+ev.Data.ID]++
	}
	rc.drained(t, s)
	if len(ids) != 2 {
		t.Fatalf("events %v", ids)
	}
	for k, n := range ids {
		if n != 2 {
			t.Fatalf("%s posted %d times", k, n)
		}
	}
	if len(c.ledger()) != 1 {
		t.Fatal("a duplicate webhook must not duplicate the send")
	}
}

func TestFaultDrop(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{DropRate: 1}})
	m := telnyxData(t, c.telnyxSend(sendBody(alice, "x")))
	rc.drained(t, s)
	if len(c.ledger()) != 1 {
		t.Fatal("dropped webhooks must not drop the send")
	}
	// The provider's record still moved on, as a status lookup shows.
	if got := telnyxData(t, c.telnyxGet("/v2/messages/"+m.ID)); got.To[0].Status != "delivered" {
		t.Fatalf("GET status %q", got.To[0].Status)
	}
}

func TestFaultReorder(t *testing.T) {
	t.Parallel()
	orders := func(t *testing.T, reorder bool) map[string]int {
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{Reorder: reorder}})
		const n = 12
		for i := range n {
			c.telnyxSend(sendBody(alice, "x"+string(rune('a'+i))))
		}
		first := map[string]string{}
		out := map[string]int{}
		for _, h := range rc.collect(t, 2*n) {
			ev := telnyxEvent(t, s, h)
			id := ev.Data.Payload.ID
			if f, ok := first[id]; ok {
				out[f+" then "+ev.Data.EventType]++
			} else {
				first[id] = ev.Data.EventType
			}
		}
		rc.drained(t, s)
		return out
	}
	if got := orders(t, false); got["message.sent then message.finalized"] != 12 {
		t.Fatalf("without reorder: %v", got)
	}
	got := orders(t, true)
	if got["message.finalized then message.sent"] == 0 || got["message.sent then message.finalized"] == 0 ||
		got["message.finalized then message.sent"]+got["message.sent then message.finalized"] != 12 {
		t.Fatalf("with reorder: %v", got)
	}
}

func TestFaultReorderKeepsStatusForward(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	// Seed 1 reorders its first recipient (checked below).
	s, c := newSim(t, Config{Seed: new(int64(1)), TelnyxWebhookURL: rc.url("/t"), Faults: Faults{Reorder: true}})
	m := telnyxData(t, c.telnyxSend(sendBody(alice, "x")))
	a, b := telnyxEvent(t, s, rc.next(t)), telnyxEvent(t, s, rc.next(t))
	if a.Data.EventType != "message.finalized" || b.Data.EventType != "message.sent" {
		t.Fatalf("seed 1 no longer reorders its first message (%s, %s); pick another seed", a.Data.EventType, b.Data.EventType)
	}
	if b.Data.Payload.To[0].Status != "sent" || len(b.Data.Payload.Errors) != 0 || b.Data.Payload.CompletedAt != nil {
		t.Fatalf("late sent event must report its own status: %+v", b.Data.Payload)
	}
	rc.drained(t, s)
	if got := telnyxData(t, c.telnyxGet("/v2/messages/"+m.ID)); got.To[0].Status != "delivered" {
		t.Fatalf("a late sent moved the status back to %q", got.To[0].Status)
	}
}

func TestFaultRateLimit(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), TwilioWebhookURL: rc.url("/w"), Faults: Faults{RateLimitRate: 1}})
	r := c.telnyxSend(sendBody(alice, "x"))
	var e tErrors
	r.decode(t, &e)
	if r.status != http.StatusTooManyRequests || len(e.Errors) != 1 || e.Errors[0].Code != "10011" {
		t.Fatalf("telnyx: %d %s", r.status, r.body)
	}
	for _, h := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "Retry-After"} {
		if r.header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
	if r.header.Get("x-ratelimit-remaining") != "0" {
		t.Errorf("x-ratelimit-remaining %q", r.header.Get("x-ratelimit-remaining"))
	}
	g := c.telnyxGroup(map[string]any{"from": ourNumber, "to": []string{alice, bob}, "text": "x"})
	if g.status != http.StatusTooManyRequests {
		t.Fatalf("group: %d", g.status)
	}
	w := c.twilioSend(twilioBody(alice, "x"))
	var te tTwilioError
	w.decode(t, &te)
	if w.status != http.StatusTooManyRequests || te.Code != 20429 || te.Status != 429 {
		t.Fatalf("twilio: %d %s", w.status, w.body)
	}
	if got := c.ledger(); len(got) != 0 {
		t.Fatalf("rate-limited sends recorded: %v", got)
	}
	rc.drained(t, s)
}

func TestFault5xx(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), TwilioWebhookURL: rc.url("/w"), Faults: Faults{Error5xxRate: 1}})
	r := c.telnyxSend(sendBody(alice, "x"))
	var e tErrors
	r.decode(t, &e)
	if r.status != http.StatusInternalServerError || len(e.Errors) != 1 || e.Errors[0].Code != "10007" {
		t.Fatalf("telnyx: %d %s", r.status, r.body)
	}
	w := c.twilioSend(twilioBody(alice, "x"))
	var te tTwilioError
	w.decode(t, &te)
	if w.status != http.StatusInternalServerError || te.Code != 20500 {
		t.Fatalf("twilio: %d %s", w.status, w.body)
	}
	if got := c.ledger(); len(got) != 0 {
		t.Fatalf("5xx sends recorded: %v", got)
	}
	rc.drained(t, s)
}

func TestFaultAcceptTimeout(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	tw := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), TwilioWebhookURL: tw.url("/w"), Faults: Faults{AcceptTimeoutRate: 1}})

	_, err := c.do(c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(alice, "x")))
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "reset")) {
		t.Fatalf("telnyx send: want a dropped connection, got %v", err)
	}
	_, err = c.do(c.twilioReq(c.keys.TwilioAccountSID, c.keys.TwilioAccountSID, c.keys.TwilioAuthToken, twilioBody(bob, "y")))
	if err == nil {
		t.Fatal("twilio send: want a dropped connection")
	}

	// Yet both sends were recorded, and their webhooks flow.
	led := c.ledger()
	if len(led) != 2 || led[0].To != alice || led[1].To != bob {
		t.Fatalf("ledger: %+v", led)
	}
	for _, h := range rc.collect(t, 2) {
		if ev := telnyxEvent(t, s, h); ev.Data.Payload.ID != led[0].ID {
			t.Fatalf("webhook for %s, ledger says %s", ev.Data.Payload.ID, led[0].ID)
		}
	}
	for _, h := range tw.collect(t, 3) {
		if f := twilioForm(t, s, h); f.Get("MessageSid") != led[1].ID {
			t.Fatalf("callback for %s", f.Get("MessageSid"))
		}
	}
	rc.drained(t, s)
}

func TestFaultFailAndUnknownTelnyx(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults Faults
		group  bool
		status string
		code   string
	}{
		{"failed with a configured code", Faults{FailRate: 1, FailCodes: []string{"40008"}}, false, "delivery_failed", "40008"},
		{"failed with a default code", Faults{FailRate: 1}, false, "delivery_failed", "400"},
		{"unconfirmed", Faults{UnknownRate: 1}, false, "delivery_unconfirmed", ""},
		{"group unknown", Faults{UnknownRate: 1}, true, "unknown", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, nil)
			s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: tc.faults})
			if tc.group {
				c.telnyxGroup(map[string]any{"from": ourNumber, "to": []string{alice}, "text": "x"})
			} else {
				c.telnyxSend(sendBody(alice, "x"))
			}
			var final tEvent
			for _, h := range rc.collect(t, 2) {
				if ev := telnyxEvent(t, s, h); ev.Data.EventType == "message.finalized" {
					final = ev
				}
			}
			p := final.Data.Payload
			if len(p.To) != 1 || p.To[0].Status != tc.status {
				t.Fatalf("finalized: %+v", p)
			}
			if tc.code == "" && len(p.Errors) != 0 {
				t.Fatalf("errors on %s: %+v", tc.status, p.Errors)
			}
			if tc.code != "" && (len(p.Errors) != 1 || !strings.HasPrefix(p.Errors[0].Code, tc.code) || p.Errors[0].Title == "") {
				t.Fatalf("errors: %+v", p.Errors)
			}
			if tc.name == "failed with a default code" && !slices.Contains(DefaultFailCodes, p.Errors[0].Code) {
				t.Fatalf("code %s is not a default code", p.Errors[0].Code)
			}
			rc.drained(t, s)
		})
	}
}

func TestFaultReplies(t *testing.T) {
	t.Parallel()
	t.Run("telnyx group", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{ReplyRate: 1, ReplyTexts: []string{"running late"}}})
		c.telnyxGroup(map[string]any{"from": ourNumber, "to": []string{alice, bob}, "text": "x"})
		finalized := map[string]bool{}
		replies := 0
		for _, h := range rc.collect(t, 6) {
			ev := telnyxEvent(t, s, h)
			p := ev.Data.Payload
			switch ev.Data.EventType {
			case "message.finalized":
				finalized[p.To[0].PhoneNumber] = true
			case "message.received":
				replies++
				if !finalized[p.From.PhoneNumber] {
					t.Fatalf("reply from %s before its delivery", p.From.PhoneNumber)
				}
				other := alice
				if p.From.PhoneNumber == alice {
					other = bob
				}
				if p.Direction != "inbound" || p.Text != "running late" || len(p.To) != 1 || p.To[0].PhoneNumber != ourNumber ||
					len(p.CC) != 1 || p.CC[0].PhoneNumber != other {
					t.Fatalf("reply: %s", h.body)
				}
			}
		}
		if replies != 2 {
			t.Fatalf("replies %d", replies)
		}
		rc.drained(t, s)
	})
	t.Run("twilio", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TwilioWebhookURL: rc.url("/w"), Faults: Faults{ReplyRate: 1, ReplyTexts: []string{"YES"}}})
		c.twilioSend(twilioBody(alice, "x"))
		hs := rc.collect(t, 4)
		f := twilioForm(t, s, hs[3])
		if f.Get("Body") != "YES" || f.Get("From") != alice || f.Get("To") != ourNumber || f.Get("MessageStatus") != "" ||
			!sidPattern.MatchString(f.Get("MessageSid")) || f.Get("NumMedia") != "0" {
			t.Fatalf("inbound: %s", hs[3].body)
		}
		rc.drained(t, s)
	})
	t.Run("replies follow the message's own webhook_url when no profile URL is set", func(t *testing.T) {
		t.Parallel()
		own := newReceiver(t, nil)
		s, c := newSim(t, Config{Faults: Faults{ReplyRate: 1, ReplyTexts: []string{"NO"}}})
		body := sendBody(alice, "x")
		body["webhook_url"] = own.url("/own")
		c.telnyxSend(body)
		hs := own.collect(t, 3)
		if ev := telnyxEvent(t, s, hs[2]); ev.Data.EventType != "message.received" || ev.Data.Payload.Text != "NO" {
			t.Fatalf("third webhook: %s", hs[2].body)
		}
		// A manual inbound on the same thread goes there too.
		if _, err := s.Inbound(t.Context(), alice, ourNumber, "running late"); err != nil {
			t.Fatal(err)
		}
		if ev := telnyxEvent(t, s, own.next(t)); ev.Data.Payload.Text != "running late" {
			t.Fatalf("inbound: %+v", ev.Data.Payload)
		}
		own.drained(t, s)
	})
	t.Run("no reply without delivery", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{ReplyRate: 1, FailRate: 1}})
		c.telnyxSend(sendBody(alice, "x"))
		rc.collect(t, 2)
		rc.drained(t, s)
	})
}

func TestQueueFullRefusesSends(t *testing.T) {
	t.Parallel()
	// One chain fits; it waits a long time, and Stop abandons it.
	s, c := newSim(t, Config{MaxPending: 1, Faults: Faults{DelayMS: [2]int{60000, 60000}}})
	if r := c.telnyxSend(sendBody(alice, "x")); r.status != http.StatusOK {
		t.Fatalf("first: %d", r.status)
	}
	if r := c.telnyxSend(sendBody(bob, "x")); r.status != http.StatusTooManyRequests {
		t.Fatalf("second: %d %s", r.status, r.body)
	}
	if r := c.twilioSend(twilioBody(bob, "x")); r.status != http.StatusTooManyRequests {
		t.Fatalf("twilio: %d %s", r.status, r.body)
	}
	if got := c.ledger(); len(got) != 1 || s.Pending() != 1 {
		t.Fatalf("ledger %v pending %d", got, s.Pending())
	}
	if r := c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": alice, "to": ourNumber, "text": "x"}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("inbound: %d", r.status)
	}
}

func TestDelaysAreApplied(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{DelayMS: [2]int{40, 40}}})
	start := time.Now()
	c.telnyxSend(sendBody(alice, "x"))
	rc.collect(t, 2)
	// Two events, each 40 ms after the previous step.
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Fatalf("both webhooks within %v", d)
	}
	rc.drained(t, s)
}

func TestFaultAcceptTimeoutHold(t *testing.T) {
	t.Parallel()
	t.Run("the client times out, even with an Idempotency-Key on a reused connection", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), AcceptTimeoutHold: time.Minute})
		if r := c.telnyxSend(sendBody(bob, "warm the connection")); r.status != http.StatusOK {
			t.Fatalf("first send: %d", r.status)
		}
		rc.collect(t, 2)
		if err := s.SetFaults(Faults{AcceptTimeoutRate: 1}); err != nil {
			t.Fatal(err)
		}
		req := c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(alice, "x"))
		req.Header.Set("Idempotency-Key", "claim-1")
		impatient := &http.Client{Transport: c.http.Transport, Timeout: 150 * time.Millisecond}
		res, err := impatient.Do(req)
		if err == nil {
			res.Body.Close()
			t.Fatalf("got an answer: %d", res.StatusCode)
		}
		var ne interface{ Timeout() bool }
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("want a client timeout, got %v", err)
		}
		if led := c.ledger(); len(led) != 2 || led[1].To != alice {
			t.Fatalf("ledger %+v", led)
		}
		if ev := telnyxEvent(t, s, rc.next(t)); ev.Data.Payload.To[0].PhoneNumber != alice {
			t.Fatalf("webhook for %s", ev.Data.Payload.To[0].PhoneNumber)
		}
	})
	t.Run("Stop ends a held request", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, err := New(Config{Seed: new(int64(1)), TelnyxWebhookURL: rc.url("/t"), AcceptTimeoutHold: time.Hour, Faults: Faults{AcceptTimeoutRate: 1}})
		if err != nil {
			t.Fatal(err)
		}
		base, err := s.Start(t.Context(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl := &http.Client{Transport: &http.Transport{}}
		defer cl.CloseIdleConnections()
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, base+"/v2/messages", strings.NewReader(`{"from":"+15550100000","to":"+15550100001","text":"x"}`))
			req.Header.Set("Authorization", "Bearer "+s.Keys().TelnyxAPIKey)
			res, err := cl.Do(req)
			if err == nil {
				res.Body.Close()
			}
			errc <- err
		}()
		rc.next(t) // the send was recorded; its request is held
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Fatalf("Stop with a held request: %v", err)
		}
		if err := <-errc; err == nil {
			t.Fatal("the held request got an answer")
		}
	})
}

func TestScriptFixesFates(t *testing.T) {
	t.Parallel()
	carol, dave := "+15550100033", "+15550100044"
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{FailRate: 1, Script: map[string]string{
		alice: "deliver", bob: "fail:40008", carol: "unknown", dave: "reply:on my way",
	}}})
	for _, n := range []string{alice, bob, carol, dave} {
		c.telnyxSend(sendBody(n, "x"))
	}
	finals := map[string]string{}
	codes := map[string]string{}
	replies := map[string]string{}
	for _, h := range rc.collect(t, 9) { // 4 sent + 4 finalized + 1 reply
		ev := telnyxEvent(t, s, h)
		p := ev.Data.Payload
		switch ev.Data.EventType {
		case "message.finalized":
			finals[p.To[0].PhoneNumber] = p.To[0].Status
			if len(p.Errors) > 0 {
				codes[p.To[0].PhoneNumber] = p.Errors[0].Code
			}
		case "message.received":
			replies[p.From.PhoneNumber] = p.Text
		}
	}
	want := map[string]string{alice: "delivered", bob: "delivery_failed", carol: "delivery_unconfirmed", dave: "delivered"}
	for n, st := range want {
		if finals[n] != st {
			t.Fatalf("%s finalized %q, want %q (all: %v)", n, finals[n], st, finals)
		}
	}
	if codes[bob] != "40008" || replies[dave] != "on my way" || len(replies) != 1 {
		t.Fatalf("codes %v replies %v", codes, replies)
	}
	rc.drained(t, s)

	if err := (Faults{Script: map[string]string{alice: "explode"}}).Validate(); err == nil {
		t.Fatal("unknown fate accepted")
	}
	if err := (Faults{Script: map[string]string{alice: "reply:"}}).Validate(); err == nil {
		t.Fatal("reply without text accepted")
	}
}

func TestScriptAcceptTimeout(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{Script: map[string]string{alice: "accept_timeout"}}})
	if _, err := c.do(c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(alice, "x"))); err == nil {
		t.Fatal("scripted accept_timeout answered")
	}
	c.telnyxSend(sendBody(bob, "y")) // unscripted: answered normally
	if led := c.ledger(); len(led) != 2 {
		t.Fatalf("ledger %+v", led)
	}
	rc.collect(t, 4)
	rc.drained(t, s)
}

func TestScriptSilentAcceptTimeout(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), Faults: Faults{ReplyRate: 1, Script: map[string]string{alice: "accept_timeout:silent"}}})
	if _, err := c.do(c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(alice, "x"))); err == nil {
		t.Fatal("scripted accept_timeout answered")
	}
	if led := c.ledger(); len(led) != 1 {
		t.Fatalf("ledger %+v", led)
	}
	rc.drained(t, s) // nothing was ever posted
	if err := (Faults{Script: map[string]string{alice: "accept_timeout:loud"}}).Validate(); err == nil {
		t.Fatal("unknown accept_timeout argument accepted")
	}
}
