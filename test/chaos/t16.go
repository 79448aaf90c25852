package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// runT16 is docs/testing.md T16: a crewcast server on a primary/standby
// pair of PostgreSQL instances named by a multi-host --db with
// target_session_attrs=read-write, the primary SIGKILLed (postmaster and
// backends) mid fan-out, the standby promoted and the old primary rebuilt
// as the new standby (pg_basebackup), as Patroni does. The promotion is
// driven here with pg_ctl rather than through Patroni's leader TTL (≥ 20 s
// a round) so that ×20 fits CI; `make ha` runs the same on Patroni.
// Iterations alternate synchronous replication (synchronous_standby_names
// '*': 0 lost acknowledged webhooks, 0 duplicate sends) and asynchronous
// replication with the standby cut off shortly before the kill (the old
// primary's last claims, outcomes and acknowledged webhooks vanish: 0
// duplicate sends, every lost claim found at the provider or unconfirmed,
// the loss counted). CREWCAST_CHAOS_HA_ITERATIONS sets the count (20).
func runT16(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	if _, err := os.Stat(filepath.Join(haPGBin, "initdb")); err != nil {
		return scenarioResult{notes: []string{"PostgreSQL 15 server binaries not in " + haPGBin}}
	}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	iterations := int(envInt64("CREWCAST_CHAOS_HA_ITERATIONS", 20))
	// The instances run as the postgres user, which cannot enter the
	// harness's private work directory: a directory of their own.
	pgDir, err := os.MkdirTemp("", "crewcast-t16-")
	if err != nil {
		return res.fail("%v", err)
	}
	pair, err := newHAPair(ctx, pgDir)
	if err != nil {
		return res.fail("PostgreSQL pair: %v", err)
	}
	defer func() {
		pair.stop()
		if len(res.problems) == 0 && !h.cfg.keep {
			_ = os.RemoveAll(pgDir)
		} else {
			res.notes = append(res.notes, "PostgreSQL data and logs kept in "+pgDir)
		}
	}()
	srv := h.newServer("server-t16", pair.url(), "--send-rate", "30")
	if err := srv.start(ctx); err != nil {
		return res.fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()
	var syncIDs, asyncIDs []string
	var failovers, unavailable []time.Duration
	perMode := map[bool][]time.Duration{} // failover times by mode (true: asynchronous)
	for it := range iterations {
		async := it%2 == 1
		if err := pair.setSync(ctx, !async); err != nil {
			return res.fail("iteration %d: replication mode: %v", it, err)
		}
		if err := pair.caughtUp(ctx, 20*time.Second); err != nil {
			return res.fail("iteration %d: %v", it, err)
		}
		g, _, err := srv.newGroup(ctx, "t16", h.randInt(60, 90), "")
		if err != nil {
			return res.fail("iteration %d: create group: %v", it, err)
		}
		if async {
			asyncIDs = append(asyncIDs, g.ID)
		} else {
			syncIDs = append(syncIDs, g.ID)
		}
		if err := pair.caughtUp(ctx, 20*time.Second); err != nil { // the group itself is on the standby
			return res.fail("iteration %d: %v", it, err)
		}
		_ = sleep(ctx, h.randDur(300*time.Millisecond, 1200*time.Millisecond))
		if async {
			if err := pair.cutReplication(ctx); err != nil {
				return res.fail("iteration %d: cut replication: %v", it, err)
			}
			_ = sleep(ctx, h.randDur(150*time.Millisecond, 400*time.Millisecond))
		}
		killed := time.Now()
		if err := pair.killPrimary(); err != nil {
			return res.fail("iteration %d: kill the primary: %v", it, err)
		}
		if err := pair.promote(ctx); err != nil {
			return res.fail("iteration %d: promote: %v", it, err)
		}
		if err := pair.rebuildStandby(ctx); err != nil {
			return res.fail("iteration %d: rebuild the standby: %v", it, err)
		}
		if _, err := srv.drain(ctx, []string{g.ID}, 60*time.Second, true); err != nil {
			return res.fail("iteration %d (%s): %v; log %s", it, haMode(async), err, srv.logPath)
		}
		fo, un := haWindows(h.proxy.records(), killed)
		failovers, unavailable = append(failovers, fo), append(unavailable, un)
		perMode[async] = append(perMode[async], fo)
		if !srv.p.Alive() {
			return res.fail("iteration %d: the server exited; log %s:\n%s", it, srv.logPath, tail(srv.logPath, 20))
		}
	}
	views, err := srv.drain(ctx, append(slices.Clone(syncIDs), asyncIDs...), 60*time.Second, true)
	if err != nil {
		res.problems = append(res.problems, err.Error())
	}
	// Synchronous: the scenario's final check (lost acknowledged webhooks
	// fail it, and count in the CHAOS line).
	probs, fin := srv.finalCheck(ctx, syncIDs)
	res.problems = append(res.problems, probs...)
	// Asynchronous: acknowledged webhooks the old primary took with it are
	// the documented loss, counted, not failed; everything else is checked.
	ares, err := srv.check(ctx, asyncIDs, true, false)
	if err != nil {
		res.problems = append(res.problems, "async check: "+err.Error())
	}
	for _, p := range ares.problems {
		if !strings.HasPrefix(p, "LOST:") {
			res.problems = append(res.problems, p)
		}
	}
	dups := 0
	if ledger, err := h.simAPI.ledger(ctx); err == nil {
		_, byText, allowed := h.reg.snapshot()
		var dprobs []string
		dups, dprobs = checkDuplicates(ledger, byText, allowed)
		res.problems = append(res.problems, dprobs...)
	}
	reconciled, lostUnconfirmed, foundSent, reconUnconfirmed := 0, 0, 0, 0
	for _, id := range asyncIDs {
		evs, err := srv.api.journal(ctx, id)
		if err != nil {
			res.problems = append(res.problems, "journal: "+err.Error())
			continue
		}
		for _, e := range evs {
			if e.Type == "store.failover_reconciled" {
				reconciled++
				var d struct {
					Sent        []json.RawMessage `json:"sent"`
					Unconfirmed []int             `json:"unconfirmed"`
				}
				if err := json.Unmarshal(e.Data, &d); err == nil {
					foundSent += len(d.Sent)
					reconUnconfirmed += len(d.Unconfirmed)
				}
			}
		}
	}
	for _, g := range views {
		if slices.Contains(asyncIDs, g.ID) {
			for _, r := range g.Recipients {
				if r.Status == "unconfirmed" {
					lostUnconfirmed++
				}
			}
		}
	}
	slices.Sort(failovers)
	slices.Sort(perMode[false])
	slices.Sort(perMode[true])
	fmt.Fprintf(h.out, "HA failover_ms synchronous p50=%d max=%d asynchronous p50=%d max=%d (by the replication mode at the kill)\n",
		pct(perMode[false], 50).Milliseconds(), pct(perMode[false], 100).Milliseconds(), pct(perMode[true], 50).Milliseconds(), pct(perMode[true], 100).Milliseconds())
	fmt.Fprintf(h.out, "HA iterations=%d sync=%d async=%d lost_acked_sync=%d lost_acked_async=%d duplicate_sends=%d async_groups_reconciled=%d lost_claims_found_sent=%d lost_claims_unconfirmed=%d async_unconfirmed=%d\n",
		iterations, len(syncIDs), len(asyncIDs), fin.lost, ares.lost, dups, reconciled, foundSent, reconUnconfirmed, lostUnconfirmed)
	if len(failovers) > 0 {
		fmt.Fprintf(h.out, "RESULT ha_failover_ms %d ms\n", failovers[len(failovers)/2].Milliseconds())
		fmt.Fprintf(h.out, "RESULT ha_unavailable_ms %d ms\n", slices.Max(unavailable).Milliseconds())
	}
	res.notes = append(res.notes, fmt.Sprintf("%d failovers (%d synchronous, %d asynchronous); failover p50 %s max %s; %d acknowledged webhooks (sync) %d lost; async: %d acknowledged webhooks lost with the old primary, %d groups reconciled (%d lost claims found sent at the provider, %d unconfirmed), %d unconfirmed in all [%s]",
		iterations, len(syncIDs), len(asyncIDs), pct(failovers, 50), pct(failovers, 100), fin.acked, fin.lost, ares.lost, reconciled, foundSent, reconUnconfirmed, lostUnconfirmed, statusCounts(views)))
	if len(asyncIDs) > 0 && reconciled == 0 {
		res.problems = append(res.problems, "no asynchronous group reconciled after its failover: the condition had no effect")
	}
	return res
}

func haMode(async bool) string {
	if async {
		return "asynchronous"
	}
	return "synchronous"
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, len(ds)*p/100)].Round(time.Millisecond)
}

