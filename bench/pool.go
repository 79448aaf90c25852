package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
	"github.com/crewcast/crewcast/tracker"
)

// Pools and failover (docs/design.md §16, issue 30), on SQLite, with the
// tracker sending through the real Telnyx and Twilio adapters to one
// simulator that serves each provider on its own listener (so a refusal is
// a real "connection refused"). Webhooks go to an endpoint that drops them:
// what is measured is the send path.
//
// pool_fanout_per_s: a poolN-person group over a pool of 10 numbers (5 per
// provider) at poolMPS each, pacing on: recipients accepted per second from
// the create to the last acceptance (the pacing bound is 10 × poolMPS).
//
// failover_ms: a group over 2 Telnyx + 2 Twilio numbers; once Telnyx took
// a tenth of its share, its listener closes; from the moment its circuit
// opens until the first send of a person who was on a Telnyx number is
// accepted through Twilio.
type poolRig struct {
	sim *sim.Sim
	st  store.Store
	tr  *tracker.Tracker
}

func startPoolRig(ctx context.Context, c config, name string, senders []store.Sender) (*poolRig, error) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	seed := int64(1)
	sm, err := sim.New(sim.Config{Faults: sim.Faults{DelayMS: [2]int{5, 20}}, Seed: &seed,
		TelnyxWebhookURL: hook.URL + "/webhooks/telnyx", TwilioWebhookURL: hook.URL + "/webhooks/twilio"})
	if err != nil {
		hook.Close()
		return nil, err
	}
	if _, err := sm.Start(ctx, "127.0.0.1:0"); err != nil {
		hook.Close()
		return nil, err
	}
	r := &poolRig{sim: sm}
	fail := func(err error) (*poolRig, error) {
		r.stop()
		hook.Close()
		return nil, err
	}
	tnxURL, err := sm.StartProvider(ctx, "telnyx", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	twURL, err := sm.StartProvider(ctx, "twilio", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	k := sm.Keys()
	client := func() *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
	}
	tnx, err := telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: tnxURL, HTTPClient: client()})
	if err != nil {
		return fail(err)
	}
	tw, err := twilio.New(twilio.Config{AccountSID: k.TwilioAccountSID, AuthToken: k.TwilioAuthToken, APIBase: twURL,
		StatusCallbackURL: hook.URL + "/webhooks/twilio", PublicURL: hook.URL, HTTPClient: client()})
	if err != nil {
		return fail(err)
	}
	r.st, err = sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(c.tmp, name+".db")})
	if err != nil {
		return fail(err)
	}
	for _, s := range senders {
		if err := r.st.CreateSender(ctx, s); err != nil {
			return fail(err)
		}
	}
	r.tr, err = tracker.New(tracker.Config{Store: r.st, Provider: tnx, Providers: map[string]crewcast.Provider{"twilio": tw},
		SweepInterval: time.Hour})
	if err != nil {
		return fail(err)
	}
	if err := r.tr.LoadSenders(ctx); err != nil {
		return fail(err)
	}
	if err := r.tr.Start(ctx); err != nil {
		r.tr = nil
		return fail(err)
	}
	go func() { <-ctx.Done(); hook.Close() }()
	return r, nil
}

func (r *poolRig) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r.tr != nil {
		_ = r.tr.Stop(ctx)
	}
	if r.st != nil {
		_ = r.st.Close()
	}
	_ = r.sim.Stop(ctx)
}

func poolSenders(pool string, perProvider int, mps float64) []store.Sender {
	var out []store.Sender
	for i := range perProvider {
		out = append(out,
			store.Sender{Number: fmt.Sprintf("+1555012%04d", i), Provider: "telnyx", Pool: pool, MPS: mps},
			store.Sender{Number: fmt.Sprintf("+1555013%04d", i), Provider: "twilio", Pool: pool, MPS: mps})
	}
	return out
}

