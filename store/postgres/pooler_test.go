package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store/storetest"
)

// startPgBouncer runs a real pgbouncer in poolMode in front of the test
// PostgreSQL and returns a URL to the same database through it. It skips
// only when pgbouncer is not installed and CREWCAST_REQUIRE_TOOLS is unset
// (CI installs it and sets the variable, so a missing binary fails there).
func startPgBouncer(t *testing.T, poolMode string) string {
	t.Helper()
	direct, err := url.Parse(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if os.Getenv("CREWCAST_REQUIRE_TOOLS") != "" {
			t.Fatalf("pgbouncer is not installed and CREWCAST_REQUIRE_TOOLS is set")
		}
		t.Skip("pgbouncer is not installed (Debian package pgbouncer)")
	}
	// pgbouncer refuses to run as root: -u switches to postgres, which
	// must read the configuration and write the log.
	dir, err := os.MkdirTemp("", "crewcast-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	host, pgPort, _ := net.SplitHostPort(direct.Host)
	db := strings.TrimPrefix(direct.Path, "/")
	user := direct.User.Username()
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s user=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = %s
logfile = %s
pidfile = %s
`, db, host, pgPort, db, user, port, poolMode, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	cfg := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(cfg, []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{cfg}
	if os.Geteuid() == 0 {
		args = []string{"-u", "postgres", cfg}
	}
	cmd := exec.Command(bin, args...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			t.Logf("pgbouncer output:\n%s\n%s", out, log)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for { // another process: poll until it listens
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer did not listen on %s within 10 s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	through := *direct
	through.Host = addr
	return through.String()
}

// Issue 34, item 5: behind PgBouncer in transaction mode a LISTEN does not
// stay with crewcast's connection, so Open refuses with a clear error
// rather than run with the other nodes' wake-ups lost.
func TestOpenRefusesTransactionPooling(t *testing.T) {
	through := startPgBouncer(t, "transaction")
	schema := newSchema(t, serverURL(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, Config{URL: through, Schema: schema, MaxConns: 4})
	if err == nil {
		_ = s.Close()
		t.Fatal("Open behind PgBouncer in transaction mode succeeded; want ErrTransactionPooling")
	}
	if !errors.Is(err, ErrTransactionPooling) {
		t.Fatalf("Open behind PgBouncer in transaction mode: %v; want ErrTransactionPooling", err)
	}
	if !strings.Contains(err.Error(), "pool_mode = session") {
		t.Fatalf("the error does not say what to do: %v", err)
	}
}

// Behind PgBouncer in session mode crewcast works: Open (migrations
// included), the session settings (search_path), and a NOTIFY reaching a
// LISTEN of another store.
func TestWorksBehindSessionPooling(t *testing.T) {
	through := startPgBouncer(t, "session")
	schema := newSchema(t, serverURL(t))
	listener := openIn(t, through, schema, storetest.Config{})
	sender := openIn(t, through, schema, storetest.Config{})
	if v, err := listener.MigrationVersion(context.Background()); err != nil || v == 0 {
		t.Fatalf("schema version through pgbouncer: %d %v", v, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	got := make(chan string, 16)
	listening := make(chan error, 1)
	go func() {
		listening <- listener.Listen(ctx, []string{"crewcast_inbox"}, func(_, p string) { got <- p })
	}()
	awaitListening(ctx, t, sender, "crewcast_inbox", got)
	cancel()
	if err := <-listening; err != nil {
		t.Fatal(err)
	}
}
