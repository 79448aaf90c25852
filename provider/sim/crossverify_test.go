package sim_test

// Cross-verification: the simulator and crewcast's provider adapters are
// independent implementations of the same wire formats. Each must accept
// what the other produces: the simulator's signed webhooks parse under the
// adapters' verifiers, the adapters' signatures equal the simulator's for
// the same input, and the adapters' API calls are accepted by the simulator.

import (
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
)

// capture records webhook requests and answers 200.
type capture struct {
	mu   sync.Mutex
	reqs []crewcast.WebhookRequest
	srv  *httptest.Server
	got  chan struct{}
}

func newCapture(t *testing.T) *capture {
	c := &capture{got: make(chan struct{}, 1000)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, crewcast.WebhookRequest{URL: c.srv.URL + r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		c.mu.Unlock()
		c.got <- struct{}{}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capture) wait(t *testing.T, n int) []crewcast.WebhookRequest {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-c.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d webhooks, want %d", i, n)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]crewcast.WebhookRequest(nil), c.reqs...)
}

// startSim starts a simulator on a free port and stops it when t ends.
func startSim(t *testing.T, cfg sim.Config) (*sim.Sim, string) {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return s, base
}

func TestSimulatorAndAdaptersAgree(t *testing.T) {
	tnx, twl := newCapture(t), newCapture(t)
	seed := int64(42)
	s, base := startSim(t, sim.Config{Seed: &seed, TelnyxWebhookURL: tnx.srv.URL + "/webhooks/telnyx", TwilioWebhookURL: twl.srv.URL + "/webhooks/twilio",
		Faults: sim.Faults{DelayMS: [2]int{0, 1}, Script: map[string]string{"+15550100002": "fail:40008"}}})
	ctx := context.Background()
	k := s.Keys()

	// The Telnyx adapter's sends and lookups are accepted by the simulator.
	tc, err := telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: base, SendIdempotencyKey: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tc.Send(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "Crew call 7am", IdempotencyKey: "g:s1"})
	if err != nil || res.MessageID == "" {
		t.Fatalf("telnyx send to the simulator: %+v %v", res, err)
	}
	if _, err := tc.Send(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100002"}, Text: "Crew call 7am"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.SendGroupMMS(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100003", "+15550100004"}, Text: "thread"}); err != nil {
		t.Fatalf("group MMS: %v", err)
	}
	// Every simulator webhook verifies and parses under the adapter: 2 per
	// recipient (sent, finalized) for 4 recipients.
	statuses := map[string]crewcast.Status{}
	for _, r := range tnx.wait(t, 8) {
		events, err := tc.ParseWebhook(r)
		if err != nil {
			t.Fatalf("simulator webhook rejected by the Telnyx adapter: %v", err)
		}
		for _, ev := range events {
			if ev.Kind == crewcast.KindStatus {
				statuses[ev.To] = ev.Status
				if ev.To == "+15550100002" && (ev.ErrorCode != "40008" || ev.ErrorClass != crewcast.ClassCarrier) {
					t.Fatalf("failure classified %s/%s", ev.ErrorCode, ev.ErrorClass)
				}
			}
		}
		// Tampering breaks it: the adapter's verifier really checks.
		bad := r
		bad.Body = append([]byte(nil), r.Body...)
		bad.Body[len(bad.Body)/2] ^= 1
		if _, err := tc.ParseWebhook(bad); err == nil {
			t.Fatal("a flipped byte verified")
		}
	}
	if statuses["+15550100001"] != crewcast.StatusDelivered || statuses["+15550100002"] != crewcast.StatusFailed || statuses["+15550100003"] != crewcast.StatusDelivered {
		t.Fatalf("statuses %v", statuses)
	}
	st, err := tc.Lookup(ctx, res.MessageID)
	if err != nil || len(st.Recipients) != 1 || st.Recipients[0].Status != crewcast.StatusDelivered {
		t.Fatalf("lookup: %+v %v", st, err)
	}
	// An inbound reply injected at the simulator parses as inbound.
	if _, err := s.Inbound(ctx, "+15550100001", "+15550100000", "YES"); err != nil {
		t.Fatal(err)
	}
	reqs := tnx.wait(t, 1)
	events, err := tc.ParseWebhook(reqs[len(reqs)-1])
	if err != nil || len(events) != 1 || events[0].Kind != crewcast.KindInbound || events[0].Text != "YES" {
		t.Fatalf("inbound: %+v %v", events, err)
	}

	// The Twilio adapter: send accepted, status callbacks verify and parse.
	wc, err := twilio.New(twilio.Config{AccountSID: k.TwilioAccountSID, AuthToken: k.TwilioAuthToken, APIBase: base})
	if err != nil {
		t.Fatal(err)
	}
	wres, err := wc.Send(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100005"}, Text: "Crew call 7am"})
	if err != nil || wres.MessageID == "" {
		t.Fatalf("twilio send: %+v %v", wres, err)
	}
	var last crewcast.Status
	for _, r := range twl.wait(t, 3) { // queued, sent, delivered
		events, err := wc.ParseWebhook(r)
		if err != nil {
			t.Fatalf("simulator callback rejected by the Twilio adapter: %v", err)
		}
		for _, ev := range events {
			last = ev.Status
		}
	}
	if last != crewcast.StatusDelivered {
		t.Fatalf("last twilio status %s", last)
	}
}

// TestSignaturesMatch: for any input, the adapters compute the same
// signatures as the simulator (Ed25519 is deterministic).
func TestSignaturesMatch(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		token := rapid.StringMatching(`[a-f0-9]{32}`).Draw(rt, "token")
		u := "https://crew.example.com/webhooks/twilio?x=" + rapid.StringMatching(`[a-z0-9]{0,8}`).Draw(rt, "q")
		params := url.Values{}
		for i, n := 0, rapid.IntRange(0, 6).Draw(rt, "n"); i < n; i++ {
			name := rapid.SampledFrom([]string{"MessageSid", "MessageStatus", "From", "To", "Body", "ErrorCode", "MediaUrl0"}).Draw(rt, "name")
			params.Add(name, rapid.String().Draw(rt, "value"))
		}
		if a, b := twilio.Signature(token, u, params), sim.TwilioSignature(token, u, params); a != b {
			rt.Fatalf("twilio signatures differ: adapter %s, simulator %s", a, b)
		}
		if err := twilio.Verify(token, u, http.Header{"X-Twilio-Signature": {sim.TwilioSignature(token, u, params)}}, params); err != nil {
			rt.Fatalf("simulator signature rejected: %v", err)
		}
	})

	// Telnyx: the simulator signing with a key of ours produces exactly the
	// header telnyx.Sign produces for the same timestamp and body.
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i * 7)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	cap := newCapture(t)
	s, base := startSim(t, sim.Config{TelnyxSigningKey: priv, TelnyxWebhookURL: cap.srv.URL + "/t", Faults: sim.Faults{DelayMS: [2]int{0, 0}}})
	ctx := context.Background()
	k := s.Keys()
	tc, err := telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: base})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Send(ctx, crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, r := range cap.wait(t, 2) {
		ts, err := strconv.ParseInt(r.Header.Get("telnyx-timestamp"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		want := telnyx.Sign(priv, time.Unix(ts, 0), r.Body)
		if got := r.Header.Get("telnyx-signature-ed25519"); got != want.Get("telnyx-signature-ed25519") {
			t.Fatalf("simulator signature %s, adapter computes %s", got, want.Get("telnyx-signature-ed25519"))
		}
	}
}
