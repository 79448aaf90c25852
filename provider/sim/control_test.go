package sim

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestInbound(t *testing.T) {
	t.Parallel()
	t.Run("telnyx by default", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t")})
		r := c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": alice, "to": ourNumber, "text": "on my way"})
		var out struct{ ID string }
		r.decode(t, &out)
		if r.status != http.StatusAccepted || out.ID == "" {
			t.Fatalf("inbound: %d %s", r.status, r.body)
		}
		h := rc.next(t)
		ev := telnyxEvent(t, s, h)
		p := ev.Data.Payload
		if ev.Data.EventType != "message.received" || p.ID != out.ID || p.Direction != "inbound" || p.From.PhoneNumber != alice ||
			len(p.To) != 1 || p.To[0].PhoneNumber != ourNumber || p.To[0].Status != "webhook_delivered" || p.Text != "on my way" || len(p.CC) != 0 {
			t.Fatalf("received: %s", h.body)
		}
		if len(c.ledger()) != 0 {
			t.Fatal("an inbound message is not a send")
		}
		rc.drained(t, s)
	})
	t.Run("group thread lists participants in cc", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t")})
		c.telnyxGroup(map[string]any{"from": ourNumber, "to": []string{alice, bob, carol}, "text": "x"})
		rc.collect(t, 6)
		c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": bob, "to": ourNumber, "text": "YES"})
		p := telnyxEvent(t, s, rc.next(t)).Data.Payload
		var cc []string
		for _, a := range p.CC {
			cc = append(cc, a.PhoneNumber)
		}
		if p.From.PhoneNumber != bob || !slices.Equal(cc, []string{alice, carol}) {
			t.Fatalf("from %s cc %v", p.From.PhoneNumber, cc)
		}
		rc.drained(t, s)
	})
	t.Run("twilio explicitly and by the number's last use", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		tw := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), TwilioWebhookURL: tw.url("/w?k=v")})
		c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": alice, "to": ourNumber, "text": "a", "provider": "twilio"})
		f := twilioForm(t, s, tw.next(t))
		if f.Get("Body") != "a" || f.Get("From") != alice || f.Get("To") != ourNumber || f.Get("AccountSid") != c.keys.TwilioAccountSID {
			t.Fatalf("twilio inbound: %v", f)
		}
		const twNumber = "+15550109999"
		c.twilioSend(url.Values{"From": {twNumber}, "To": {bob}, "Body": {"x"}})
		tw.collect(t, 3)
		c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": bob, "to": twNumber, "text": "b"})
		if f := twilioForm(t, s, tw.next(t)); f.Get("Body") != "b" || f.Get("To") != twNumber {
			t.Fatalf("inferred twilio inbound: %v", f)
		}
		rc.drained(t, s)
		tw.drained(t, s)
	})
	t.Run("bad requests", func(t *testing.T) {
		t.Parallel()
		_, c := newSim(t, Config{})
		for _, body := range []any{
			map[string]string{"from": "alice", "to": ourNumber, "text": "x"},
			map[string]string{"from": alice, "to": ourNumber, "text": "x", "provider": "sms.ru"},
			map[string]any{"from": alice, "to": ourNumber, "text": "x", "colour": "red"},
		} {
			if r := c.simJSON(http.MethodPost, "/sim/inbound", body); r.status != http.StatusBadRequest {
				t.Errorf("%v: %d %s", body, r.status, r.body)
			}
		}
	})
}

