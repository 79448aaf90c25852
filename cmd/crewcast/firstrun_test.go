package main

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// closedURL is the URL of a local port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	_ = ln.Close()
	return u
}

// Required arguments are checked before any request: against a server
// that is not there, a missing one is still exit 2 naming the flag.
func TestRequiredArgumentsCheckedLocally(t *testing.T) {
	down := closedURL(t)
	past := time.Now().Add(-time.Hour).Format(time.RFC3339)
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"send", "--to", "+15550100001", "--text", "x"}, "--from"},
		{[]string{"send", "--from", "+15550100000", "--text", "x"}, "--to"},
		{[]string{"send", "--from", "+15550100000", "--to", "+15550100001"}, "--text"},
		{[]string{"send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x", "--send-at", past}, "--send-at"},
		{[]string{"status"}, "group ID"},
		{[]string{"cancel"}, "group ID"},
		{[]string{"retry", "grp1"}, "GROUP NUMBER or GROUP --all"},
		{[]string{"retry", "grp1", "+15550100001", "--all"}, "not both"},
		{[]string{"resolve", "grp1", "+15550100001"}, "--outcome"},
		{[]string{"keys", "create", "--name", "x"}, "--scope"},
		{[]string{"contacts", "import"}, "CSV file"},
		{[]string{"users", "create", "--email", "a@example.com"}, "--name"},
		// Already local before issue 33; kept so that they stay so.
		{[]string{"erase"}, "--number"},
		{[]string{"report"}, "deliveries|summary"},
		{[]string{"keys", "revoke"}, "key ID"},
		{[]string{"crews", "show"}, "crew name"},
	} {
		code, out, errs := runCLI(context.Background(), append(c.args, "--url", down, "--key", "cc_x")...)
		if code != exitUsage || !strings.Contains(errs, c.msg) || strings.Contains(errs, "cannot reach") {
			t.Errorf("%v: exit %d, stderr %q (stdout %q); want 2 naming %s", c.args, code, errs, out, c.msg)
		}
	}
}

// With the server down, a client command says so in words, with the URL
// it tried, and exits 1.
func TestServerDown(t *testing.T) {
	down := closedURL(t)
	for _, args := range [][]string{
		{"status", "grp1"},
		{"send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x"},
		{"retry", "grp1", "--all"},
	} {
		code, _, errs := runCLI(context.Background(), append(args, "--url", down, "--key", "cc_x")...)
		want := "cannot reach crewcast at " + down + " — is it running? (crewcast demo)"
		if code != exitFailed || !strings.Contains(errs, want) || strings.Contains(errs, "dial tcp") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", args, code, errs, want)
		}
	}
}

// A second demo on a busy port says so and suggests another --addr.
func TestDemoBusyPort(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	code, _, errs := runCLI(context.Background(), "demo", "--addr", ln.Addr().String(), "--no-example", "--log-level", "error")
	want := "port " + strconv.Itoa(port) + " is in use — is another crewcast demo running? Use --addr 127.0.0.1:" + strconv.Itoa(port+1)
	if code != exitFailed || !strings.Contains(errs, want) {
		t.Fatalf("demo on a busy port: exit %d, stderr %q; want %q", code, errs, want)
	}
}

// retry GROUP --all retries every failed recipient (POST
// /v1/groups/{id}/retry-failed) and says how many.
func TestRetryAll(t *testing.T) {
	e := newCLIEnv(t)
	id, _, err := e.fake.Create(context.Background(), group.Request{From: "+15550100000", Text: "x",
		To: []string{"+15550100001", "+15550100002", "+15550100003"}}, tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range []bool{false, true, false} {
		if err := e.fake.deliver(id, i, ok); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := e.client("send", "retry", id, "--all")
	if code != 0 || !strings.Contains(out, "retried 2 failed recipients") {
		t.Errorf("retry --all: %d %q %q", code, out, errs)
	}
	e.fake.mu.Lock()
	got := strings.Join(e.fake.actions, "; ")
	e.fake.mu.Unlock()
	if want := "retry " + id + " +15550100001; retry " + id + " +15550100003"; got != want {
		t.Errorf("tracker saw %q, want %q", got, want)
	}
}

// With --log-format json every line serve and demo print on stdout is a
// JSON object (log shippers read it), and so is every log line.
func TestLogFormatJSONStdout(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, c := range []struct {
		want string
		args []string
	}{
		{"openssl rand", []string{"serve", "--addr", "127.0.0.1:0", "--db", t.TempDir() + "/c.db", "--log-format", "json"}},
		{"Press Ctrl-C to stop", []string{"demo", "--addr", "127.0.0.1:0", "--no-example", "--log-format", "json"}},
	} {
		code, out, errs := runUntilLine(t, c.want, c.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", c.args, code, out, errs)
		}
		n := 0
		for stream, text := range map[string]string{"stdout": out, "stderr": errs} {
			for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
				if line == "" && text == "" {
					continue
				}
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Errorf("%s %s: not JSON: %q", c.args[0], stream, line)
				} else if stream == "stdout" {
					n++
				}
			}
		}
		if n < 3 || !strings.Contains(out, "shutting down") {
			t.Errorf("%s: %d JSON lines on stdout:\n%s", c.args[0], n, out)
		}
	}
}