// haWindows measures one failover from the webhook proxy's record: the
// time from the kill to the first webhook acknowledged on the new primary
// (one sent after the kill), and the longest run of unacknowledged
// answers (503s) in between.
func haWindows(recs []webhookRecord, killed time.Time) (failover, unavailable time.Duration) {
	var firstBad, lastBad time.Time
	for _, r := range recs {
		if r.At.Before(killed) {
			continue
		}
		if r.acked() {
			failover = r.At.Add(r.Latency).Sub(killed)
			break
		}
		if firstBad.IsZero() {
			firstBad = r.At
		}
		lastBad = r.At.Add(r.Latency)
	}
	if !firstBad.IsZero() {
		unavailable = lastBad.Sub(firstBad)
	}
	return failover, unavailable
}

// haPGBin is where Debian puts PostgreSQL 15's server binaries.
const haPGBin = "/usr/lib/postgresql/15/bin"

// haPair is two PostgreSQL instances on loopback ports, one the primary
// and one its streaming standby; they swap roles at each failover.
type haPair struct {
	dir     string
	ports   [2]int
	primary int // index of the primary
}

func haRun(ctx context.Context, name string, args ...string) error {
	bin := filepath.Join(haPGBin, name)
	if os.Geteuid() == 0 { // PostgreSQL refuses root
		args = append([]string{"--reuid=postgres", "--regid=postgres", "--init-groups", bin}, args...)
		bin = "setpriv"
	}
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (p *haPair) data(i int) string { return filepath.Join(p.dir, "pg"+strconv.Itoa(i)) }

// opts: the standby waits a second before it reconnects a cut stream,
// longer than a cut (cutReplication) comes before the kill, so what the
// primary commits in between never reaches it; no longer, since a
// promotion waits for that retry too.
func (p *haPair) opts(i int) string {
	// No Unix socket: a SIGKILLed postmaster leaves its lock file behind.
	return fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories='' -c wal_level=replica -c max_wal_senders=4 -c fsync=off -c wal_retrieve_retry_interval=1000 -c max_connections=60",
		p.ports[i])
}

