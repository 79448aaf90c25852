package tracker

// The pool end-to-end test (docs/design.md §16, issue #30's acceptance):
// one simulator serves both providers, each on its own listener so that a
// "refuse" outage refuses connections for real; the real Telnyx and Twilio
// adapters send through it, signed webhooks of both come back to Ingest.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/store"
)

// poolHarness is the simulator, both adapters and the webhook endpoint.
type poolHarness struct {
	sim    *sim.Sim
	telnyx *telnyx.Client
	twilio *twilio.Client
	target atomic.Pointer[Tracker]
}

func newPoolHarness(t *testing.T) *poolHarness {
	t.Helper()
	h := &poolHarness{}
	hook := httptest.NewServer(http.HandlerFunc(h.webhook))
	t.Cleanup(hook.Close)
	seed := int64(7)
	sm, err := sim.New(sim.Config{Faults: sim.Faults{DelayMS: [2]int{5, 30}}, Seed: &seed,
		TelnyxWebhookURL: hook.URL + "/webhooks/telnyx", TwilioWebhookURL: hook.URL + "/webhooks/twilio",
		RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.sim = sm
	if _, err := sm.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	tnxURL, err := sm.StartProvider(context.Background(), "telnyx", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	twURL, err := sm.StartProvider(context.Background(), "twilio", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tnxTransport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
	twTransport := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		tnxTransport.CloseIdleConnections()
		twTransport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sm.Stop(ctx); err != nil {
			t.Errorf("stop simulator: %v", err)
		}
	})
	k := sm.Keys()
	h.telnyx, err = telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: tnxURL,
		SendIdempotencyKey: true, HTTPClient: &http.Client{Transport: tnxTransport, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	h.twilio, err = twilio.New(twilio.Config{AccountSID: k.TwilioAccountSID, AuthToken: k.TwilioAuthToken, APIBase: twURL,
		StatusCallbackURL: hook.URL + "/webhooks/twilio", PublicURL: hook.URL, SendIdempotencyKey: true,
		HTTPClient: &http.Client{Transport: twTransport, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *poolHarness) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var p crewcast.Provider = h.telnyx
	if strings.HasSuffix(r.URL.Path, "/twilio") {
		p = h.twilio
	}
	events, err := p.ParseWebhook(crewcast.WebhookRequest{URL: "http://" + r.Host + r.URL.RequestURI(), Header: r.Header, Body: body})
	if err != nil {
		http.Error(w, "bad webhook", http.StatusBadRequest)
		return
	}
	tr := h.target.Load()
	if tr == nil {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if len(events) > 0 {
		if _, err := tr.Ingest(r.Context(), events); err != nil {
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

var (
	poolTelnyx = []string{"+15550300001", "+15550300002", "+15550300003"}
	poolTwilio = []string{"+15550310001", "+15550310002", "+15550310003"}
)

func (h *poolHarness) start(t *testing.T, st store.Store, mps float64) *Tracker {
	t.Helper()
	ctx := context.Background()
	for _, n := range poolTelnyx {
		if err := st.CreateSender(ctx, store.Sender{Number: n, Provider: "telnyx", Pool: "dispatch", MPS: mps}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range poolTwilio {
		if err := st.CreateSender(ctx, store.Sender{Number: n, Provider: "twilio", Pool: "dispatch", MPS: mps}); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := New(Config{Store: st, Provider: h.telnyx, Providers: map[string]crewcast.Provider{"twilio": h.twilio},
		SweepInterval: time.Hour, CircuitHalfOpen: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.LoadSenders(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.target.Store(tr)
	t.Cleanup(func() {
		h.target.CompareAndSwap(tr, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := tr.Stop(ctx); err != nil {
			t.Errorf("stop tracker: %v", err)
		}
	})
	return tr
}

func isTelnyx(n string) bool { return strings.HasPrefix(n, "+1555030") }

// TestIntegrationPoolFailsOverBetweenProviders: a 600-person pool group
// over 3 Telnyx + 3 Twilio numbers; Telnyx refuses connections after 200
// sends; the rest go through Twilio. Both ledgers together hold each person
// at most once, and exactly once everyone whose attempt was not ambiguous;
// the follow-up goes from each person's (new) sticky number; after Telnyx
// recovers its circuit closes and a new group uses its numbers again.
func TestIntegrationPoolFailsOverBetweenProviders(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		h := newPoolHarness(t)
		st := eng.open(t)
		tr := h.start(t, st, 100)
		people := itNumbers(600)
		ctx := context.Background()

		// Telnyx goes down once it has taken 200 sends.
		down := make(chan struct{})
		go func() {
			defer close(down)
			for range 6000 {
				n := 0
				for _, s := range h.sim.Ledger() {
					if s.Provider == "telnyx" {
						n++
					}
				}
				if n >= 200 {
					f := h.sim.Faults()
					f.Outages = map[string]string{"telnyx": sim.OutageRefuse}
					if err := h.sim.SetFaults(f); err != nil {
						t.Error(err)
					}
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
			t.Error("telnyx never took 200 sends")
		}()
		id, _, err := tr.Create(ctx, group.Request{Pool: "dispatch", To: people, Text: itText,
			PolicyInput: group.PolicyInput{Followup: &group.FollowupInput{After: "3s", Max: 1, Text: "Still need you"}}}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		<-down
		awaitGroup(t, tr, st, id, 3*time.Minute, "every first send settled", func(g store.GroupRow) bool {
			return g.Counts["pending"]+g.Counts["sending"] == 0
		})
		if got := tr.circuits.state("telnyx"); got == CircuitClosed {
			t.Fatalf("telnyx circuit after the outage: %s", got)
		}

		g, events, _ := itReplay(t, st, id)
		moved := map[int]bool{}
		for _, e := range events {
			if sc, ok := e.(group.SenderChanged); ok {
				for _, c := range sc.Changes {
					if !isTelnyx(c.Was) || isTelnyx(c.From) {
						t.Fatalf("sender change %+v: want telnyx → twilio", c)
					}
					moved[c.Index] = true
				}
			}
		}
		if len(moved) == 0 {
			t.Fatal("nobody failed over")
		}
		// Ledgers: nobody twice across both providers; each person once
		// unless their attempt was ambiguous (unconfirmed, never resent).
		if d := h.sim.Duplicates(); len(d) != 0 {
			t.Fatalf("duplicates: %+v", d)
		}
		first := map[string][]sim.Send{}
		for _, s := range h.sim.Ledger() {
			if s.Text == itText {
				first[s.To] = append(first[s.To], s)
			}
		}
		unconfirmed := 0
		var tnx, tw int
		for i, r := range g.Recipients {
			sends := first[r.Number]
			if len(sends) > 1 {
				t.Fatalf("%s texted %d times: %+v", r.Number, len(sends), sends)
			}
			if r.Status == crewcast.StatusUnconfirmed {
				unconfirmed++
				if moved[i] {
					t.Fatalf("recipient %d was unconfirmed and failed over", i)
				}
				continue
			}
			if len(sends) != 1 {
				t.Fatalf("%s (%s) in the ledgers %d times, want once", r.Number, r.Status, len(sends))
			}
			if sends[0].From != r.From {
				t.Fatalf("%s texted from %s, recipient says %s", r.Number, sends[0].From, r.From)
			}
			if sends[0].Provider == "telnyx" {
				tnx++
			} else {
				tw++
			}
		}
		// The sends in flight when Telnyx's listener closed had their
		// connection cut after the request was written: ambiguous, so
		// unconfirmed and never failed over (at most one per connection).
		t.Logf("first sends: telnyx %d, twilio %d, unconfirmed %d, failed over %d", tnx, tw, unconfirmed, len(moved))
		if tnx+tw+unconfirmed != len(people) || tnx < 150 || unconfirmed > 64 {
			t.Fatalf("telnyx %d, twilio %d, unconfirmed %d: want ≥150 via telnyx, the rest via twilio, at most 64 cut in flight", tnx, tw, unconfirmed)
		}
		// Sticky numbers follow the failover.
		for i := range moved {
			r := g.Recipients[i]
			rt, err := st.GetRoute(ctx, stickyKey("dispatch", r.Number))
			if err != nil || rt.Value != r.From {
				t.Fatalf("sticky of %s: %v %q, want %s", r.Number, err, rt.Value, r.From)
			}
		}

		// Follow-ups go from each person's own number: those on Twilio
		// numbers now (Telnyx's wait for it to come back: a follow-up keeps
		// the sticky number and retries on its schedule).
		followups := func() int {
			n := 0
			for _, s := range h.sim.Ledger() {
				if s.Text == "Still need you" {
					n++
				}
			}
			return n
		}
		deadline := time.Now().Add(2 * time.Minute)
		for followups() < tw {
			if time.Now().After(deadline) {
				t.Fatalf("follow-ups: %d sent, want the %d people on Twilio numbers", followups(), tw)
			}
			time.Sleep(50 * time.Millisecond)
		}
		g, _, _ = itReplay(t, st, id)
		seen := map[string]int{}
		for _, s := range h.sim.Ledger() {
			if s.Text == itText {
				continue
			}
			seen[s.To]++
			r := g.Recipient(s.To)
			if r == nil || s.From != r.From {
				t.Fatalf("follow-up to %s from %s, want their sticky number", s.To, s.From)
			}
		}
		for to, n := range seen {
			if n > 1 {
				t.Fatalf("%s got %d follow-ups", to, n)
			}
		}

		// Telnyx recovers: its circuit half-opens, the probe closes it, and
		// a new group's people get Telnyx numbers again.
		f := h.sim.Faults()
		f.Outages = nil
		if err := h.sim.SetFaults(f); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond)
		fresh := make([]string, 30)
		for i := range fresh {
			fresh[i] = fmt.Sprintf("+1555%07d", 900001+i)
		}
		id2, _, err := tr.Create(ctx, group.Request{Pool: "dispatch", To: fresh, Text: "Second call"}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		awaitGroup(t, tr, st, id2, time.Minute, "second group sent", func(g store.GroupRow) bool {
			return g.Counts["pending"]+g.Counts["sending"] == 0
		})
		viaTelnyx := 0
		for _, s := range h.sim.Ledger() {
			if s.Text == "Second call" && s.Provider == "telnyx" {
				viaTelnyx++
			}
		}
		if viaTelnyx == 0 {
			t.Fatal("after Telnyx recovered, the new group used none of its numbers")
		}
		if got := tr.circuits.state("telnyx"); got != CircuitClosed {
			t.Fatalf("telnyx circuit after recovery: %s", got)
		}
	})
}
