package tracker

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

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
)

// Never twice across a failover onto an asynchronous standby
// (docs/design.md §19): the claims and outcomes the standby never received
// vanish with the old primary, and the group looks unsent on the new one.

// listingProvider is fakeProvider with the provider's record of what it
// accepted (crewcast.SentLister), as the simulator and Twilio keep one.
type listingProvider struct {
	fakeProvider
	listed  int
	listErr error
}

func (p *listingProvider) ListSent(ctx context.Context, from string, since time.Time) ([]crewcast.SentMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listed++
	if p.listErr != nil {
		return nil, p.listErr
	}
	var out []crewcast.SentMessage
	for k, s := range p.sends {
		if s.From == from {
			out = append(out, crewcast.SentMessage{MessageID: fmt.Sprintf("msg-%d", k+1), From: s.From, To: s.To[0], Text: s.Text})
		}
	}
	return out, nil
}

// pgBin is where Debian puts PostgreSQL 15's server binaries.
const pgBin = "/usr/lib/postgresql/15/bin"

// pgRun runs a PostgreSQL binary as the postgres user when we are root.
func pgRun(name string, args ...string) ([]byte, error) {
	bin := filepath.Join(pgBin, name)
	if os.Geteuid() == 0 {
		args = append([]string{"--reuid=postgres", "--regid=postgres", "--init-groups", bin}, args...)
		bin = "setpriv"
	}
	return exec.Command(bin, args...).CombinedOutput()
}

func pgCmd(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := pgRun(name, args...); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func loopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pgPair is a primary and an asynchronous streaming standby of it, each
// its own PostgreSQL instance on a loopback port.
type pgPair struct {
	t                *testing.T
	dir              string
	primary, standby string
	p1, p2           int
}

func startPGPair(t *testing.T) *pgPair {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		if os.Getenv("CREWCAST_REQUIRE_TOOLS") != "" {
			t.Fatalf("PostgreSQL 15 server binaries missing in %s and CREWCAST_REQUIRE_TOOLS is set", pgBin)
		}
		t.Skipf("PostgreSQL 15 server binaries not in %s", pgBin)
	}
	dir, err := os.MkdirTemp("", "crewcast-async-")
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
	p := &pgPair{t: t, dir: dir, primary: filepath.Join(dir, "primary"), standby: filepath.Join(dir, "standby"),
		p1: loopbackPort(t), p2: loopbackPort(t)}
	// wal_retrieve_retry_interval: a promotion waits out the standby's
	// retry of a lost stream, so it is short (cutReplication points the
	// standby elsewhere, so the retries never reach the primary).
	opts := func(port int) string {
		return fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c wal_level=replica -c max_wal_senders=4 -c fsync=off -c wal_retrieve_retry_interval=500", port, dir)
	}
	pgCmd(t, "initdb", "-D", p.primary, "-U", "postgres", "--auth=trust", "-E", "UTF8")
	pgCmd(t, "pg_ctl", "-D", p.primary, "-o", opts(p.p1), "-l", filepath.Join(dir, "primary.log"), "-w", "start")
	t.Cleanup(func() { _, _ = pgRun("pg_ctl", "-D", p.primary, "-m", "immediate", "stop") })
	pgCmd(t, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.p1), "-U", "postgres", "-D", p.standby, "-R", "-X", "stream")
	pgCmd(t, "pg_ctl", "-D", p.standby, "-o", opts(p.p2), "-l", filepath.Join(dir, "standby.log"), "-w", "start")
	t.Cleanup(func() { _, _ = pgRun("pg_ctl", "-D", p.standby, "-m", "immediate", "stop") })
	return p
}

// url names both hosts, as an HA deployment does: the writable one wins.
func (p *pgPair) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2", p.p1, p.p2)
}

// primaryConn is a connection to the primary alone.
func (p *pgPair) primaryConn(ctx context.Context) *pgx.Conn {
	p.t.Helper()
	c, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.p1))
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