// accepted counts the group's recipients whose send is settled.
func (r *poolRig) settled(ctx context.Context, id string) (int, error) {
	g, err := r.st.GetGroup(ctx, id)
	if err != nil {
		return 0, err
	}
	return g.Counts["sent"] + g.Counts["delivered"] + g.Counts["failed"] + g.Counts["unconfirmed"], nil
}

func benchPool(ctx context.Context, c config, rep harness.Reporter) error {
	n, mps := c.poolN, c.poolMPS
	rig, err := startPoolRig(ctx, c, "pool", poolSenders("bench", 5, mps))
	if err != nil {
		return err
	}
	defer rig.stop()
	people := harness.Numbers(8_000_000, n)
	rep.Progress("pool: %d people over 10 numbers at %g mps each", n, mps)
	start := time.Now()
	id, _, err := rig.tr.Create(ctx, group.Request{Pool: "bench", To: people, Text: "Pool call: site C"}, tracker.CreateOptions{})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(float64(n)/mps) * time.Second).Add(2 * time.Minute)
	for {
		done, err := rig.settled(ctx, id)
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool: %d of %d settled by the deadline", done, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	by := map[string]int{}
	for _, s := range rig.sim.Ledger() {
		by[s.Provider]++
	}
	rep.Progress("pool: %d sent in %s (telnyx %d, twilio %d; pacing bound %g/s)", n, took.Round(time.Millisecond), by["telnyx"], by["twilio"], 10*mps)
	rep.Result("pool_fanout_per_s", float64(n)/took.Seconds(), "recipients/s")
	return nil
}

func benchFailover(ctx context.Context, c config, rep harness.Reporter) error {
	n := c.failoverN
	rig, err := startPoolRig(ctx, c, "failover", poolSenders("fo", 2, 50))
	if err != nil {
		return err
	}
	defer rig.stop()
	people := harness.Numbers(8_500_000, n)
	id, _, err := rig.tr.Create(ctx, group.Request{Pool: "fo", To: people, Text: "Failover call"}, tracker.CreateOptions{})
	if err != nil {
		return err
	}
	_ = id
	// Who was on a Telnyx number: their sticky route, written with the group.
	onTelnyx := map[string]bool{}
	for _, p := range people {
		rt, err := rig.st.GetRoute(ctx, "p:fo:"+p)
		if err != nil {
			return fmt.Errorf("sticky route: %w", err)
		}
		if rt.Value < "+15550130000" { // poolSenders: +1555012… are Telnyx's
			onTelnyx[p] = true
		}
	}
	for {
		k := 0
		for _, s := range rig.sim.Ledger() {
			if s.Provider == "telnyx" {
				k++
			}
		}
		if k >= len(onTelnyx)/10 {
			break
		}
		if err := sleepCtx(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	f := rig.sim.Faults()
	f.Outages = map[string]string{"telnyx": sim.OutageRefuse}
	if err := rig.sim.SetFaults(f); err != nil {
		return err
	}
	var opened time.Time
	for opened.IsZero() {
		for _, h := range rig.tr.ProviderHealth() {
			if h.Name == "telnyx" && h.Circuit == tracker.CircuitOpen {
				opened = time.Now()
			}
		}
		if err := sleepCtx(ctx, 200*time.Microsecond); err != nil {
			return err
		}
	}
	for {
		for _, s := range rig.sim.Ledger() {
			if s.Provider == "twilio" && onTelnyx[s.To] {
				d := max(s.ReceivedAt.Sub(opened), 0)
				rep.Progress("failover: circuit opened, first failed-over send accepted %s later", d.Round(time.Millisecond))
				rep.Result("failover_ms", harness.Ms(d), "ms")
				return nil
			}
		}
		if time.Since(opened) > time.Minute {
			return errors.New("failover: no failed-over send within a minute of the circuit opening")
		}
		if err := sleepCtx(ctx, 200*time.Microsecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
