package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// t6FSSize is the size of the tmpfs the T6 server's database lives on.
const t6FSSize = "24m"

// runT6 is docs/testing.md T6, store errors: a full disk (runT6DiskFull), then
// a read-only database (runT6ReadOnly), each run by runStoreFault.
func runT6(ctx context.Context, h *harness) scenarioResult {
	res := scenarioResult{ran: true}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	for _, run := range []func(context.Context, *harness) scenarioResult{runT6DiskFull, runT6ReadOnly} {
		r := run(ctx, h)
		res.ran = res.ran && r.ran
		res.problems = append(res.problems, r.problems...)
		res.notes = append(res.notes, r.notes...)
		if !r.ran || ctx.Err() != nil {
			break
		}
	}
	return res
}

// runT6DiskFull is T6's disk full: the server's SQLite database lives on
// a small tmpfs of its own, which the harness fills mid fan-out and then
// empties again.
func runT6DiskFull(ctx context.Context, h *harness) scenarioResult {
	dir := filepath.Join(h.dir, "t6-tmpfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return scenarioResult{ran: true, problems: []string{err.Error()}}
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+t6FSSize); err != nil {
		return scenarioResult{notes: []string{"cannot mount a tmpfs (needs root): " + err.Error()}}
	}
	unmounted := false
	unmount := func() {
		if !unmounted {
			unmounted = true
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	}
	h.cleanups = append(h.cleanups, unmount)
	defer unmount()

	filler := filepath.Join(dir, "filler")
	return runStoreFault(ctx, h, storeFault{
		label:  "disk full",
		server: "server-t6",
		db:     filepath.Join(dir, "crewcast.db"),
		impose: func() error { return fillDisk(filler) },
		lift:   func() error { return os.Remove(filler) },
		// Large enough that the write-ahead log must grow.
		padding: 3000,
	})
}

// storeFault is one way of making the store refuse writes.
type storeFault struct {
	label   string // "disk full", for messages
	server  string // the server's name (and log file)
	db      string // its database
	impose  func() error
	lift    func() error
	padding int // bytes added to each reply's text while imposed
}

// runStoreFault runs a fresh server on f.db: a baseline group, then a
// group of 120, and 1.5 s into its fan-out f.impose. For at least 4 s
// (and until 10 refusals, at most 15 s) signed replies must be answered
// 5xx — or 2xx and found in the inbox afterwards, never acknowledged
// without being stored — at least one 5xx is required, the API must keep
// answering reads and the server must not exit. After f.lift webhooks
// must be acknowledged again within 20 s without a restart, the
// interrupted group must finish and a new group must complete.
func runStoreFault(ctx context.Context, h *harness, f storeFault) (res scenarioResult) {
	res = scenarioResult{ran: true}
	srv := h.newServer(f.server, f.db, "--send-rate", "20")
	if err := srv.start(ctx); err != nil {
		return res.fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()
	ga, _, err := srv.newGroup(ctx, "t6 "+f.label+" before", 20, "")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	if _, err := srv.drain(ctx, []string{ga.ID}, 30*time.Second, false); err != nil {
		return res.fail("baseline group: %v", err)
	}
	gb, bNums, err := srv.newGroup(ctx, "t6 "+f.label+" during", 120, "")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		return res.fail("%v", err)
	}

	lifted := false
	lift := func() error {
		if lifted {
			return nil
		}
		lifted = true
		return f.lift()
	}
	defer func() { _ = lift() }() // on every early return: the server must be stoppable
	if err := f.impose(); err != nil {
		return res.fail("%s: %v", f.label, err)
	}
	h.logf("T6: %s on %s", f.label, f.server)
	// The condition lasts at least 4 s, so the simulator's own webhooks
	// meet it too.
	var acked []string
	refused, reads := 0, 0
	begin := time.Now()
	for i := 0; time.Since(begin) < 15*time.Second && (refused < 10 || time.Since(begin) < 4*time.Second) && ctx.Err() == nil; i++ {
		id := newEventID()
		text := fmt.Sprintf("t6 %s reply %d %s", f.label, i, strings.Repeat("x", f.padding))
		body := receivedEvent(id, "chaos-in-"+newEventID(), bNums[i%len(bNums)], gb.From, text, time.Now())
		t0 := time.Now()
		code := h.sign.sign(body, time.Now()).post(ctx, srv.api.base)
		switch {
		case code/100 == 2:
			h.noteCrafted(time.Since(t0))
			acked = append(acked, id)
		case code >= 500:
			refused++
		default:
			res.problems = append(res.problems, fmt.Sprintf("%s: a webhook was answered %d; want 2xx (stored) or 5xx", f.label, code))
		}
		if i%10 == 0 {
			if _, err := srv.api.group(ctx, gb.ID); err != nil {
				res.problems = append(res.problems, f.label+": reading the group failed: "+err.Error())
			} else {
				reads++
			}
		}
		_ = sleep(ctx, 50*time.Millisecond)
	}
	if !srv.p.Alive() {
		return res.fail("the server exited on %s; log %s:\n%s", f.label, srv.logPath, tail(srv.logPath, 20))
	}
	if refused == 0 {
		return res.fail("%s lasted %s and no webhook was refused: the condition had no effect", f.label, time.Since(begin).Round(time.Second))
	}
	res.notes = append(res.notes, fmt.Sprintf("%s: %d webhooks refused with 5xx, %d acknowledged (stored), %d group reads answered", f.label, refused, len(acked), reads))

	if err := lift(); err != nil {
		return res.fail("lift %s: %v", f.label, err)
	}
	back := time.Now()
	recovered := false
	for time.Since(back) < 20*time.Second && ctx.Err() == nil {
		id := newEventID()
		body := receivedEvent(id, "chaos-in-"+newEventID(), bNums[0], gb.From, "t6 "+f.label+" over", time.Now())
		t0 := time.Now()
		if code := h.sign.sign(body, time.Now()).post(ctx, srv.api.base); code/100 == 2 {
			h.noteCrafted(time.Since(t0))
			acked = append(acked, id)
			recovered = true
			break
		}
		_ = sleep(ctx, 200*time.Millisecond) // polling an external process
	}
	if !recovered {
		return res.fail("webhooks still refused 20s after %s was lifted", f.label)
	}
	res.notes = append(res.notes, fmt.Sprintf("%s lifted: webhooks acknowledged again after %s", f.label, time.Since(back).Round(time.Millisecond)))
	if _, err := srv.drain(ctx, []string{gb.ID}, 60*time.Second, false); err != nil {
		res.problems = append(res.problems, "the interrupted group did not finish after "+f.label+" was lifted: "+err.Error())
	}
	gc, _, err := srv.newGroup(ctx, "t6 "+f.label+" after", 20, "")
	if err != nil {
		return res.fail("create group after recovery: %v", err)
	}
	if _, err := srv.drain(ctx, []string{gc.ID}, 30*time.Second, false); err != nil {
		res.problems = append(res.problems, "a new group after recovery: "+err.Error())
	}
	// Everything acknowledged was stored.
	for _, id := range acked {
		n, err := inboxRows(ctx, srv.db, id)
		if err != nil {
			return res.fail("inbox: %v", err)
		}
		if n != 1 {
			h.mu.Lock()
			h.lost++
			h.mu.Unlock()
			res.problems = append(res.problems, fmt.Sprintf("LOST: webhook %s was acknowledged during %s and has %d inbox rows", id, f.label, n))
		}
	}
	probs, _ := srv.finalCheck(ctx, []string{ga.ID, gb.ID, gc.ID})
	res.problems = append(res.problems, probs...)
	return res
}

// fillDisk writes path until the file system is full.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 512} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				if errors.Is(err, syscall.ENOSPC) {
					break
				}
				return err
			}
		}
	}
	return nil
}
