package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// streamc has no overall timeout: an event stream stays open for minutes.
var streamc = &http.Client{Transport: &http.Transport{Proxy: nil}}

// follower is an SSE client that behaves like a browser's EventSource
// behind a load balancer (T13): it reads one event stream, and when the
// node it reads from goes away it reconnects to the next node with
// Last-Event-ID set to the last id it saw. It records every event it
// received, so the scenario can check the stream was gap-free across
// nodes.
type follower struct {
	path  string       // "/v1/stream" or "/v1/groups/{id}/stream"
	nodes func() []api // the nodes' current addresses

	mu         sync.Mutex
	last       uint64              // Last-Event-ID
	seqs       map[string][]uint64 // group id → seqs in arrival order
	reconnects int
	errs       []string
}

func newFollower(path string, nodes func() []api) *follower {
	return &follower{path: path, nodes: nodes, seqs: map[string][]uint64{}}
}

// run follows the stream until ctx ends, starting at node first.
func (f *follower) run(ctx context.Context, first int) {
	for i := first; ctx.Err() == nil; i++ {
		ns := f.nodes()
		err := f.read(ctx, ns[i%len(ns)])
		if ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		f.reconnects++
		if err != nil && len(f.errs) < 20 {
			f.errs = append(f.errs, err.Error())
		}
		f.mu.Unlock()
		_ = sleep(ctx, 50*time.Millisecond)
	}
}

// read reads one connection until it ends.
func (f *follower) read(ctx context.Context, a api) error {
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, "GET", a.base+f.path+"?after=0", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Accept", "text/event-stream")
	if last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
	}
	resp, err := streamc.Do(req)
	if err != nil {
		return nil // the node is down: try the next one
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %d", a.base, f.path, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var id, event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event == "change" && id != "" {
				if err := f.record(id, data); err != nil {
					return err
				}
			}
			id, event, data = "", "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return nil
}

func (f *follower) record(id, data string) error {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return fmt.Errorf("event id %q: %w", id, err)
	}
	var c struct {
		GroupID string `json:"group_id"`
		Seq     uint64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return fmt.Errorf("event %s: %w", id, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = n
	f.seqs[c.GroupID] = append(f.seqs[c.GroupID], c.Seq)
	return nil
}

// caughtUp reports whether the follower has seen seq head of every group.
func (f *follower) caughtUp(heads map[string]uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, head := range heads {
		if !slices.Contains(f.seqs[id], head) {
			return false
		}
	}
	return true
}

// check compares what the follower received with each group's journal
// (seqs 1..heads[id]): every event must have arrived (gap-free), in order
// within its group. Duplicates are counted, not failed: a stream resumes
// after Last-Event-ID, so there should be none.
func (f *follower) check(heads map[string]uint64) (problems []string, events, dups int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, head := range heads {
		got := f.seqs[id]
		seen := map[uint64]bool{}
		var prev uint64
		for _, s := range got {
			if seen[s] {
				dups++
				continue
			}
			seen[s] = true
			events++
			if s < prev {
				problems = append(problems, fmt.Sprintf("%s: group %s event %d arrived after %d", f.path, id, s, prev))
			}
			prev = s
		}
		var missing []uint64
		for s := uint64(1); s <= head; s++ {
			if !seen[s] {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("%s: group %s: %d of %d events never arrived (first %v) across %d reconnects",
				f.path, id, len(missing), head, missing[:min(len(missing), 5)], f.reconnects))
		}
	}
	return problems, events, dups
}

// streamPath is a group's event stream.
func streamPath(id string) string { return "/v1/groups/" + url.PathEscape(id) + "/stream" }
