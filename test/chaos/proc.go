package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one crewcast process (server or simulator) the harness started.
// Its stdout and stderr go to one log file; the first stdout line that
// starts with the announce prefix gives its base URL.
type proc struct {
	name    string
	cmd     *exec.Cmd
	url     string
	logPath string
	done    chan struct{} // closed when the process has exited
	exitErr error
}

// procs tracks every live process so that the harness can kill them all on
// exit, on a panic or on a signal.
type procs struct {
	mu   sync.Mutex
	live map[*proc]struct{}
}

func newProcs() *procs { return &procs{live: map[*proc]struct{}{}} }

// start runs bin with args and env (added to a copy of the harness's
// environment without any CREWCAST_ variable), appending its output to
// logPath, and waits up to timeout for the announce line.
func (ps *procs) start(ctx context.Context, name, bin string, args, env []string, logPath, announce string, timeout time.Duration) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	fmt.Fprintf(logf, "==== %s start %s %s\n", time.Now().Format(time.RFC3339Nano), name, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(cleanEnv(os.Environ()), env...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// Its own process group, and SIGKILL if the harness dies without
	// cleaning up: a chaos run must never leave servers behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	ps.mu.Lock()
	ps.live[p] = struct{}{}
	ps.mu.Unlock()
	urlc := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if u, ok := announcedURL(line, announce); ok {
				select {
				case urlc <- u:
				default:
				}
			}
		}
		_, _ = io.Copy(logf, stdout)
	}()
	go func() {
		<-copied
		p.exitErr = cmd.Wait()
		fmt.Fprintf(logf, "==== %s exit %s: %v\n", time.Now().Format(time.RFC3339Nano), name, p.exitErr)
		_ = logf.Close()
		ps.mu.Lock()
		delete(ps.live, p)
		ps.mu.Unlock()
		close(p.done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case p.url = <-urlc:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("start %s: exited before listening (%v); see %s", name, p.exitErr, logPath)
	case <-t.C:
		p.kill()
		return nil, fmt.Errorf("start %s: no %q line within %s; see %s", name, announce, timeout, logPath)
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
}

// announcedURL extracts the URL from a line such as
// "crewcast serving on http://127.0.0.1:41234 (provider telnyx, …)".
func announcedURL(line, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", false
	}
	u, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	if !strings.HasPrefix(u, "http://") {
		return "", false
	}
	return u, true
}

// cleanEnv drops CREWCAST_ variables, so that only what the harness sets
// configures the processes under test.
func cleanEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CREWCAST_") {
			out = append(out, kv)
		}
	}
	return out
}

// pid returns the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// alive reports whether the process has not exited.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process group and waits for the exit.
func (p *proc) kill() {
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// stop asks the process to shut down (SIGTERM) and kills it if it has not
// exited within grace. It reports whether the exit was clean.
func (p *proc) stop(grace time.Duration) error {
	if !p.alive() {
		return fmt.Errorf("%s had already exited: %v", p.name, p.exitErr)
	}
	_ = syscall.Kill(p.pid(), syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.exitErr
	case <-t.C:
		p.kill()
		return errors.New(p.name + " did not stop within " + grace.String() + "; killed")
	}
}

// killAll kills every live process; the harness calls it on every exit path.
func (ps *procs) killAll() {
	ps.mu.Lock()
	list := make([]*proc, 0, len(ps.live))
	for p := range ps.live {
		list = append(list, p)
	}
	ps.mu.Unlock()
	for _, p := range list {
		p.kill()
	}
}

// tail returns the last n lines of a log file, for failure reports.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
