package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/test/internal/testproc"
)

// TestREADMEWalkthrough follows README.md's "From clone to a sent message"
// as a new user would, so the README cannot rot: it reads the two shell
// blocks marked <!-- walkthrough: server --> and <!-- walkthrough: client
// -->, starts the server block's one command (the demo) in a fresh
// directory, pastes the export lines the demo printed in place of the
// README's sample ones, and runs the client block with bash -e. The only
// changes to what the README says: `go run ./cmd/crewcast` is the binary
// TestMain built, and the demo listens on a free port. Then it stops the
// demo, starts the same command again, and checks that the data and the
// key carried over (--data).
func TestREADMEWalkthrough(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README's walkthrough uses curl, which is not on the PATH")
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	serverBlock := markedBlock(t, string(readme), "server")
	clientBlock := markedBlock(t, string(readme), "client")
	serverCmds := commands(serverBlock)
	if len(serverCmds) != 1 || !strings.HasPrefix(serverCmds[0], "go run ./cmd/crewcast demo") {
		t.Fatalf("the server block should hold one `go run ./cmd/crewcast demo` command, has %q", serverCmds)
	}
	checkREADMEFirstRun(t, string(readme))
	dir := t.TempDir()

	demo, exports := startREADMEDemo(t, dir, serverCmds[0], 1)
	script := pasteExports(t, clientBlock, exports)
	script = strings.ReplaceAll(script, "go run ./cmd/crewcast", crewcastBin)
	// The last command prints $GROUP's id, so the restart below can look at it.
	script += "\necho \"walkthrough-group=$GROUP\"\n"

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	began := time.Now()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = testproc.CleanEnv(os.Environ())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's client block failed (%v) after %s; its output:\n%s", err, time.Since(began).Round(time.Millisecond), out.String())
	}
	t.Logf("client block ran in %s", time.Since(began).Round(time.Millisecond))
	text := out.String()
	for _, want := range []string{
		"complete 2/2 delivered",       // send followed to the end
		"NUMBER",                       // status printed its table
		"created send key",             // keys create went through the API
		`"status":"sending"`,           // curl created a group
		"+15550100001", "+15550100002", // report deliveries listed them
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the walkthrough's output lacks %q:\n%s", want, text)
		}
	}
	// The walkthrough writes its files (crew.csv) into a temporary folder,
	// not where the reader stands (the repository root): only the demo's
	// --data directory may appear there.
	if ents, err := os.ReadDir(dir); err != nil {
		t.Fatal(err)
	} else {
		for _, e := range ents {
			if e.Name() != "crewcast-demo" {
				t.Errorf("the walkthrough left %s in the working directory; write it into a temporary folder", e.Name())
			}
		}
	}
	m := regexp.MustCompile(`walkthrough-group=(\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no group id from the walkthrough:\n%s", text)
	}
	group := m[1]

	// Ctrl-C, and the same command again: same key, same data.
	if err := demo.Stop(30 * time.Second); err != nil {
		t.Fatalf("demo on SIGTERM: %v", err)
	}
	_, again := startREADMEDemo(t, dir, serverCmds[0], 2)
	if again["CREWCAST_KEY"] != exports["CREWCAST_KEY"] {
		t.Errorf("the second run printed a different key: --data did not keep it")
	}
	status := exec.CommandContext(ctx, crewcastBin, "status", group)
	status.Env = append(testproc.CleanEnv(os.Environ()), "CREWCAST_URL="+again["CREWCAST_URL"], "CREWCAST_KEY="+again["CREWCAST_KEY"])
	if b, err := status.CombinedOutput(); err != nil || !strings.Contains(string(b), group) {
		t.Errorf("after a restart, status %s: %v\n%s", group, err, b)
	}
}

// startREADMEDemo runs the README's demo command in dir on a free port and
// returns it with the variables of the export lines it printed.
func startREADMEDemo(t *testing.T, dir, command string, run int) (*testproc.Proc, map[string]string) {
	t.Helper()
	args := strings.Fields(strings.TrimPrefix(command, "go run ./cmd/crewcast"))
	args = append(args, "--addr", "127.0.0.1:0")
	// sh changes directory and execs the binary, so the process is the demo
	// itself (signals and Pdeathsig reach it).
	name := "demo-" + string(rune('0'+run))
	p, err := testproc.Start(name, "/bin/sh", append([]string{"-c", `cd "$0" && exec "$@"`, dir, crewcastBin}, args...),
		nil, filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s exited with %v; its output:\n%s", name, p.Err(), testproc.Tail(p.LogPath, 40))
		}
	})
	vars := map[string]string{}
	for _, v := range []string{"CREWCAST_URL", "CREWCAST_KEY"} {
		vars[v] = waitLine(t, p, "export "+v+"=", 60*time.Second)
		if vars[v] == "" {
			t.Fatalf("%s printed an empty %s", name, v)
		}
	}
	if !strings.HasPrefix(vars["CREWCAST_URL"], "http://127.0.0.1:") {
		t.Fatalf("%s: CREWCAST_URL=%q, want a loopback URL", name, vars["CREWCAST_URL"])
	}
	return p, vars
}

// pasteExports replaces the README's sample export lines by the ones the
// demo printed; the README must show exactly the variables the demo prints.
func pasteExports(t *testing.T, block string, vars map[string]string) string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export "); ok {
			name, _, _ := strings.Cut(rest, "=")
			v, known := vars[name]
			if !known {
				t.Fatalf("the README exports %s, which the demo does not print", name)
			}
			seen[name] = true
			line = "export " + name + "=" + v
		}
		out = append(out, line)
	}
	for name := range vars {
		if !seen[name] {
			t.Errorf("the README's client block does not export %s, which the demo prints", name)
		}
	}
	return strings.Join(out, "\n")
}

// markedBlock returns the fenced sh block that follows
// <!-- walkthrough: NAME --> in the README.
func markedBlock(t *testing.T, readme, name string) string {
	t.Helper()
	marker := "<!-- walkthrough: " + name + " -->"
	_, after, ok := strings.Cut(readme, marker)
	if !ok {
		t.Fatalf("README.md has no %s marker", marker)
	}
	after = strings.TrimLeft(after, "\n")
	body, ok := strings.CutPrefix(after, "```sh\n")
	if !ok {
		t.Fatalf("%s is not followed by a ```sh block", marker)
	}
	body, _, ok = strings.Cut(body, "\n```")
	if !ok {
		t.Fatalf("the block after %s does not end", marker)
	}
	return body
}

