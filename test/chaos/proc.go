package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crewcast/crewcast/test/internal/testproc"
)

// proc is one crewcast process (server or simulator) the harness started,
// with the base URL it announced.
type proc struct {
	*testproc.Proc
	url string
}

// procs tracks every live process so that the harness can kill them all on
// exit, on a panic or on a signal.
type procs struct {
	mu   sync.Mutex
	live map[*proc]struct{}
}

func newProcs() *procs { return &procs{live: map[*proc]struct{}{}} }

// start runs bin (see testproc.Start), appending its output to logPath,
// and waits up to timeout for the stdout line starting with announce.
func (ps *procs) start(ctx context.Context, name, bin string, args, env []string, logPath, announce string, timeout time.Duration) (*proc, error) {
	tp, err := testproc.Start(name, bin, args, env, logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{Proc: tp}
	ps.mu.Lock()
	ps.live[p] = struct{}{}
	ps.mu.Unlock()
	go func() {
		<-tp.Done()
		ps.mu.Lock()
		delete(ps.live, p)
		ps.mu.Unlock()
	}()
	wctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("not within %s", timeout))
	defer cancel()
	if p.url, err = tp.WaitURL(wctx, announce); err != nil {
		tp.Kill()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
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
		p.Kill()
	}
}

// tail returns the last n lines of a log file, for failure reports.
func tail(path string, n int) string { return testproc.Tail(path, n) }
