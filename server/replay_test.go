package server_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// Issue 27 item 5: Twilio signatures carry no timestamp, so a captured
// signed inbound "YES" verifies forever. Once retention purged its inbox
// row, replaying the exact request must change nothing — not even on a
// newer group to the same number — and is counted as a replay.
func TestCapturedTwilioReplyReplayedAfterInboxPurge(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		seed := int64(11)
		sm, err := sim.New(sim.Config{Seed: &seed, Faults: sim.Faults{}, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		simURL, err := sm.Start(ctx, "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sm.Stop(context.Background()) })
		k := sm.Keys()
		srv := start(t, eng, sim.Faults{}, func(c *server.Config) {
			c.Provider, c.TwilioAPIBase = server.ProviderTwilio, simURL
			c.TwilioAccountSID, c.TwilioAuthToken = k.TwilioAccountSID, k.TwilioAuthToken
		})
		to := numbers(1)
		first := createGroup(t, srv, to)
		await(t, srv, first, 20*time.Second, "complete", complete)

		// The captured request: a signed inbound YES to the first group.
		form := url.Values{"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "AccountSid": {k.TwilioAccountSID},
			"From": {to[0]}, "To": {testFrom}, "Body": {"YES"}, "NumMedia": {"0"}, "ApiVersion": {"2010-04-01"}}
		sig := twilio.Signature(k.TwilioAuthToken, srv.URL()+"/webhooks/twilio", form)
		post := func() {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, srv.URL()+"/webhooks/twilio", strings.NewReader(form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set(twilio.SignatureHeader, sig)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /webhooks/twilio: %d, want 200", resp.StatusCode)
			}
		}
		post()
		await(t, srv, first, 20*time.Second, "the YES", func(g store.GroupRow) bool { return g.Counts["acknowledged"] == 1 })
		drainInbox(t, srv)
		// Retention's inbox purge (its window is 7 days; purge now).
		if n, err := srv.Store().PurgeInbox(ctx, time.Now().Add(time.Minute)); err != nil || n == 0 {
			t.Fatalf("PurgeInbox = %d, %v; want the processed rows gone", n, err)
		}

		second := createGroup(t, srv, to)
		await(t, srv, second, 20*time.Second, "complete", complete)
		journalBefore := journal(t, srv, second)
		post() // the replay
		drainInbox(t, srv)
		if d := deliveries(t, srv, second)[to[0]]; d.Ack != crewcast.AckNone || !d.RepliedAt.IsZero() {
			t.Errorf("the replayed YES changed the newer group: ack %q, replied at %v", d.Ack, d.RepliedAt)
		}
		if after := journal(t, srv, second); len(after) != len(journalBefore) {
			t.Errorf("the newer group's journal grew from %d to %d events on the replay", len(journalBefore), len(after))
		}
		if n := counterValue(t, srv, `crewcast_webhook_events_ingested_total{provider="twilio",result="replay"}`); n != 1 {
			t.Errorf("replays counted: %v, want 1", n)
		}
	})
}

// drainInbox waits until the inbox holds no unprocessed entry.
func drainInbox(t *testing.T, srv *server.Server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := srv.Store().PendingInbox(context.Background(), store.InboxRef{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d inbox entries never processed", len(p))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
