// Package testproc runs crewcast processes for the process-level tests
// (test/e2e and the test/chaos harness). Each process runs in its own
// process group and dies with the program that started it (Pdeathsig), its
// stdout and stderr are appended to a log file, and its stdout lines are
// kept so that a caller can wait for one (the line announcing its URL).
package testproc

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

// Proc is one started process.
type Proc struct {
	Name    string
	LogPath string

	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited and its output is read
	err  error         // cmd.Wait's result, set before done closes

	mu    sync.Mutex
	lines []string      // stdout so far
	more  chan struct{} // closed and replaced when a line arrives
}

// Start runs bin with args. Its environment is this process's without any
// CREWCAST_ variable (so only what the caller sets configures it), plus
// env. Its output is appended to logPath between start and exit markers.
func Start(name, bin string, args, env []string, logPath string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	fmt.Fprintf(logf, "==== %s start %s %s\n", time.Now().Format(time.RFC3339Nano), name, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(CleanEnv(os.Environ()), env...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// Its own group, so that Kill reaches anything it forks; SIGKILL if
	// the starting program dies first: a run must never leave processes
	// behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{}), more: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
		}
		_, _ = io.Copy(logf, stdout) // the rest of an over-long line
		p.err = cmd.Wait()
		fmt.Fprintf(logf, "==== %s exit %s: %v\n", time.Now().Format(time.RFC3339Nano), name, p.err)
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

// WaitLine waits until ctx is done for a stdout line that starts with
// prefix (after leading blanks) and returns the rest of it, trimmed.
func (p *Proc) WaitLine(ctx context.Context, prefix string) (string, error) {
	seen := 0
	for {
		p.mu.Lock()
		lines, more := p.lines, p.more
		p.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(lines[seen]), prefix); ok {
				return strings.TrimSpace(rest), nil
			}
		}
		select {
		case <-more:
		case <-p.done:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if seen == n {
				return "", fmt.Errorf("%s exited (%v) before printing %q; see %s", p.Name, p.err, prefix, p.LogPath)
			}
		case <-ctx.Done():
			return "", fmt.Errorf("%s printed no %q line: %w; see %s", p.Name, prefix, context.Cause(ctx), p.LogPath)
		}
	}
}

// WaitURL waits for the line that starts with prefix and returns the
// http URL that follows it, as in
// "crewcast serving on http://127.0.0.1:41234 (provider telnyx, …)".
func (p *Proc) WaitURL(ctx context.Context, prefix string) (string, error) {
	rest, err := p.WaitLine(ctx, prefix)
	if err != nil {
		return "", err
	}
	u, ok := AnnouncedURL(rest)
	if !ok {
		return "", fmt.Errorf("%s announced %q, want an http URL", p.Name, rest)
	}
	return u, nil
}

// AnnouncedURL returns the first field of rest when it is an http URL.
func AnnouncedURL(rest string) (string, bool) {
	u, _, _ := strings.Cut(strings.TrimSpace(rest), " ")
	return u, strings.HasPrefix(u, "http://")
}

// Pid is the process id (and its process group's).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited and its output is read.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for status 0); valid after Done.
func (p *Proc) Err() error { return p.err }

// Alive reports whether the process has not exited.
func (p *Proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the process group and waits for the exit; a no-op
// once the process has exited.
func (p *Proc) Kill() {
	if !p.Alive() {
		return
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to shut down (SIGTERM) and kills it if it has not
// exited within grace. It returns the exit error (nil for a clean exit),
// and an error when the process had already exited or had to be killed.
func (p *Proc) Stop(grace time.Duration) error {
	if !p.Alive() {
		return fmt.Errorf("%s had already exited: %v", p.Name, p.err)
	}
	_ = syscall.Kill(p.Pid(), syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		p.Kill()
		return errors.New(p.Name + " did not stop within " + grace.String() + " of SIGTERM; killed")
	}
}

// KilledBySIGKILL reports whether the process died of SIGKILL.
func (p *Proc) KilledBySIGKILL() bool {
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// CleanEnv drops the CREWCAST_ variables from env.
func CleanEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CREWCAST_") {
			out = append(out, kv)
		}
	}
	return out
}

// Tail returns the last n lines of a file, for failure reports.
func Tail(path string, n int) string {
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
