//go:build unix

package sqlite_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store/sqlite"
)

// TestHelperHoldLock is not a test: it is the second process the tests
// below start (the test binary again, with CREWCAST_TEST_HOLD_LOCK set),
// which takes the serve lock, says so and waits for its stdin to close.
func TestHelperHoldLock(t *testing.T) {
	if path := os.Getenv("CREWCAST_TEST_HOLD_LOCK"); path != "" {
		l, err := sqlite.LockServe(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		_ = l.Release()
		os.Exit(0)
	}
}

func TestLockServeRefusesASecondProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crewcast.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Env = append(os.Environ(), "CREWCAST_TEST_HOLD_LOCK="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("holder said %q, %v", line, err)
	}

	_, err = sqlite.LockServe(path)
	if !errors.Is(err, sqlite.ErrServed) {
		t.Fatalf("LockServe while another process serves = %v, want ErrServed", err)
	}
	msg := err.Error()
	for _, want := range []string{fmt.Sprintf("pid %d", cmd.Process.Pid), path, "exactly one node", "PostgreSQL"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not mention %q", msg, want)
		}
	}

	// The holder exits: the kernel drops its lock and a new server starts.
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	l, err := sqlite.LockServe(path)
	if err != nil {
		t.Fatalf("LockServe after the holder exited: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestLockServeKilledHolderLeavesNoStaleLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crewcast.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Env = append(os.Environ(), "CREWCAST_TEST_HOLD_LOCK="+path)
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("holder said %q, %v", line, err)
	}
	_ = cmd.Process.Kill() // kill -9: no Release
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, err := sqlite.LockServe(path)
		if err == nil {
			_ = l.Release()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("LockServe after the holder was killed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLockServeSameProcessTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crewcast.db")
	a, err := sqlite.LockServe(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.LockServe(path); !errors.Is(err, sqlite.ErrServed) {
		t.Fatalf("second LockServe in one process = %v, want ErrServed", err)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	b, err := sqlite.LockServe(path)
	if err != nil {
		t.Fatalf("LockServe after Release: %v", err)
	}
	_ = b.Release()
}