// commands returns a block's commands: lines without comments, joined
// where they end in a backslash.
func commands(block string) []string {
	var out []string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\")
			continue
		}
		out = append(out, strings.TrimSpace(cur+line))
		cur = ""
	}
	return out
}

// repoRoot is the module's root: two directories above this file.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// checkREADMEFirstRun checks what the README tells a first-time reader
// besides the commands: that the walkthrough's demo and the set-up's both
// want port 8080 (and how to pick another), how to get a bare `crewcast`
// binary (later sections use one), and that quiet hours are off unless set.
func checkREADMEFirstRun(t *testing.T, readme string) {
	t.Helper()
	for _, want := range []string{
		"make build",                   // bin/crewcast
		"go install ./cmd/crewcast",    // crewcast on the PATH
		"--addr 127.0.0.1:8081",        // a second demo beside the first
		"Quiet hours: none by default", // --quiet-hours defaults to ""
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	mk, err := os.ReadFile(filepath.Join(repoRoot(t), "Makefile"))
	if err != nil || !regexp.MustCompile(`(?m)^build:\n\t.*go build -o bin/crewcast \./cmd/crewcast`).Match(bytes.ReplaceAll(mk, []byte("$(GO)"), []byte("go"))) {
		t.Errorf("the Makefile's build target does not build bin/crewcast (%v)", err)
	}
}
