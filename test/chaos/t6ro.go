package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// runT6ReadOnly is the other half of testing.md T6: the store refuses
// writes. A root process can write through any permission bits, so the
// harness marks the database file and its write-ahead log immutable
// (chattr +i, FS_IOC_SETFLAGS), which makes every write to them fail
// (EPERM) even through descriptors the server already holds, while reads
// keep working. Mid fan-out the files become immutable; webhooks must be
// refused (5xx), never acknowledged without being stored, and the API
// must still answer reads; once the flag is cleared the server must
// answer 2xx again, finish the interrupted group and run a new one —
// without a restart. The database is on the harness's own directory
// (ext4 here; tmpfs has no immutable flag).
func runT6ReadOnly(ctx context.Context, h *harness) scenarioResult {
	res := scenarioResult{ran: true}
	fail := func(format string, args ...any) scenarioResult {
		res.problems = append(res.problems, fmt.Sprintf(format, args...))
		return res
	}
	dir := filepath.Join(h.dir, "t6-readonly")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("%v", err)
	}
	db := filepath.Join(dir, "crewcast.db")
	files := []string{db, db + "-wal"}
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return fail("%v", err)
	}
	if err := setImmutable(probe, true); err != nil {
		return scenarioResult{notes: []string{"read-only: cannot mark a file immutable here (needs root on a file system with the flag): " + err.Error()}}
	}
	if err := setImmutable(probe, false); err != nil {
		return fail("clear the probe's immutable flag: %v", err)
	}
	cleared := false
	clear := func() error {
		if cleared {
			return nil
		}
		for _, f := range files {
			if err := setImmutable(f, false); err != nil {
				return err
			}
		}
		cleared = true
		return nil
	}
	// Whatever happens, the work directory must stay removable.
	h.cleanups = append(h.cleanups, func() { _ = clear() })

	srv := h.newServer("server-t6-readonly", db, "--send-rate", "20")
	if err := srv.start(ctx); err != nil {
		return fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()
	ga, _, err := srv.newGroup(ctx, "t6 read-only before", 20, "")
	if err != nil {
		return fail("create group: %v", err)
	}
	if _, err := srv.drain(ctx, []string{ga.ID}, 30*time.Second, false); err != nil {
		return fail("baseline group: %v", err)
	}
	gb, bNums, err := srv.newGroup(ctx, "t6 read-only during", 120, "")
	if err != nil {
		return fail("create group: %v", err)
	}
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		return fail("%v", err)
	}

	for _, f := range files {
		if err := setImmutable(f, true); err != nil {
			_ = clear()
			return fail("mark %s immutable: %v", filepath.Base(f), err)
		}
	}
	cleared = false
	h.logf("T6: %s and its WAL are read-only", filepath.Base(db))
	var acked []string
	refused, readsOK := 0, 0
	ro := time.Now()
	for i := 0; time.Since(ro) < 15*time.Second && (refused < 10 || time.Since(ro) < 4*time.Second) && ctx.Err() == nil; i++ {
		id := newEventID()
		body := receivedEvent(id, "chaos-in-"+newEventID(), bNums[i%len(bNums)], gb.From, fmt.Sprintf("t6 read-only reply %d", i), time.Now())
		t0 := time.Now()
		code := h.sign.sign(body, time.Now()).post(ctx, srv.api.base)
		switch {
		case code/100 == 2:
			h.noteCrafted(time.Since(t0))
			acked = append(acked, id)
		case code >= 500:
			refused++
		default:
			res.problems = append(res.problems, fmt.Sprintf("while read-only: a webhook was answered %d; want 5xx (or 2xx only if stored)", code))
		}
		if i%10 == 0 {
			if _, err := srv.api.group(ctx, gb.ID); err != nil {
				res.problems = append(res.problems, "while read-only: reading the group failed: "+err.Error())
			} else {
				readsOK++
			}
		}
		_ = sleep(ctx, 50*time.Millisecond)
	}
	if !srv.p.alive() {
		_ = clear()
		return fail("the server exited on a read-only database; log %s:\n%s", srv.logPath, tail(srv.logPath, 20))
	}
	if refused == 0 {
		_ = clear()
		return fail("the database was read-only for %s and no webhook was refused: the condition had no effect", time.Since(ro).Round(time.Second))
	}
	res.notes = append(res.notes, fmt.Sprintf("read-only: %d webhooks refused with 5xx, %d acknowledged, %d group reads answered", refused, len(acked), readsOK))

	if err := clear(); err != nil {
		return fail("clear the immutable flag: %v", err)
	}
	back := time.Now()
	recovered := false
	for time.Since(back) < 20*time.Second && ctx.Err() == nil {
		id := newEventID()
		body := receivedEvent(id, "chaos-in-"+newEventID(), bNums[0], gb.From, "t6 writable again", time.Now())
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
		return fail("webhooks still refused 20s after the database became writable again")
	}
	res.notes = append(res.notes, fmt.Sprintf("writable again: webhooks acknowledged after %s", time.Since(back).Round(time.Millisecond)))
	if _, err := srv.drain(ctx, []string{gb.ID}, 60*time.Second, false); err != nil {
		res.problems = append(res.problems, "the interrupted group did not finish once writable: "+err.Error())
	}
	gc, _, err := srv.newGroup(ctx, "t6 read-only after", 20, "")
	if err != nil {
		return fail("create group after recovery: %v", err)
	}
	if _, err := srv.drain(ctx, []string{gc.ID}, 30*time.Second, false); err != nil {
		res.problems = append(res.problems, "a new group after recovery: "+err.Error())
	}
	for _, id := range acked {
		n, err := inboxRows(ctx, srv.db, id)
		if err != nil {
			return fail("inbox: %v", err)
		}
		if n != 1 {
			h.mu.Lock()
			h.lost++
			h.mu.Unlock()
			res.problems = append(res.problems, fmt.Sprintf("LOST: webhook %s was acknowledged on a read-only database and has %d inbox rows", id, n))
		}
	}
	probs, _ := srv.finalCheck(ctx, []string{ga.ID, gb.ID, gc.ID})
	res.problems = append(res.problems, probs...)
	return res
}

// fsImmutableFL is FS_IMMUTABLE_FL from linux/fs.h (x/sys/unix does not
// name it; STATX_ATTR_IMMUTABLE is the same bit in statx's attributes).
const fsImmutableFL = 0x00000010

// setImmutable sets or clears a file's immutable attribute (chattr ±i).
func setImmutable(path string, on bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return fmt.Errorf("get flags: %w", err)
	}
	if on {
		flags |= fsImmutableFL
	} else {
		flags &^= fsImmutableFL
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags)); err != nil {
		return fmt.Errorf("set flags: %w", err)
	}
	return nil
}