func TestStopOptsOut(t *testing.T) {
	t.Parallel()
	t.Run("telnyx", func(t *testing.T) {
		t.Parallel()
		rc := newReceiver(t, nil)
		s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t")})
		c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": alice, "to": ourNumber, "text": " stop "})
		if ev := telnyxEvent(t, s, rc.next(t)); ev.Data.Payload.Text != " stop " {
			t.Fatalf("the STOP itself is delivered as a message: %+v", ev.Data.Payload)
		}
		r := c.telnyxSend(sendBody(alice, "x"))
		var e tErrors
		r.decode(t, &e)
		if r.status/100 != 4 || len(e.Errors) != 1 || e.Errors[0].Code != "40300" {
			t.Fatalf("send after STOP: %d %s", r.status, r.body)
		}
		// Telnyx block rules cover the whole profile: every sender number.
		other := sendBody(alice, "x")
		other["from"] = "+15550108888"
		if r := c.telnyxSend(other); r.status/100 != 4 || !strings.Contains(string(r.body), `"40300"`) {
			t.Fatalf("other sender after STOP: %d %s", r.status, r.body)
		}
		if r := c.telnyxGroup(map[string]any{"from": ourNumber, "to": []string{bob, alice}, "text": "x"}); !strings.Contains(string(r.body), `"40300"`) {
			t.Fatalf("group with an opted-out member: %d %s", r.status, r.body)
		}
		if r := c.telnyxSend(sendBody(bob, "x")); r.status != http.StatusOK {
			t.Fatalf("another recipient: %d", r.status)
		}
		if got := c.ledger(); len(got) != 1 || got[0].To != bob {
			t.Fatalf("ledger %+v", got)
		}
		c.simJSON(http.MethodPost, "/sim/inbound", map[string]string{"from": alice, "to": ourNumber, "text": "START"})
		if r := c.telnyxSend(sendBody(alice, "x")); r.status != http.StatusOK {
			t.Fatalf("after START: %d %s", r.status, r.body)
		}
	})
	t.Run("twilio", func(t *testing.T) {
		t.Parallel()
		s, c := newSim(t, Config{})
		if _, err := s.Inject(context.Background(), InboundMessage{From: alice, To: ourNumber, Text: "STOP", Provider: "twilio"}); err != nil {
			t.Fatal(err)
		}
		r := c.twilioSend(twilioBody(alice, "x"))
		var e tTwilioError
		r.decode(t, &e)
		if r.status != http.StatusBadRequest || e.Code != 21610 {
			t.Fatalf("send after STOP: %d %s", r.status, r.body)
		}
		// A Twilio opt-out covers the number it was sent to.
		if r := c.twilioSend(url.Values{"From": {"+15550108888"}, "To": {alice}, "Body": {"x"}}); r.status != http.StatusCreated {
			t.Fatalf("other sender: %d %s", r.status, r.body)
		}
		// And it does not block the Telnyx side.
		if r := c.telnyxSend(sendBody(alice, "x")); r.status != http.StatusOK {
			t.Fatalf("telnyx: %d %s", r.status, r.body)
		}
	})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	send := func(key string, body map[string]any) resp {
		req := c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, body)
		req.Header.Set("Idempotency-Key", key)
		return c.mustDo(req)
	}
	a := send("g1:+15550100001:1", sendBody(alice, "x"))
	b := send("g1:+15550100001:1", sendBody(alice, "x"))
	if a.status != http.StatusOK || b.status != http.StatusOK || telnyxData(t, a).ID != telnyxData(t, b).ID {
		t.Fatalf("replay: %s / %s", a.body, b.body)
	}
	if r := send("g1:+15550100001:1", sendBody(alice, "changed")); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("same key, other body: %d", r.status)
	}
	if r := send("g1:+15550100001:2", sendBody(alice, "x")); telnyxData(t, r).ID == telnyxData(t, a).ID {
		t.Fatal("another key returned the same message")
	}

	twSend := func(key string) (int, string) {
		req := c.twilioReq(c.keys.TwilioAccountSID, c.keys.TwilioAccountSID, c.keys.TwilioAuthToken, twilioBody(bob, "y"))
		req.Header.Set("Idempotency-Key", key)
		r := c.mustDo(req)
		var m struct{ SID string }
		r.decode(t, &m)
		return r.status, m.SID
	}
	s1, id1 := twSend("k")
	s2, id2 := twSend("k")
	if s1 != http.StatusCreated || s2 != http.StatusCreated || id1 != id2 || id1 == "" {
		t.Fatalf("twilio replay: %d %s / %d %s", s1, id1, s2, id2)
	}
	if got := c.ledger(); len(got) != 3 {
		t.Fatalf("ledger %+v", got)
	}
}

func TestIdempotencyReplaysAnAmbiguousSend(t *testing.T) {
	t.Parallel()
	s, c := newSim(t, Config{Faults: Faults{AcceptTimeoutRate: 1}})
	req := func() *http.Request {
		r := c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(alice, "x"))
		r.Header.Set("Idempotency-Key", "claim-1")
		return r
	}
	if _, err := c.do(req()); err == nil {
		t.Fatal("want a dropped connection")
	}
	if err := s.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	r := c.mustDo(req())
	if r.status != http.StatusOK || telnyxData(t, r).ID != c.ledger()[0].ID || len(c.ledger()) != 1 {
		t.Fatalf("replay after timeout: %d %s, ledger %+v", r.status, r.body, c.ledger())
	}
}

