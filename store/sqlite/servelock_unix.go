//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrServed is the error LockServe wraps when another server holds the
// database file.
var ErrServed = errors.New("sqlite: database is served by another crewcast process")

// ServeLock is the exclusive hold a server keeps on its SQLite database
// for as long as it runs. SQLite means exactly one node (docs/design.md §9): a
// second server on the same file would run a second set of actors whose
// commits the single-owner leases cannot tell apart, so it must refuse to
// start instead.
type ServeLock struct{ f *os.File }

// LockServe takes the exclusive flock on path+".lock" (created if
// missing) without waiting, and writes this process's id into it so the
// refusal can name the holder. The kernel drops the lock when the holder
// exits, however it exits, so a crashed server never leaves a stale lock
// behind. A flock belongs to the open file, so a second LockServe in the
// same process is refused too.
func LockServe(path string) (*ServeLock, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock %s: %w", name, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(name); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w%s: %s; SQLite runs exactly one node — stop that server first, or use PostgreSQL to run several nodes",
				ErrServed, holder, path)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &ServeLock{f: f}, nil
}

// Release drops the lock (the file stays; its content is only a hint).
func (l *ServeLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}
