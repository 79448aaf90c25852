package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/server"
)

// runUntilLine runs the CLI in-process until its stdout holds want, then
// interrupts it (Ctrl-C) and returns its exit code and output.
func runUntilLine(t *testing.T, want string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{line: make(chan struct{}, 1)}
	var errb bytes.Buffer
	codeC := make(chan int, 1)
	go func() { codeC <- run(ctx, args, out, &errb) }()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		select {
		case <-out.line:
		case code := <-codeC:
			t.Fatalf("%v exited %d before printing %q:\n%s\n%s", args, code, want, out.String(), errb.String())
		case <-deadline:
			t.Fatalf("%v printed no %q within 30s:\n%s", args, want, out.String())
		}
	}
	cancel()
	return <-codeC, out.String(), errb.String()
}

// A temporary demo removes its directory when it stops, and clears the
// directories of earlier demos that were killed.
func TestDemoTemporaryDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A directory left by a demo that was killed: its process is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, demoTempPrefix+"stale")
	live := filepath.Join(tmp, demoTempPrefix+"live")
	for dir, pid := range map[string]int{stale: dead.Process.Pid, live: os.Getpid()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, demoPIDFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runUntilLine(t, "export CREWCAST_KEY=", "demo", "--addr", "127.0.0.1:0", "--no-example", "--log-level", "error")
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) || !strings.Contains(errs, "left behind by an earlier demo") {
		t.Errorf("the killed demo's directory is still there (%v); stderr %q", err, errs)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a running demo's directory was removed: %v", err)
	}
	if !strings.Contains(out, "DEMO PROVIDER: nothing real is sent") || !strings.Contains(out, "temporary: removed when the demo stops") {
		t.Errorf("demo output:\n%s", out)
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, demoTempPrefix+"*"))
	if len(dirs) != 1 || dirs[0] != live {
		t.Errorf("after the demo stopped, %v remain; want only %s", dirs, live)
	}
}

// With --data the key is kept (readable by its owner only) and printed
// again by the next run, and the example group is made once.
func TestDemoDataKeepsKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	args := []string{"demo", "--addr", "127.0.0.1:0", "--data", dir, "--log-level", "error"}
	_, out1, _ := runUntilLine(t, "export CREWCAST_KEY=", args...)
	_, out2, _ := runUntilLine(t, "export CREWCAST_KEY=", args...)
	key := func(out string) string {
		for _, l := range lines(out) {
			if k, ok := strings.CutPrefix(l, "export CREWCAST_KEY="); ok {
				return k
			}
		}
		return ""
	}
	if key(out1) == "" || key(out1) != key(out2) {
		t.Errorf("keys %q and %q, want the same one", key(out1), key(out2))
	}
	if !strings.Contains(out1, "/#/groups/") || !strings.Contains(out2, "created on the first run") {
		t.Errorf("example group made again:\n%s\n%s", out1, out2)
	}
	if !strings.Contains(out2, "kept in "+dir) {
		t.Errorf("does not say where its data is:\n%s", out2)
	}
	st, err := os.Stat(filepath.Join(dir, demoKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", st, err)
	}
}

// serve says when nothing real is sent and how to make the first key.
func TestServeStartupMessages(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	_, out, _ := runUntilLine(t, "crewcast keys create", "serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "error")
	for _, want := range []string{"DEMO PROVIDER: nothing real is sent", "No API key exists yet",
		"crewcast keys create --db " + db + " --scope admin", "CREWCAST_ADMIN_KEY", "database: " + db} {
		if !strings.Contains(out, want) {
			t.Errorf("serve output lacks %q:\n%s", want, out)
		}
	}
	var b bytes.Buffer
	printProviderNotes(&b, server.Config{Provider: server.ProviderTelnyx, PublicURL: "https://crew.example.com/"}, "http://127.0.0.1:8080")
	if want := "Telnyx: set your Messaging Profile's webhook URL to https://crew.example.com/webhooks/telnyx"; !strings.Contains(b.String(), want) ||
		strings.Contains(b.String(), "no --public-url") {
		t.Errorf("telnyx notes:\n%s", b.String())
	}
	b.Reset()
	printProviderNotes(&b, server.Config{Provider: server.ProviderTwilio}, "http://127.0.0.1:8080")
	if !strings.Contains(b.String(), `"A message comes in" webhook (HTTP POST) to http://127.0.0.1:8080/webhooks/twilio`) ||
		!strings.Contains(b.String(), "no --public-url") {
		t.Errorf("twilio notes:\n%s", b.String())
	}
	if got := dbLabel("postgres://crew:s3cret@db:5432/crewcast"); strings.Contains(got, "s3cret") {
		t.Errorf("dbLabel shows the password: %q", got)
	}
}