func TestDuplicatesEndpoint(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	c.telnyxSend(sendBody(alice, "x"))
	c.telnyxSend(sendBody(bob, "x"))
	c.telnyxSend(sendBody(alice, "x"))
	c.twilioSend(twilioBody(alice, "x")) // same from/to/text on the other provider counts too
	c.telnyxSend(sendBody(alice, "y"))
	var out struct {
		Duplicates []Duplicate `json:"duplicates"`
	}
	r := c.simJSON(http.MethodGet, "/sim/ledger/duplicates", nil)
	r.decode(t, &out)
	want := []Duplicate{{From: ourNumber, To: alice, Text: "x", Count: 3}}
	if !reflect.DeepEqual(out.Duplicates, want) {
		t.Fatalf("duplicates %s", r.body)
	}
	c.simJSON(http.MethodPost, "/sim/reset", nil)
	r = c.simJSON(http.MethodGet, "/sim/ledger/duplicates", nil)
	if strings.TrimSpace(string(r.body)) != `{"duplicates":[]}` {
		t.Fatalf("after reset: %s", r.body)
	}
	if r := c.simJSON(http.MethodGet, "/sim/ledger", nil); strings.TrimSpace(string(r.body)) != `{"sends":[]}` {
		t.Fatalf("ledger after reset: %s", r.body)
	}
}

func TestFaultsEndpoint(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{Faults: DefaultFaults()})
	var f Faults
	c.simJSON(http.MethodGet, "/sim/faults", nil).decode(t, &f)
	if f.DelayMS != [2]int{50, 200} || f.FailRate != 0 || !slices.Equal(f.FailCodes, DefaultFailCodes) || !slices.Equal(f.ReplyTexts, DefaultReplyTexts) {
		t.Fatalf("defaults: %+v", f)
	}
	var raw map[string]any
	c.simJSON(http.MethodGet, "/sim/faults", nil).decode(t, &raw)
	for _, k := range []string{"fail_rate", "unknown_rate", "duplicate_rate", "reorder", "delay_ms", "rate_limit_rate",
		"error_5xx_rate", "accept_timeout_rate", "drop_rate", "reply_rate", "reply_texts", "fail_codes"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("GET /sim/faults lacks %s", k)
		}
	}

	r := c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"fail_rate": 0.25, "delay_ms": []int{0, 0}, "reply_texts": []string{"OK"}, "reorder": true})
	if r.status != http.StatusOK {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	c.simJSON(http.MethodGet, "/sim/faults", nil).decode(t, &f)
	if f.FailRate != 0.25 || f.DelayMS != [2]int{0, 0} || !f.Reorder || !slices.Equal(f.ReplyTexts, []string{"OK"}) ||
		!slices.Equal(f.FailCodes, DefaultFailCodes) {
		t.Fatalf("after POST: %+v", f)
	}
	for _, bad := range []map[string]any{{"fail_rate": 1.5}, {"delay_ms": []int{5, 1}}, {"drop_rate": -0.1}, {"fail_rate": 0.8, "unknown_rate": 0.5}} {
		if r := c.simJSON(http.MethodPost, "/sim/faults", bad); r.status != http.StatusUnprocessableEntity {
			t.Errorf("%v: %d", bad, r.status)
		}
	}
	if r := c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"fail_rte": 1}); r.status != http.StatusBadRequest {
		t.Errorf("misspelt knob: %d", r.status)
	}
	c.simJSON(http.MethodGet, "/sim/faults", nil).decode(t, &f)
	if f.FailRate != 0.25 {
		t.Fatalf("a refused POST changed the knobs: %+v", f)
	}
	// A knob set through the endpoint acts on the next send.
	c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"rate_limit_rate": 1})
	if r := c.telnyxSend(sendBody(alice, "x")); r.status != http.StatusTooManyRequests {
		t.Fatalf("after rate_limit_rate=1: %d", r.status)
	}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	s, c := newSim(t, Config{Seed: new(int64(42))})
	var k Keys
	c.simJSON(http.MethodGet, "/sim/keys", nil).decode(t, &k)
	if k != SeedKeys(42) || k != s.Keys() {
		t.Fatalf("keys %+v, SeedKeys %+v", k, SeedKeys(42))
	}
	pub, err := base64.StdEncoding.DecodeString(k.TelnyxPublicKey)
	if err != nil || len(pub) != 32 || !s.TelnyxPublicKey().Equal(ed25519.PublicKey(pub)) {
		t.Fatalf("public key %q: %v", k.TelnyxPublicKey, err)
	}
	if SeedKeys(43) == k {
		t.Fatal("different seeds, same keys")
	}
	if !strings.HasPrefix(k.TwilioAccountSID, "AC") || len(k.TwilioAccountSID) != 34 || k.TelnyxAPIKey == "" || k.TwilioAuthToken == "" {
		t.Fatalf("key shapes: %+v", k)
	}

	r1, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Stop(context.Background())
	defer r2.Stop(context.Background())
	if r1.Keys() == r2.Keys() || r1.Keys() == SeedKeys(0) {
		t.Fatal("unseeded keys must be random per run")
	}

	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	given, err := New(Config{Seed: new(int64(42)), TelnyxAPIKey: "KEYmine", TelnyxSigningKey: priv, TwilioAccountSID: "ACmine", TwilioAuthToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer given.Stop(context.Background())
	want := Keys{TelnyxPublicKey: base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), TelnyxAPIKey: "KEYmine", TwilioAccountSID: "ACmine", TwilioAuthToken: "tok"}
	if given.Keys() != want {
		t.Fatalf("given keys %+v", given.Keys())
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Faults: Faults{FailRate: 2}},
		{TelnyxWebhookURL: "localhost:8080/hooks"},
		{TwilioWebhookURL: "ftp://x/y"},
		{TelnyxSigningKey: ed25519.PrivateKey{1, 2, 3}},
		{TwilioRetries: 6},
	} {
		if s, err := New(cfg); err == nil {
			_ = s.Stop(context.Background())
			t.Errorf("%+v: accepted", cfg)
		}
	}
}

