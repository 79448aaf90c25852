// Package e2e runs the crewcast binary as real processes — `crewcast sim`,
// `crewcast serve --provider telnyx`, `crewcast demo` — on loopback and
// checks what a user or a crash would see: kill -9 in the middle of a
// fan-out, live mode against the simulator, and the demo's example group.
//
// TestMain builds the binary once into a temporary directory, or takes
// the one CREWCAST_TEST_BINARY names. Every
// process runs in its own process group, is killed (SIGKILL to the group)
// when its test ends, and dies with the test binary (Pdeathsig), so a
// failed or interrupted run leaves nothing behind. Waiting on another
// process polls with a deadline; everything in this process is awaited
// through channels.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/test/internal/testproc"
)

// crewcastBin is the binary under test (TestMain).
var crewcastBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "crewcast-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	if crewcastBin, err = testBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testBinary returns the crewcast binary to test: the one
// CREWCAST_TEST_BINARY names (make test builds it once for the e2e, chaos
// and deploy tests), else one built into dir.
func testBinary(dir string) (string, error) {
	if bin := os.Getenv("CREWCAST_TEST_BINARY"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			return "", fmt.Errorf("CREWCAST_TEST_BINARY: %w", err)
		}
		return abs, nil
	}
	bin := filepath.Join(dir, "crewcast")
	// go test puts its own toolchain first in PATH, so "go" is the same Go.
	build := exec.Command("go", "build", "-o", bin, "github.com/crewcast/crewcast/cmd/crewcast")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	began := time.Now()
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build crewcast: %w", err)
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "e2e: built crewcast in %s\n", time.Since(began).Round(time.Millisecond))
	}
	return bin, nil
}

// adminKey is the bootstrap admin key given to every crewcast serve.
const adminKey = "e2e-admin-12c425f679a56a201e0fd1f0fbd13c87e8a55d88ec0d441e"

// from is the sender number of the test groups.
const from = "+15550100000"

// numbers returns n distinct fictional recipient numbers.
func numbers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", 400001+i)
	}
	return out
}

// startProc runs the crewcast binary with args (see testproc.Start: only
// env's CREWCAST_ variables reach it). Its output goes to a log file that
// is shown when the test fails; it is killed at cleanup.
func startProc(t *testing.T, name string, env []string, args ...string) *testproc.Proc {
	t.Helper()
	p, err := testproc.Start(name, crewcastBin, args, env, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s (%s) exited with %v; last lines of its output:\n%s", name, strings.Join(args, " "), p.Err(), testproc.Tail(p.LogPath, 40))
		}
	})
	return p
}

// waitLine waits up to timeout for a stdout line of p starting with prefix
// and returns the rest of it, trimmed.
func waitLine(t *testing.T, p *testproc.Proc, prefix string, timeout time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeoutCause(t.Context(), timeout, fmt.Errorf("not within %s", timeout))
	defer cancel()
	rest, err := p.WaitLine(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return rest
}

// announcedURL waits for p's line starting with prefix and returns the
// loopback URL that follows it.
func announcedURL(t *testing.T, p *testproc.Proc, prefix string) string {
	t.Helper()
	u, ok := testproc.AnnouncedURL(waitLine(t, p, prefix, 60*time.Second))
	if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("%s announced %q, want a loopback http URL", p.Name, u)
	}
	return u
}

// ---- HTTP ----

// client talks to the processes; every call is bounded.
var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}

// call makes one request and decodes a JSON answer into out (when not
// nil). It returns the status code; err is set for transport and decoding
// failures and for answers other than want.
func call(method, url, key string, body, out any, want int) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode != want {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode %s: %w", method, url, b, err)
		}
	}
	return resp.StatusCode, nil
}

// simKeys are the credentials GET /sim/keys returns.
type simKeys struct {
	TelnyxPublicKey string `json:"telnyx_public_key"`
	TelnyxAPIKey    string `json:"telnyx_api_key"`
}

// ledgerRow is one accepted send in GET /sim/ledger.
type ledgerRow struct {
	ID   string `json:"id"`
	From string `json:"from"`
	To   string `json:"to"`
	Text string `json:"text"`
}

// duplicate is one entry of GET /sim/ledger/duplicates.
type duplicate struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// groupView is GET /v1/groups/{id}.
type groupView struct {
	ID         string           `json:"id"`
	Status     string           `json:"status"`
	Counts     group.CountsJSON `json:"counts"`
	Recipients []recipientView  `json:"recipients"`
}

