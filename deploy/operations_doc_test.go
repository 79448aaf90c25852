package deploy_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// opsBlocks returns the shell blocks of docs/operations.md marked
// <!-- ops-test -->, in order.
func opsBlocks(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- ops-test -->\\s*```sh\\n(.*?)```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	return out
}

// TestOperationsDoc runs the walkthrough of docs/operations.md as one
// script from the repository root: install (build), migrate, doctor, serve,
// send a group, metrics, backup of the running server, restore refused
// while it runs, stop, restore, upgrade. The system paths and the port are
// replaced by a temporary directory and a free port; nothing else changes.
func TestOperationsDoc(t *testing.T) {
	blocks := opsBlocks(t)
	if len(blocks) < 7 {
		t.Fatalf("found %d ops-test blocks in docs/operations.md", len(blocks))
	}
	script := "set -euo pipefail\n" + strings.Join(blocks, "\n")
	for _, want := range []string{"crewcast backup", "crewcast restore", "crewcast doctor", "crewcast migrate", "/metrics"} {
		if !strings.Contains(script, want) {
			t.Fatalf("the tested walkthrough lacks %q", want)
		}
	}
	tmp := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	script = strings.NewReplacer(
		"/usr/local/bin", filepath.Join(tmp, "bin"),
		"/var/lib/crewcast", filepath.Join(tmp, "lib"),
		"/var/backups/crewcast", filepath.Join(tmp, "backups"),
		"127.0.0.1:8080", "127.0.0.1:"+strconv.Itoa(port),
	).Replace(script)
	// If the script fails part-way, stop a server it left running.
	script = "PS4='+ $(date +%T.%N) '; set -x\n" + script
	script = "trap 'if [ -n \"${SERVER:-}\" ]; then kill $SERVER 2>/dev/null || true; fi' EXIT\n" + script

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = ".." // the repository root, as the doc assumes
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CREWCAST_") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+filepath.Join(tmp, "bin")+":"+os.Getenv("PATH"))
	if err := os.MkdirAll(filepath.Join(tmp, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("walkthrough failed: %v\n%s", err, text)
	}
	for _, want := range []string{
		"no problems found",         // doctor, more than once
		"backup written: ",          // backup of the running server
		"open in another process",   // restore refused while it runs
		"restored " + tmp + "/lib/", // restore after it stopped
		"crewcast_groups_paused 0",  // metrics
		"X-Request-Id: ",            // request ids
	} {
		if !strings.Contains(text, want) {
			t.Errorf("walkthrough output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output (traced):\n%s", text)
	}
	bak, _ := filepath.Glob(filepath.Join(tmp, "lib", "crewcast.db.replaced-*"))
	if len(bak) == 0 {
		t.Error("restore did not keep the replaced database")
	}
}
