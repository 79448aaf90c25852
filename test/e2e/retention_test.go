package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// retentionView is GET /v1/retention.
type retentionView struct {
	Interval string `json:"interval"`
	Runs     int    `json:"runs"`
	Last     *struct {
		Trigger    string         `json:"trigger"`
		FinishedAt time.Time      `json:"finished_at"`
		Report     map[string]int `json:"report"`
		Error      string         `json:"error"`
	} `json:"last"`
}

// TestRetentionScheduleAndErasureAgainstAServerProcess (issue 20): a real
// `crewcast serve` with CREWCAST_RETENTION_INTERVAL=2s makes its first
// pass soon after start and then every 2 s, redacts a finished group's
// body on schedule, reports each pass in GET /v1/retention and in metrics;
// `crewcast retention run` and `crewcast erase` drive it from the command
// line.
func TestRetentionScheduleAndErasureAgainstAServerProcess(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20")
	env := append(serveEnv(t, simURL, simURL), "CREWCAST_RETENTION_INTERVAL=2s", "CREWCAST_REDACT_AFTER=4s",
		"CREWCAST_HASH_KEY=e2e-hash-key")
	started := time.Now()
	srv, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx", "--send-rate", "0")
	relay.setUpstream(base)

	const text = "Retention e2e body 5150"
	to := numbers(2)
	id := createGroup(t, base, to, text)
	pollGroup(t, base, adminKey, id, 30*time.Second, "complete", func(g groupView) bool { return g.Status == "complete" })
	var before struct {
		Text string `json:"text"`
	}
	if _, err := call(http.MethodGet, base+"/v1/groups/"+id, adminKey, nil, &before, http.StatusOK); err != nil || before.Text != text {
		t.Fatalf("group text before redaction = %q, %v", before.Text, err)
	}

	// Scheduled passes: the first within a few seconds of start, then
	// every 2 s; one of them redacts the finished group.
	var st retentionView
	var firstAt time.Time
	deadline := time.Now().Add(30 * time.Second)
	for {
		st = retentionView{}
		if _, err := call(http.MethodGet, base+"/v1/retention", adminKey, nil, &st, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if st.Last != nil && firstAt.IsZero() {
			firstAt = st.Last.FinishedAt
		}
		var g struct {
			Text string `json:"text"`
		}
		if _, err := call(http.MethodGet, base+"/v1/groups/"+id, adminKey, nil, &g, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if st.Runs >= 3 && g.Text == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: retention %+v, group text %q", st, g.Text)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Interval != "2s" || st.Last.Trigger != "schedule" || st.Last.Error != "" {
		t.Fatalf("GET /v1/retention = %+v", st)
	}
	if d := firstAt.Sub(started); d > 10*time.Second {
		t.Fatalf("first scheduled pass %s after start, want soon (about 2 s)", d)
	}
	metrics := get(t, base+"/metrics")
	if !strings.Contains(metrics, "crewcast_retention_last_run_timestamp_seconds ") ||
		!strings.Contains(metrics, `crewcast_retention_last_run_items{kind="redacted"}`) {
		t.Fatalf("retention metrics missing from /metrics")
	}

	// The command line, through the API.
	cli := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, crewcastBin, args...)
		cmd.Env = []string{"CREWCAST_URL=" + base, "CREWCAST_KEY=" + adminKey}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("crewcast %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := cli("retention", "run"); !strings.HasPrefix(out, "retention pass (api) at ") || !strings.Contains(out, "redacted ") {
		t.Fatalf("crewcast retention run printed:\n%s", out)
	}
	if out := cli("retention", "status"); !strings.Contains(out, "schedule: every 2s") {
		t.Fatalf("crewcast retention status printed:\n%s", out)
	}
	if out := cli("erase", "--number", to[0]); !strings.HasPrefix(out, "erased:") || !strings.Contains(out, "deliveries") {
		t.Fatalf("crewcast erase printed:\n%s", out)
	}
	if out := cli("erase", "--number", to[0]); !strings.HasPrefix(out, "nothing to erase") {
		t.Fatalf("second crewcast erase printed:\n%s", out)
	}
	g := pollGroup(t, base, adminKey, id, 5*time.Second, "read", func(groupView) bool { return true })
	for _, r := range g.Recipients {
		if r.Number == to[0] {
			t.Fatalf("the erased number is still a recipient: %+v", g.Recipients)
		}
	}
	if err := srv.Stop(30 * time.Second); err != nil {
		t.Errorf("serve on SIGTERM: %v, want a clean exit", err)
	}
}

// get reads a URL's body (no key: public routes).
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
