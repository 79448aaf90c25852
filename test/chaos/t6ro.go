package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// runT6ReadOnly is T6's read-only database. A root process writes through
// any permission bits, so the harness marks the database file and its
// write-ahead log immutable (chattr +i, FS_IOC_SETFLAGS), which makes
// every write to them fail (EPERM) even through descriptors the server
// already holds, while reads keep working. The database is on the
// harness's own directory (ext4 here; tmpfs has no immutable flag).
func runT6ReadOnly(ctx context.Context, h *harness) scenarioResult {
	dir := filepath.Join(h.dir, "t6-readonly")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return scenarioResult{ran: true, problems: []string{err.Error()}}
	}
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return scenarioResult{ran: true, problems: []string{err.Error()}}
	}
	if err := setImmutable(probe, true); err != nil {
		return scenarioResult{notes: []string{"read-only: cannot mark a file immutable here (needs root on a file system with the flag): " + err.Error()}}
	}
	if err := setImmutable(probe, false); err != nil {
		return scenarioResult{ran: true, problems: []string{"clear the probe's immutable flag: " + err.Error()}}
	}
	db := filepath.Join(dir, "crewcast.db")
	files := []string{db, db + "-wal"}
	set := func(on bool) error {
		for _, f := range files {
			if err := setImmutable(f, on); err != nil {
				return fmt.Errorf("%s: %w", filepath.Base(f), err)
			}
		}
		return nil
	}
	// Whatever happens, the work directory must stay removable.
	h.cleanups = append(h.cleanups, func() { _ = set(false) })
	return runStoreFault(ctx, h, storeFault{
		label:  "read-only",
		server: "server-t6-readonly",
		db:     db,
		impose: func() error { return set(true) },
		lift:   func() error { return set(false) },
	})
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