// recipientView is one recipient of GET /v1/groups/{id}.
type recipientView struct {
	Number            string `json:"number"`
	Status            string `json:"status"`
	Attempts          int    `json:"attempts"`
	ProviderMessageID string `json:"provider_message_id"`
	ErrorCode         string `json:"error_code"`
	ErrorClass        string `json:"error_class"`
	ReplyText         string `json:"reply_text"`
	Ack               string `json:"ack"`
}

// finalStatuses are the recipient statuses nothing moves on by itself.
var finalStatuses = map[string]bool{
	"delivered": true, "failed": true, "unknown": true, "opted_out": true, "canceled": true, "unconfirmed": true,
}

// simToken is the control token of every simulator the tests start
// (its /sim/* routes need it).
var simToken = rand.Text()

// startSim runs `crewcast sim` on a free loopback port with extra flags
// and returns the process and its base URL.
func startSim(t *testing.T, flags ...string) (*testproc.Proc, string) {
	t.Helper()
	p := startProc(t, "sim", []string{"CREWCAST_SIM_TOKEN=" + simToken}, append([]string{"sim", "--addr", "127.0.0.1:0"}, flags...)...)
	return p, announcedURL(t, p, "crewcast sim listening on ")
}

// serveEnv is the environment of `crewcast serve --provider telnyx`
// against a simulator whose provider API is at apiBase.
func serveEnv(t *testing.T, simURL, apiBase string) []string {
	t.Helper()
	var k simKeys
	if _, err := call(http.MethodGet, simURL+"/sim/keys", simToken, nil, &k, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if k.TelnyxAPIKey == "" || k.TelnyxPublicKey == "" {
		t.Fatalf("GET /sim/keys gave %+v", k)
	}
	return []string{
		"CREWCAST_TELNYX_API_KEY=" + k.TelnyxAPIKey,
		"CREWCAST_TELNYX_PUBLIC_KEY=" + k.TelnyxPublicKey,
		"CREWCAST_TELNYX_API_BASE=" + apiBase,
		"CREWCAST_ADMIN_KEY=" + adminKey,
		// A resend would reach the simulator as a new message and show in
		// its ledger as a duplicate, rather than be deduplicated by key.
		"CREWCAST_TELNYX_IDEMPOTENCY_KEYS=false",
	}
}

// startServe runs `crewcast serve` with args after "serve" and returns
// the process and its base URL.
func startServe(t *testing.T, name string, env []string, args ...string) (*testproc.Proc, string) {
	t.Helper()
	p := startProc(t, name, env, append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}, args...)...)
	return p, announcedURL(t, p, "crewcast serving on ")
}

// createGroup posts a group and returns its id.
func createGroup(t *testing.T, base string, to []string, text string) string {
	t.Helper()
	var out struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual"}
	if _, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &out, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	if out.ID == "" || out.Status != "sending" {
		t.Fatalf("POST /v1/groups answered id %q status %q", out.ID, out.Status)
	}
	return out.ID
}

// pollGroup reads GET /v1/groups/{id} every 200 ms until cond holds or
// timeout passes (the server is another process: nothing to wait on but
// its answers).
func pollGroup(t *testing.T, base, key, id string, timeout time.Duration, what string, cond func(groupView) bool) groupView {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var g groupView
	var lastErr error
	for {
		g = groupView{}
		_, lastErr = call(http.MethodGet, base+"/v1/groups/"+id, key, nil, &g, http.StatusOK)
		if lastErr == nil && cond(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: status %q counts %v (last error: %v)", timeout, what, g.Status, g.Counts, lastErr)
		}
		<-tick.C
	}
}

// ledger reads the simulator's ledger and its duplicates.
func ledger(t *testing.T, simURL string) ([]ledgerRow, []duplicate) {
	t.Helper()
	var l struct {
		Sends []ledgerRow `json:"sends"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/ledger", simToken, nil, &l, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	var d struct {
		Duplicates []duplicate `json:"duplicates"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/ledger/duplicates", simToken, nil, &d, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	return l.Sends, d.Duplicates
}

// ledgerCounts asserts that the simulator accepted no message twice —
// neither a (from, to, text) in /sim/ledger/duplicates nor a number twice
// in /sim/ledger — and returns the accepted message id per number.
func ledgerCounts(t *testing.T, simURL string) map[string]string {
	t.Helper()
	sends, dups := ledger(t, simURL)
	if len(dups) != 0 {
		t.Errorf("GET /sim/ledger/duplicates: %+v; the simulator accepted the same message more than once", dups)
	}
	out := map[string]string{}
	for _, s := range sends {
		if _, twice := out[s.To]; twice {
			t.Errorf("%s appears more than once in /sim/ledger", s.To)
		}
		out[s.To] = s.ID
	}
	return out
}