func TestParseDelay(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int{"50,200": {50, 200}, " 0 , 0 ": {0, 0}, "75": {75, 75}} {
		if got, err := ParseDelay(in); err != nil || got != want {
			t.Errorf("ParseDelay(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "a,b", "5,1", "-1,3", "1,2,3"} {
		if _, err := ParseDelay(in); err == nil {
			t.Errorf("ParseDelay(%q) accepted", in)
		}
	}
}

func TestTwilioSignatureVector(t *testing.T) {
	t.Parallel()
	// docs/providers.md §2.5, from twilio-go's request validator tests.
	params := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675309"}, "Digits": {"1234"}, "From": {"+14158675309"}, "To": {"+18005551212"}}
	if got := TwilioSignature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", params); got != "RSOYDt4T1cUTdK1PDd93/VVr8B8=" {
		t.Fatalf("signature %s", got)
	}
	if got := TwilioSignature("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", params); got != "kvajT1Ptam85bY51eRf/AJRuM3w=" {
		t.Fatalf("signature with port %s", got)
	}
}

func TestStartAndStop(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 10)
	rc := newReceiver(t, func(_ int, r *http.Request, _ hook) int {
		arrived <- struct{}{}
		<-r.Context().Done() // hold the webhook until Stop cancels it
		return http.StatusOK
	})
	s, err := New(Config{Seed: new(int64(5)), TelnyxWebhookURL: rc.url("/t")})
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if s.URL() != base || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("url %q / %q", base, s.URL())
	}
	if _, err := s.Start(context.Background(), "127.0.0.1:0"); err == nil {
		t.Fatal("second Start accepted")
	}
	cl := &http.Client{Transport: &http.Transport{}}
	defer cl.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, base+"/v2/messages", strings.NewReader(`{"from":"+15550100000","to":"+15550100001","text":"x"}`))
	req.Header.Set("Authorization", "Bearer "+s.Keys().TelnyxAPIKey)
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("send over Start: %d", res.StatusCode)
	}
	select {
	case <-arrived: // a webhook attempt now hangs in the receiver
	case <-time.After(waitFor):
		t.Fatal("no webhook attempt")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := s.Inbound(context.Background(), alice, ourNumber, "x"); err == nil {
		t.Fatal("Inbound after Stop accepted")
	}
	if err := s.WaitIdle(context.Background()); err == nil {
		t.Fatal("WaitIdle after Stop with work abandoned returned nil")
	}
	if _, err := cl.Get(base + "/sim/keys"); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

// TestDeterminism runs the same request sequence against two simulators
// with the same seed and compares every decision an observer can see.
func TestDeterminism(t *testing.T) {
	t.Parallel()
	faults := Faults{
		FailRate: 0.25, UnknownRate: 0.2, DuplicateRate: 0.2, Reorder: true, RateLimitRate: 0.15, Error5xxRate: 0.1,
		DropRate: 0.15, ReplyRate: 0.4, ReplyTexts: []string{"YES", "NO", "running late"},
	}
	run := func(seed int64) (codes []int, ledger []Send, events []string) {
		rc := newReceiver(t, nil)
		tw := newReceiver(t, nil)
		s, c := newSim(t, Config{Seed: new(seed), TelnyxWebhookURL: rc.url("/t"), TwilioWebhookURL: tw.url("/w"), Faults: faults})
		for i := range 60 {
			to := fmt.Sprintf("+1555020%04d", i)
			switch i % 3 {
			case 0:
				codes = append(codes, c.telnyxSend(sendBody(to, "x")).status)
			case 1:
				codes = append(codes, c.telnyxGroup(map[string]any{"from": ourNumber, "to": []string{to, alice}, "text": "g"}).status)
			default:
				codes = append(codes, c.twilioSend(twilioBody(to, "w")).status)
			}
		}
		idle(t, s)
	drain:
		for {
			select {
			case h := <-rc.hooks:
				ev := telnyxEvent(t, s, h)
				p := ev.Data.Payload
				var code string
				if len(p.Errors) > 0 {
					code = p.Errors[0].Code
				}
				events = append(events, strings.Join([]string{ev.Data.ID, ev.Data.EventType, p.ID, p.From.PhoneNumber, p.To[0].PhoneNumber, p.To[0].Status, code, p.Text}, " "))
			case h := <-tw.hooks:
				f := twilioForm(t, s, h)
				events = append(events, strings.Join([]string{h.header.Get("I-Twilio-Idempotency-Token"), f.Get("MessageSid"), f.Get("MessageStatus"), f.Get("ErrorCode"), f.Get("Body")}, " "))
			default:
				break drain
			}
		}
		sort.Strings(events)
		return codes, c.ledger(), events
	}
	codes1, ledger1, events1 := run(99)
	codes2, ledger2, events2 := run(99)
	if !slices.Equal(codes1, codes2) {
		t.Fatalf("status codes differ:\n%v\n%v", codes1, codes2)
	}
	if !reflect.DeepEqual(ledger1, ledger2) {
		a, _ := json.Marshal(ledger1)
		b, _ := json.Marshal(ledger2)
		t.Fatalf("ledgers differ:\n%s\n%s", a, b)
	}
	if !slices.Equal(events1, events2) {
		t.Fatalf("webhooks differ:\n%s\n---\n%s", strings.Join(events1, "\n"), strings.Join(events2, "\n"))
	}
	// The knobs must actually have fired for this to mean something.
	joined := strings.Join(events1, "\n")
	for _, want := range []string{"delivery_failed", "delivery_unconfirmed", "message.received", "undelivered"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no %s among the decisions", want)
		}
	}
	if !slices.Contains(codes1, 429) || !slices.Contains(codes1, 500) {
		t.Errorf("no 429 or 500 among %v", codes1)
	}
	codes3, ledger3, _ := run(100)
	if slices.Equal(codes3, codes1) && reflect.DeepEqual(ledger3, ledger1) {
		t.Fatal("another seed made the same decisions")
	}
}