// caughtUp waits until the standby has replayed everything the primary
// wrote so far.
func (p *pgPair) caughtUp(ctx context.Context) {
	p.t.Helper()
	c := p.primaryConn(ctx)
	defer c.Close(ctx)
	var lsn string
	if err := c.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		p.t.Fatal(err)
	}
	for {
		var ok bool
		err := c.QueryRow(ctx, `SELECT COALESCE(bool_and(replay_lsn >= $1::pg_lsn), false) FROM pg_stat_replication`, lsn).Scan(&ok)
		if err != nil {
			p.t.Fatal(err)
		}
		if ok {
			return
		}
		if ctx.Err() != nil {
			p.t.Fatal("the standby never caught up")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cutReplication points the standby at a port nobody listens on and ends
// the primary's WAL sender: the standby stops receiving what the primary
// commits from now on, for good, as an asynchronous standby that lags.
func (p *pgPair) cutReplication(ctx context.Context) {
	p.t.Helper()
	sc, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.p2))
	if err != nil {
		p.t.Fatal(err)
	}
	defer sc.Close(ctx)
	for _, q := range []string{`ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=postgres connect_timeout=1'`, `SELECT pg_reload_conf()`} {
		if _, err := sc.Exec(ctx, q); err != nil {
			p.t.Fatalf("%s: %v", q, err)
		}
	}
	c := p.primaryConn(ctx)
	defer c.Close(ctx)
	for {
		var n int
		if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_replication`).Scan(&n); err != nil {
			p.t.Fatal(err)
		}
		if n == 0 {
			return // none left (the standby reconnects elsewhere)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// failover kills the primary (SIGKILL-like immediate stop) and promotes
// the standby.
func (p *pgPair) failover() {
	p.t.Helper()
	pgCmd(p.t, "pg_ctl", "-D", p.primary, "-m", "immediate", "stop")
	pgCmd(p.t, "pg_ctl", "-D", p.standby, "-w", "promote")
}

func startTracker(t *testing.T, st store.Store, prov crewcast.Provider, clk actor.Clock) *Tracker {
	t.Helper()
	tr, err := New(Config{Store: st, Provider: prov, Clock: clk, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tr
}

func stopTracker(t *testing.T, tr *Tracker) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tr.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// asyncFailover runs a group whose creation reached the standby and whose
// claims and sends did not, fails over, and starts a tracker on the new
// primary with the same provider. It returns that tracker's env.
func asyncFailover(t *testing.T, prov crewcast.Provider, sent func() []crewcast.SendRequest, n int) (*env, string) {
	t.Helper()
	p := startPGPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	clk := actor.NewManualClock(time.Now().UTC().Truncate(time.Second))

	st1, err := postgres.Open(ctx, postgres.Config{URL: p.url(), MaxConns: 4, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	tr1 := startTracker(t, st1, prov, clk)
	e1 := &env{t: t, st: st1, tr: tr1, clk: clk}
	at := clk.Now().Add(time.Hour)
	id, _, err := tr1.Create(ctx, group.Request{From: from, To: nums(n), Text: "Crew call 7am",
		PolicyInput: group.PolicyInput{SendAt: at.Format(time.RFC3339)}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e1.waitGroup(id, "scheduled", allStatus(crewcast.StatusScheduled))
	p.caughtUp(ctx) // the group is on the standby: created, nothing claimed
	p.cutReplication(ctx)
	clk.Set(at)
	e1.waitGroup(id, "sent on the old primary", allStatus(crewcast.StatusSent))
	if len(sent()) != n {
		t.Fatalf("%d sends before the failover, want %d", len(sent()), n)
	}
	stopTracker(t, tr1)
	_ = st1.Close()

	p.failover() // the claims and outcomes vanish with the old primary
	st2, err := postgres.Open(ctx, postgres.Config{URL: p.url(), MaxConns: 4, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st2.Close() })
	rows, _, err := st2.ListDeliveries(ctx, store.DeliveryQuery{GroupID: id, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rows {
		if d.Status != crewcast.StatusScheduled {
			t.Fatalf("the new primary has %s %s: the standby got the claims, this proves nothing", d.Number, d.Status)
		}
	}
	tr2 := startTracker(t, st2, prov, clk)
	t.Cleanup(func() { stopTracker(t, tr2) })
	return &env{t: t, st: st2, tr: tr2, clk: clk}, id
}

// settledAfterFailover waits until no recipient of the group is waiting to
// be sent (scheduled, pending or sending) and the group's actor has
// handled everything.
func settledAfterFailover(_ store.GroupRow, rows []store.DeliveryRow) bool {
	for _, d := range rows {
		switch d.Status {
		case crewcast.StatusScheduled, crewcast.StatusPending, crewcast.StatusSending:
			return false
		}
	}
	return len(rows) > 0
}

// TestAsyncFailoverReconcilesLostClaims: every message did go out before
// the failover; the provider's record proves it, so the new primary
// records each as sent and nobody is texted twice.
func TestAsyncFailoverReconcilesLostClaims(t *testing.T) {
	prov := &listingProvider{}
	e, id := asyncFailover(t, prov, prov.sent, 6)
	e.clk.Advance(time.Second) // wake whatever waits on the clock
	_, rows := e.waitGroup(id, "reconciled", settledAfterFailover)
	settleGroup(t, e, id)
	for n, c := range prov.sentTo() {
		if c != 1 {
			t.Errorf("%s texted %d times", n, c)
		}
	}
	for _, d := range rows {
		if d.Status != crewcast.StatusSent || d.ProviderMessageID == "" {
			t.Errorf("%s: %s (message %q), want sent with the provider's message id", d.Number, d.Status, d.ProviderMessageID)
		}
	}
	if e.journalTypes(id)[group.TypeFailoverReconciled] != 1 {
		t.Errorf("journal %v: want one %s", e.journalTypes(id), group.TypeFailoverReconciled)
	}
	f, ok := e.st.(store.FailoverLog).LastFailover()
	if !ok || f.ID == "" || f.Before == "" || f.Before == f.ID {
		t.Errorf("failover record %+v %v", f, ok)
	}
}

// TestAsyncFailoverWithoutProviderRecordIsUnconfirmed: a provider that
// keeps no list of what it sent cannot tell, so the lost claims become
// unconfirmed, never resent.
func TestAsyncFailoverWithoutProviderRecordIsUnconfirmed(t *testing.T) {
	prov := &fakeProvider{}
	e, id := asyncFailover(t, prov, prov.sent, 4)
	e.clk.Advance(time.Second)
	_, rows := e.waitGroup(id, "reconciled", settledAfterFailover)
	settleGroup(t, e, id)
	for n, c := range prov.sentTo() {
		if c != 1 {
			t.Errorf("%s texted %d times", n, c)
		}
	}
	for _, d := range rows {
		if d.Status != crewcast.StatusUnconfirmed {
			t.Errorf("%s: %s, want unconfirmed", d.Number, d.Status)
		}
	}
}

// settleGroup gives the group's actor time to do anything else it would
// (a resend would show in the ledger): a barrier, a clock step, a barrier.
func settleGroup(t *testing.T, e *env, id string) {
	t.Helper()
	for range 3 {
		_, _ = askBarrier(e.tr, id)
		e.clk.Advance(time.Second)
		time.Sleep(200 * time.Millisecond)
	}
}