func (p *haPair) start(ctx context.Context, i int) error {
	return haRun(ctx, "pg_ctl", "-D", p.data(i), "-o", p.opts(i), "-l", p.data(i)+".log", "-w", "start")
}

func newHAPair(ctx context.Context, dir string) (*haPair, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	p := &haPair{dir: dir}
	for i := range p.ports {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		p.ports[i] = port
	}
	if err := haRun(ctx, "initdb", "-D", p.data(0), "-U", "postgres", "--auth=trust", "-E", "UTF8"); err != nil {
		return nil, err
	}
	if err := p.start(ctx, 0); err != nil {
		return nil, err
	}
	if err := p.clone(ctx, 1); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// clone makes instance i a fresh standby of the primary and starts it.
func (p *haPair) clone(ctx context.Context, i int) error {
	if err := os.RemoveAll(p.data(i)); err != nil {
		return err
	}
	if err := haRun(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.ports[p.primary]), "-U", "postgres",
		"-D", p.data(i), "-R", "-X", "stream", "-c", "fast"); err != nil {
		return err
	}
	return p.start(ctx, i)
}

func (p *haPair) standby() int { return 1 - p.primary }

func (p *haPair) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		p.ports[0], p.ports[1])
}

func (p *haPair) conn(ctx context.Context, i int) (*pgx.Conn, error) {
	return pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", p.ports[i]))
}

// setSync makes commits on the primary wait for the standby (or not).
func (p *haPair) setSync(ctx context.Context, sync bool) error {
	c, err := p.conn(ctx, p.primary)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	q := `ALTER SYSTEM RESET synchronous_standby_names`
	if sync {
		q = `ALTER SYSTEM SET synchronous_standby_names = '*'`
	}
	if _, err := c.Exec(ctx, q); err != nil {
		return err
	}
	_, err = c.Exec(ctx, `SELECT pg_reload_conf()`)
	return err
}

// caughtUp waits until the standby has replayed what the primary wrote.
func (p *haPair) caughtUp(ctx context.Context, timeout time.Duration) error {
	c, err := p.conn(ctx, p.primary)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	deadline := time.Now().Add(timeout)
	var lsn string
	if err := c.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return err
	}
	for {
		var ok bool
		if err := c.QueryRow(ctx, `SELECT COALESCE(bool_and(replay_lsn >= $1::pg_lsn), false) FROM pg_stat_replication`, lsn).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the standby did not catch up with %s in %s", lsn, timeout)
		}
		_ = sleep(ctx, 20*time.Millisecond) // polling another process
	}
}

// cutReplication ends the primary's WAL senders: the standby falls behind.
func (p *haPair) cutReplication(ctx context.Context) error {
	c, err := p.conn(ctx, p.primary)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for range 50 {
		var n int
		if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_replication`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		_ = sleep(ctx, 20*time.Millisecond)
	}
	return fmt.Errorf("the WAL sender keeps coming back")
}

// killPrimary SIGKILLs the primary's postmaster and every backend of it.
func (p *haPair) killPrimary() error {
	b, err := os.ReadFile(filepath.Join(p.data(p.primary), "postmaster.pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return err
	}
	// Stopped first, the postmaster forks no backend between the listing
	// of its children and their kill (an orphan backend would go on
	// committing for a moment).
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	for _, c := range childPIDs(pid) {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// childPIDs lists the processes whose parent is pid (from /proc).
func childPIDs(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ')'.
		s := string(b)
		if k := strings.LastIndexByte(s, ')'); k >= 0 {
			f := strings.Fields(s[k+1:])
			if len(f) > 1 && f[1] == strconv.Itoa(pid) {
				out = append(out, n)
			}
		}
	}
	return out
}

// promote promotes the standby: it is the primary from now on.
func (p *haPair) promote(ctx context.Context) error {
	if err := haRun(ctx, "pg_ctl", "-D", p.data(p.standby()), "-w", "promote"); err != nil {
		return err
	}
	p.primary = p.standby()
	return nil
}

// rebuildStandby clones the new primary into the killed instance's place.
func (p *haPair) rebuildStandby(ctx context.Context) error { return p.clone(ctx, p.standby()) }

func (p *haPair) stop() {
	for i := range p.ports {
		if _, err := os.Stat(filepath.Join(p.data(i), "postmaster.pid")); err == nil {
			_ = haRun(context.Background(), "pg_ctl", "-D", p.data(i), "-m", "immediate", "stop")
		}
	}
}

func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
