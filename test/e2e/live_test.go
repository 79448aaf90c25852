package e2e

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestLiveModeAgainstSimulator runs crewcast as an operator would against a
// provider: `crewcast sim --seed 1` with lifelike faults (failures with
// codes, unknown outcomes, replies, duplicated and reordered webhooks) and
// `crewcast serve --provider telnyx` on a fresh database, configured only
// through CREWCAST_* variables from GET /sim/keys. A group created through
// POST /v1/groups must reach final states with every recipient sent once;
// both processes must then stop cleanly on SIGTERM.
func TestLiveModeAgainstSimulator(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	const total = 40
	// serve's address is known only once it runs, and the simulator needs
	// its webhook URL at start: the relay gives it a fixed one.
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	sim, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx",
		"--delay-ms", "20,150", "--fail-rate", "0.15", "--unknown-rate", "0.1", "--reply-rate", "0.3",
		"--duplicate-rate", "0.3", "--reorder")
	env := serveEnv(t, simURL, simURL)
	srv, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx", "--send-rate", "50")
	relay.setUpstream(base)

	to := numbers(total)
	id := createGroup(t, base, to, "Crew call: site B, 7:00. Reply YES or NO.")
	// The simulator's draws are seeded and taken in request order, so how
	// many fail, stay unknown or reply is the same on every run; replies
	// follow delivery, so wait for them too.
	g := pollGroup(t, base, adminKey, id, 60*time.Second, "every recipient final and the replies in", func(g groupView) bool {
		return g.Status == "complete" && g.Counts["replied"] > 0
	})
	t.Logf("final: %v", g.Counts)
	if g.Counts["delivered"] == 0 || g.Counts["failed"] == 0 || g.Counts["unknown"] == 0 {
		t.Errorf("counts %v: want delivered, failed and unknown recipients from the simulator's rates", g.Counts)
	}
	if sum := g.Counts["delivered"] + g.Counts["failed"] + g.Counts["unknown"]; sum != total {
		t.Errorf("counts %v: delivered+failed+unknown = %d, want %d", g.Counts, sum, total)
	}
	accepted := ledgerCounts(t, simURL)
	code := regexp.MustCompile(`^400\d\d$`)
	for _, r := range g.Recipients {
		if !finalStatuses[r.Status] || r.Attempts != 1 || r.ProviderMessageID == "" || r.ProviderMessageID != accepted[r.Number] {
			t.Errorf("%s: status %s attempts %d message %q (simulator accepted %q)", r.Number, r.Status, r.Attempts, r.ProviderMessageID, accepted[r.Number])
		}
		if r.Status == "failed" && (!code.MatchString(r.ErrorCode) || r.ErrorClass == "") {
			t.Errorf("%s: failed with code %q class %q, want a Telnyx delivery code and its class", r.Number, r.ErrorCode, r.ErrorClass)
		}
		if r.ReplyText != "" && r.Status != "delivered" {
			t.Errorf("%s replied %q but is %s", r.Number, r.ReplyText, r.Status)
		}
	}
	if len(accepted) != total {
		t.Errorf("the simulator accepted %d messages, want %d", len(accepted), total)
	}
	if err := srv.Stop(30 * time.Second); err != nil {
		t.Errorf("serve on SIGTERM: %v, want a clean exit", err)
	}
	relay.setUpstream("")
	if err := sim.Stop(15 * time.Second); err != nil {
		t.Errorf("sim on SIGTERM: %v, want a clean exit", err)
	}
}
