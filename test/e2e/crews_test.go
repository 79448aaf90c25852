package e2e

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOverlappingCrewsTextEachPersonOnce runs the binaries as a dispatcher
// would (issue 13): `crewcast sim`, `crewcast serve --provider telnyx`,
// then the client commands `contacts import`, `crews create` (twice, with
// people in both) and `send --crew A --crew B --responses …`. The
// simulator's ledger must hold exactly one message per person, each
// rendered with that person's name.
func TestOverlappingCrewsTextEachPersonOnce(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "10,50")
	env := serveEnv(t, simURL, simURL)
	_, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx")
	relay.setUpstream(base)

	people := numbers(6)
	var csv strings.Builder
	csv.WriteString("number,name,tags\n")
	for i, n := range people {
		csv.WriteString(n + ",Person" + string(rune('A'+i)) + " Test,all\n")
	}
	file := filepath.Join(t.TempDir(), "crew.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(crewcastBin, args...)
		cmd.Env = append(os.Environ(), "CREWCAST_URL="+base, "CREWCAST_KEY="+adminKey)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crewcast %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := cli("contacts", "import", file); !strings.Contains(out, "6 created") {
		t.Fatalf("import: %s", out)
	}
	// A: people 0-3; B: people 2-5 (2 and 3 in both).
	cli("crews", "create", "Alpha", "--members", strings.Join(people[:4], ","))
	cli("crews", "create", "Bravo", "--members", strings.Join(people[2:], ","))
	out := cli("send", "--from", from, "--crew", "Alpha", "--crew", "Bravo", "--text", "Hi {{first_name}}, site B at 7.",
		"--responses", "1=Coming,2=Cannot", "--no-follow")
	id := strings.TrimSpace(out)
	g := pollGroup(t, base, adminKey, id, 60*time.Second, "every recipient sent", func(g groupView) bool {
		return g.Counts["pending"] == 0 && g.Counts["sending"] == 0 && len(g.Recipients) == len(people)
	})
	if len(g.Recipients) != len(people) {
		t.Fatalf("group has %d recipients, want %d", len(g.Recipients), len(people))
	}
	accepted := ledgerCounts(t, simURL) // fails on any number sent twice
	if len(accepted) != len(people) {
		t.Fatalf("simulator accepted %d messages, want one per person (%d)", len(accepted), len(people))
	}
	sends, _ := ledger(t, simURL)
	for _, s := range sends {
		i := strings.Index(strings.Join(people, ","), s.To) / (len(people[0]) + 1)
		want := "Hi Person" + string(rune('A'+i)) + ", site B at 7.\nReply 1 Coming, 2 Cannot"
		if s.Text != want {
			t.Errorf("text to %s = %q, want %q", s.To, s.Text, want)
		}
	}
	if status := cli("status", id); !strings.Contains(status, "answers 1 Coming 0 · 2 Cannot 0 · no reply 6") {
		t.Errorf("status lacks the tally:\n%s", status)
	}
}
