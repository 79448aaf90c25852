package sqlite

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// InUse reports whether some process (this one included) has the SQLite
// database at path open in WAL mode. Every WAL connection holds a shared
// lock on the "dead man switch" byte of the wal-index (path + "-shm", byte
// 128 in SQLite's unix VFS) for as long as it is open. The probe reads the
// kernel's lock table (/proc/locks) rather than asking fcntl: opening and
// closing the file to ask would drop this process's own POSIX locks on it
// (a close releases them all), breaking a store open in this process.
func InUse(path string) (bool, error) {
	fi, err := os.Stat(path + "-shm")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // no wal-index: nobody has it open in WAL mode
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, fmt.Errorf("sqlite: cannot identify %s-shm", path)
	}
	dev := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return false, fmt.Errorf("sqlite: read lock table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: POSIX  ADVISORY  READ 31345 fe:00:9985093 128 128"; blocked
		// waiters carry "->" after the number and hold nothing.
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[1] == "->" || fields[5] != dev {
			continue
		}
		start, err1 := strconv.ParseInt(fields[6], 10, 64)
		end := int64(1<<63 - 1)
		var err2 error
		if fields[7] != "EOF" {
			end, err2 = strconv.ParseInt(fields[7], 10, 64)
		}
		if err1 == nil && err2 == nil && start <= shmDMS && shmDMS <= end {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("sqlite: read lock table: %w", err)
	}
	return false, nil
}

// shmDMS is the wal-index byte every open connection holds a shared lock
// on (SQLite's UNIX_SHM_DMS: UNIX_SHM_BASE 120 + SQLITE_SHM_NLOCK 8).
const shmDMS = 128
