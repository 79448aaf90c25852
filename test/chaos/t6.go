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

// runT6 is testing.md T6, store errors: a full disk, then a read-only
// database (runT6ReadOnly).
func runT6(ctx context.Context, h *harness) scenarioResult {
	full := runT6DiskFull(ctx, h)
	if !full.ran || ctx.Err() != nil {
		return full
	}
	ro := runT6ReadOnly(ctx, h)
	full.ran = full.ran && ro.ran
	full.problems = append(full.problems, ro.problems...)
	full.notes = append(full.notes, ro.notes...)
	return full
}

// runT6DiskFull is T6's disk full: the server's SQLite database lives on
// a small tmpfs of its own; mid fan-out the harness fills it. Webhooks
// must then be refused (5xx), never acknowledged without being stored;
// once the space is back the server must answer 2xx again, finish the
// interrupted group and run a new one — without a restart.
func runT6DiskFull(ctx context.Context, h *harness) scenarioResult {
	res := scenarioResult{ran: true}
	fail := func(format string, args ...any) scenarioResult {
		res.problems = append(res.problems, fmt.Sprintf(format, args...))
		return res
	}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	dir := filepath.Join(h.dir, "t6-tmpfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
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

	srv := h.newServer("server-t6", filepath.Join(dir, "crewcast.db"), "--send-rate", "20")
	if err := srv.start(ctx); err != nil {
		return fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()
	ga, _, err := srv.newGroup(ctx, "t6 before", 20, "")
	if err != nil {
		return fail("create group: %v", err)
	}
	if _, err := srv.drain(ctx, []string{ga.ID}, 30*time.Second, false); err != nil {
		return fail("baseline group: %v", err)
	}
	gb, bNums, err := srv.newGroup(ctx, "t6 during", 120, "")
	if err != nil {
		return fail("create group: %v", err)
	}
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		return fail("%v", err)
	}

	// Disk full.
	filler := filepath.Join(dir, "filler")
	if err := fillDisk(filler); err != nil {
		return fail("fill the disk: %v", err)
	}
	h.logf("T6: %s is full", dir)
	// Webhooks while full: replies from the group's recipients, large
	// enough that the write-ahead log must grow. The disk stays full for
	// at least 4 s, so the simulator's own webhooks meet it too.
	var acked []string
	refused := 0
	full := time.Now()
	for i := 0; time.Since(full) < 15*time.Second && (refused < 10 || time.Since(full) < 4*time.Second) && ctx.Err() == nil; i++ {
		id := newEventID()
		text := fmt.Sprintf("t6 reply %d %s", i, strings.Repeat("x", 3000))
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
			res.problems = append(res.problems, fmt.Sprintf("while full: a webhook was answered %d; want 2xx (stored) or 5xx", code))
		}
		_ = sleep(ctx, 50*time.Millisecond)
	}
	if !srv.p.alive() {
		return fail("the server exited on a full disk; log %s:\n%s", srv.logPath, tail(srv.logPath, 20))
	}
	if refused == 0 {
		return fail("the disk was full for %s and no webhook was refused: the condition had no effect", time.Since(full).Round(time.Second))
	}
	res.notes = append(res.notes, fmt.Sprintf("disk full: %d webhooks refused with 5xx, %d acknowledged (stored in space still free)", refused, len(acked)))

	// Space back.
	if err := os.Remove(filler); err != nil {
		return fail("remove filler: %v", err)
	}
	back := time.Now()
	recovered := false
	for time.Since(back) < 20*time.Second && ctx.Err() == nil {
		id := newEventID()
		body := receivedEvent(id, "chaos-in-"+newEventID(), bNums[0], gb.From, "t6 after", time.Now())
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
		return fail("webhooks still refused 20s after the space came back")
	}
	res.notes = append(res.notes, fmt.Sprintf("space back: webhooks acknowledged again after %s", time.Since(back).Round(time.Millisecond)))
	if _, err := srv.drain(ctx, []string{gb.ID}, 60*time.Second, false); err != nil {
		res.problems = append(res.problems, "the interrupted group did not finish after the space came back: "+err.Error())
	}
	gc, _, err := srv.newGroup(ctx, "t6 after", 20, "")
	if err != nil {
		return fail("create group after recovery: %v", err)
	}
	if _, err := srv.drain(ctx, []string{gc.ID}, 30*time.Second, false); err != nil {
		res.problems = append(res.problems, "a new group after recovery: "+err.Error())
	}
	// Everything acknowledged was stored.
	for _, id := range acked {
		n, err := inboxRows(ctx, srv.db, id)
		if err != nil {
			return fail("inbox: %v", err)
		}
		if n != 1 {
			h.mu.Lock()
			h.lost++
			h.mu.Unlock()
			res.problems = append(res.problems, fmt.Sprintf("LOST: webhook %s was acknowledged on a full disk and has %d inbox rows", id, n))
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