func TestDemoFaults(t *testing.T) {
	t.Parallel()
	f := DemoFaults()
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	// Lifelike: a sent and a final event, each after DelayMS, put delivery
	// within 1–5 s; some fail, some stay unknown, many reply.
	if f.DelayMS[0]*2 < 1000 || f.DelayMS[1]*2 > 5000 {
		t.Errorf("delivery window %v ms per step", f.DelayMS)
	}
	if f.FailRate <= 0 || f.UnknownRate <= 0 || f.FailRate+f.UnknownRate > 0.3 || f.ReplyRate <= 0 {
		t.Errorf("rates %+v", f)
	}
	for _, want := range []string{"YES", "NO", "running late"} {
		if !slices.Contains(f.ReplyTexts, want) {
			t.Errorf("no %q reply", want)
		}
	}
	if f.RateLimitRate+f.Error5xxRate+f.AcceptTimeoutRate+f.DropRate+f.DuplicateRate != 0 {
		t.Errorf("the demo must not lose sends or webhooks: %+v", f)
	}
}

func TestBodyTooLarge(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	big := sendBody(alice, strings.Repeat("x", 2<<20))
	r := c.telnyxSend(big)
	var e tErrors
	r.decode(t, &e)
	if r.status != http.StatusRequestEntityTooLarge || len(e.Errors) != 1 {
		t.Fatalf("telnyx: %d %s", r.status, r.body)
	}
	w := c.twilioSend(twilioBody(alice, strings.Repeat("x", 2<<20)))
	if w.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("twilio: %d", w.status)
	}
	if len(c.ledger()) != 0 {
		t.Fatal("recorded")
	}
}
