package postgres

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pgBin is where Debian puts PostgreSQL 15's server binaries.
const pgBin = "/usr/lib/postgresql/15/bin"

// pgRun runs a PostgreSQL binary as the postgres user when we are root
// (PostgreSQL refuses root).
func pgRun(name string, args ...string) ([]byte, error) {
	bin := filepath.Join(pgBin, name)
	if os.Geteuid() == 0 {
		args = append([]string{"--reuid=postgres", "--regid=postgres", "--init-groups", bin}, args...)
		bin = "setpriv"
	}
	return exec.Command(bin, args...).CombinedOutput()
}

// pgCmd is pgRun failing the test on error.
func pgCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := pgRun(name, args...); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPrimaryIdentityChangesOnPromotion runs a primary and a streaming
// standby of it (its own PostgreSQL instances on loopback ports, data in a
// temporary directory), kills the primary and promotes the standby: the
// identity crewcast watches (server/failover.go) keeps the system
// identifier and moves to the next timeline.
func TestPrimaryIdentityChangesOnPromotion(t *testing.T) {
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		if os.Getenv("CREWCAST_REQUIRE_TOOLS") != "" {
			t.Fatalf("PostgreSQL 15 server binaries missing in %s and CREWCAST_REQUIRE_TOOLS is set", pgBin)
		}
		t.Skipf("PostgreSQL 15 server binaries not in %s", pgBin)
	}
	dir, err := os.MkdirTemp("", "crewcast-promote-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	primary, standby := filepath.Join(dir, "primary"), filepath.Join(dir, "standby")
	p1, p2 := freePort(t), freePort(t)
	opts := func(port int) string {
		return fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c wal_level=replica -c max_wal_senders=4 -c fsync=off", port, dir)
	}
	pgCmd(t, "initdb", "-D", primary, "-U", "postgres", "--auth=trust", "-E", "UTF8")
	pgCmd(t, "pg_ctl", "-D", primary, "-o", opts(p1), "-l", filepath.Join(dir, "primary.log"), "-w", "start")
	t.Cleanup(func() { _, _ = pgRun("pg_ctl", "-D", primary, "-m", "immediate", "stop") })
	pgCmd(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p1), "-U", "postgres", "-D", standby, "-R", "-X", "stream")
	pgCmd(t, "pg_ctl", "-D", standby, "-o", opts(p2), "-l", filepath.Join(dir, "standby.log"), "-w", "start")
	t.Cleanup(func() { _, _ = pgRun("pg_ctl", "-D", standby, "-m", "immediate", "stop") })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Both hosts, as an HA deployment names them: the writable one wins.
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2", p1, p2)
	s, err := Open(ctx, Config{URL: url, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	before, err := s.PrimaryIdentity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pgCmd(t, "pg_ctl", "-D", primary, "-m", "immediate", "stop") // the primary is lost
	pgCmd(t, "pg_ctl", "-D", standby, "-w", "promote")
	var after string
	for { // the pool's connections to the dead primary fail, new ones reach the promoted standby
		after, err = s.PrimaryIdentity(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no identity from the promoted standby: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = s.Close()
	bs, bt, _ := strings.Cut(before, "/")
	as, at, _ := strings.Cut(after, "/")
	if bs != as || bs == "?" {
		t.Errorf("system identifier %q before, %q after: a standby keeps its primary's", bs, as)
	}
	if bt != "00000001" || at != "00000002" {
		t.Errorf("timeline %s before, %s after the promotion; want 00000001 then 00000002", bt, at)
	}
	t.Logf("identity %s before, %s after the promotion", before, after)
}
