package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

// waitFor waits, woken by the gate and the relay, until cond holds.
func waitFor(t *testing.T, n *notifier, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := n.changed()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// TestKillMidSendNeverSendsTwice is T1 at a fixed point, with real
// processes: `crewcast serve --provider telnyx` is paced to 20 sends a
// second through a gate to `crewcast sim`, and is killed with SIGKILL
// while some sends are accepted by the simulator but unanswered and others
// are claimed but not yet forwarded. A new serve on the same database must
// finish the group without sending anyone twice (idempotency keys are off,
// so a resend would be a new message in the simulator's ledger): the sends
// that never reached the simulator become unconfirmed, the accepted ones
// are reconciled to delivered by the webhooks the first process
// acknowledged before it died, and everyone else is sent exactly once.
func TestKillMidSendNeverSendsTwice(t *testing.T) {
	const (
		total     = 200
		passFirst = 40 // sent normally before the gate starts holding
		holdAfter = 4  // accepted by the simulator, answers withheld
		minBefore = 3  // claimed and sent to the gate, never forwarded
	)
	n := newNotifier()
	relay := newWebhookRelay(n)
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	hook := relaySrv.URL + "/webhooks/telnyx"
	// Failover to the same URL and a 1 s back-off: webhooks survive the
	// few seconds without a server, as a provider's retries would.
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", hook, "--telnyx-failover-url", hook,
		"--retry-backoff", "1s", "--delay-ms", "20,100")
	gate := newSendGate(simURL, passFirst, holdAfter, n)
	gateSrv := httptest.NewServer(gate)
	t.Cleanup(func() {
		gate.close()
		gateSrv.Close()
		relay.setUpstream("")
	})
	env := serveEnv(t, simURL, gateSrv.URL)
	db := filepath.Join(t.TempDir(), "crewcast.db")
	// Status checks after 3 s finish anyone whose webhooks were lost
	// while no server was up.
	args := []string{"--db", db, "--provider", "telnyx", "--send-rate", "20", "--check-after", "3s"}
	srv1, url1 := startServe(t, "serve-1", env, args...)
	relay.setUpstream(url1)

	to := numbers(total)
	id := createGroup(t, url1, to, "Crew call: site B, 7:00. Reply YES or NO.")
	waitFor(t, n, 60*time.Second, "sends held on both sides of the provider call, with the accepted ones' webhooks acknowledged", func() bool {
		after, before, errs := gate.state()
		if len(errs) > 0 {
			t.Fatalf("send gate: %v", errs)
		}
		if len(after) < holdAfter || len(before) < minBefore {
			return false
		}
		for _, msg := range after {
			acked := relay.ackedTypes(msg)
			if !acked["message.sent"] || !acked["message.finalized"] {
				return false
			}
		}
		return true
	})
	srv1.Kill()
	relay.setUpstream("")
	if !srv1.KilledBySIGKILL() {
		t.Fatalf("serve-1 ended with %v, want death by SIGKILL", srv1.Err())
	}
	heldAfter, heldBefore, _ := gate.state()
	atKill, _ := ledger(t, simURL)
	t.Logf("killed serve-1 with %d sends accepted by the simulator; %d held after acceptance, %d held before it", len(atKill), len(heldAfter), len(heldBefore))

	gate.openUp()
	_, url2 := startServe(t, "serve-2", env, args...)
	relay.setUpstream(url2)
	g := pollGroup(t, url2, adminKey, id, 90*time.Second, "every recipient final after the restart", func(g groupView) bool {
		return g.Status == "complete"
	})
	t.Logf("after the restart: %v", g.Counts)

	accepted := ledgerCounts(t, simURL)
	if len(g.Recipients) != total {
		t.Fatalf("%d recipients in GET /v1/groups/%s, want %d", len(g.Recipients), id, total)
	}
	if g.Counts["pending"] != 0 || g.Counts["sending"] != 0 {
		t.Errorf("counts %v: pending or sending left", g.Counts)
	}
	byNumber := map[string]recipientView{}
	for _, r := range g.Recipients {
		byNumber[r.Number] = r
		_, sent := accepted[r.Number]
		switch {
		case !finalStatuses[r.Status]:
			t.Errorf("%s: status %s is not final", r.Number, r.Status)
		case r.Attempts != 1:
			t.Errorf("%s: %d attempts, want 1 (nothing here may be retried)", r.Number, r.Attempts)
		case sent && r.Status != "delivered":
			t.Errorf("%s: accepted by the simulator as %s, but %s", r.Number, accepted[r.Number], r.Status)
		case sent && r.ProviderMessageID != accepted[r.Number]:
			t.Errorf("%s: provider message %q, the simulator accepted %q", r.Number, r.ProviderMessageID, accepted[r.Number])
		case !sent && r.Status != "unconfirmed":
			// Never reached the provider, so only a crash in flight can
			// explain it: unconfirmed, and never resent automatically.
			t.Errorf("%s: never accepted by the simulator, but %s (want unconfirmed)", r.Number, r.Status)
		}
	}
	for num, msg := range heldAfter {
		r := byNumber[num]
		if r.Status != "delivered" || r.ProviderMessageID != msg {
			t.Errorf("%s (accepted as %s, answer lost in the crash, webhooks acknowledged): %s with message %q, want delivered by reconciliation", num, msg, r.Status, r.ProviderMessageID)
		}
		if !reconciled(t, url2, id, num) {
			t.Errorf("%s: no reconciliation with provider evidence in its journal", num)
		}
	}
	for _, num := range heldBefore {
		if _, sent := accepted[num]; sent || byNumber[num].Status != "unconfirmed" {
			t.Errorf("%s (claimed, never forwarded): %s, accepted %v; want unconfirmed and never sent", num, byNumber[num].Status, sent)
		}
	}
	if got := g.Counts["delivered"] + g.Counts["unconfirmed"]; got != total || len(accepted) != g.Counts["delivered"] {
		t.Errorf("counts %v with %d sends accepted: want every recipient delivered once or unconfirmed", g.Counts, len(accepted))
	}
	if len(accepted) <= len(atKill) {
		t.Errorf("no send after the restart (%d accepted before the kill, %d after)", len(atKill), len(accepted))
	}
}

// reconciled reports whether a recipient's journal (GET
// /v1/groups/{id}/events?number=) holds an observation resolved by
// provider evidence.
func reconciled(t *testing.T, base, id, number string) bool {
	t.Helper()
	var out struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	u := base + "/v1/groups/" + id + "/events?limit=10000&number=" + url.QueryEscape(number)
	if _, err := call(http.MethodGet, u, adminKey, nil, &out, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Events {
		var d struct {
			Source   string `json:"source"`
			Evidence string `json:"evidence"`
		}
		if e.Type == "status.observed" && json.Unmarshal(e.Data, &d) == nil && d.Source == "reconcile" && d.Evidence != "" {
			return true
		}
	}
	return false
}
