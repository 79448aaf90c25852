package main

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startCLI runs the CLI in-process until its stdout matches want, and
// returns the submatches and a function that interrupts it (Ctrl-C) and
// returns its exit code.
func startCLI(t *testing.T, want *regexp.Regexp, args ...string) ([]string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{line: make(chan struct{}, 1)}
	var errb bytes.Buffer
	codeC := make(chan int, 1)
	go func() { codeC <- run(ctx, args, out, &errb) }()
	stop := func() int { cancel(); return <-codeC }
	deadline := time.After(30 * time.Second)
	for {
		if m := want.FindStringSubmatch(out.String()); m != nil {
			return m, stop
		}
		select {
		case <-out.line:
		case code := <-codeC:
			cancel()
			t.Fatalf("%v exited %d before printing %s:\n%s\n%s", args, code, want, out.String(), errb.String())
		case <-deadline:
			stop()
			t.Fatalf("%v printed no %s within 30s:\n%s", args, want, out.String())
		}
	}
}

// getStatus answers the status of GET url with the bearer token (none
// when token is "").
func getStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Issue 27 item 8: `crewcast sim` served its control plane (the simulated
// credentials, reply injection) to anyone. It needs a control token:
// --token / CREWCAST_SIM_TOKEN, else a random one it prints.
func TestSimControlToken(t *testing.T) {
	m, stop := startCLI(t, regexp.MustCompile(`listening on (http://\S+) [\s\S]*CREWCAST_SIM_TOKEN=(\S+)\n`), "sim", "--addr", "127.0.0.1:0")
	url, token := m[1], m[2]
	if got := getStatus(t, url+"/sim/keys", ""); got != http.StatusUnauthorized {
		t.Errorf("GET /sim/keys without the token: %d, want 401", got)
	}
	if got := getStatus(t, url+"/sim/keys", token); got != http.StatusOK {
		t.Errorf("GET /sim/keys with the printed token: %d, want 200", got)
	}
	if code := stop(); code != 0 {
		t.Errorf("sim exited %d", code)
	}

	const mine = "my-own-sim-token-0123456789"
	t.Setenv("CREWCAST_SIM_TOKEN", mine)
	m, stop = startCLI(t, regexp.MustCompile(`listening on (http://\S+) [\s\S]*CREWCAST_TWILIO_AUTH_TOKEN=\S+\n`), "sim", "--addr", "127.0.0.1:0")
	if strings.Contains(m[0], mine) {
		t.Errorf("the token given in the environment was printed:\n%s", m[0])
	}
	if got := getStatus(t, m[1]+"/sim/ledger", mine); got != http.StatusOK {
		t.Errorf("GET /sim/ledger with CREWCAST_SIM_TOKEN: %d, want 200", got)
	}
	stop()

	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"sim", "--addr", "127.0.0.1:0", "--token", "short"}, &out, &errb); code != 2 {
		t.Errorf("--token short: exit %d (%s), want 2", code, errb.String())
	}
}

// The demo's simulator is announced with its control token; without the
// token it answers nothing.
func TestDemoAnnouncesItsSimulator(t *testing.T) {
	m, stop := startCLI(t, regexp.MustCompile(`simulator: (http://\S+) \(control token (\S+)\)`),
		"demo", "--addr", "127.0.0.1:0", "--no-example", "--log-level", "error")
	defer stop()
	if got := getStatus(t, m[1]+"/sim/keys", ""); got != http.StatusUnauthorized {
		t.Errorf("GET /sim/keys without the token: %d, want 401", got)
	}
	if got := getStatus(t, m[1]+"/sim/keys", m[2]); got != http.StatusOK {
		t.Errorf("GET /sim/keys with the token: %d, want 200", got)
	}
}

// --telnyx-addr serves the Telnyx API on its own address and prints it as
// Telnyx's API base; Twilio's stays the shared one.
func TestSimProviderAddrs(t *testing.T) {
	m, stop := startCLI(t, regexp.MustCompile(`listening on (http://\S+) [\s\S]*CREWCAST_TELNYX_API_BASE=(\S+)\n[\s\S]*CREWCAST_TWILIO_API_BASE=(\S+)\n`),
		"sim", "--addr", "127.0.0.1:0", "--telnyx-addr", "127.0.0.1:0", "--token", "a-sim-token-for-this-test-0123")
	shared, tnx, tw := m[1], m[2], m[3]
	if tnx == shared || tw != shared || !strings.HasPrefix(tnx, "http://127.0.0.1:") {
		t.Errorf("bases: shared %s, telnyx %s, twilio %s", shared, tnx, tw)
	}
	// The provider's own listener serves the same handler (the control plane too).
	if got := getStatus(t, tnx+"/sim/ledger", "a-sim-token-for-this-test-0123"); got != http.StatusOK {
		t.Errorf("GET /sim/ledger on the telnyx address: %d", got)
	}
	if code := stop(); code != 0 {
		t.Errorf("sim exited %d", code)
	}
}
