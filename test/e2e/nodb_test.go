package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/test/internal/testproc"
)

// cutProxy forwards TCP connections to a PostgreSQL server until cut: then
// every connection is closed and new ones are accepted and held without a
// byte either way, as a primary that died with no standby promoted yet
// (the client's connects hang, they do not fail fast).
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.closeAll()
	})
	return p
}

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, c)
		cut := p.cut
		p.mu.Unlock()
		if cut {
			continue // held open, never answered
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, up)
		p.mu.Unlock()
		go pipe(c, up)
		go pipe(up, c)
	}
}

func pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

// heal forwards new connections again; those held while cut are closed
// (the client sees them fail and dials again).
func (p *cutProxy) heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.closeAll()
}

// cutOff drops every connection and holds new ones unanswered.
func (p *cutProxy) cutOff() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.closeAll()
}

func (p *cutProxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// testDatabase creates a database of its own on CREWCAST_TEST_POSTGRES and
// returns its URL with the host replaced by host (a proxy's address).
func testDatabase(t *testing.T, name string) (u *url.URL) {
	t.Helper()
	base := os.Getenv("CREWCAST_TEST_POSTGRES")
	if base == "" {
		t.Skip("CREWCAST_TEST_POSTGRES not set")
	}
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("CREWCAST_TEST_POSTGRES: %v", err)
	}
	db := fmt.Sprintf("e2e_%s_%d_%d", name, os.Getpid(), time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		_ = admin.Close(ctx)
	})
	u, err = url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	return u
}

// drainTimeout is how long crewcast serve waits on SIGTERM for in-flight
// work before it exits anyway (cmd/crewcast serve.go).
const drainTimeout = 30 * time.Second

// TestSIGTERMWithoutDatabaseExitsWithinDrainTimeout is issue 34's item 4:
// a crewcast serve on PostgreSQL whose database stops answering mid
// fan-out (the primary died; no standby promoted yet) must still exit on
// SIGTERM within the drain timeout, and a webhook posted while no database
// answers must not be acknowledged.
func TestSIGTERMWithoutDatabaseExitsWithinDrainTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"single", nil},
		{"node", []string{"--node-id", "nodb-1", "--lease-ttl", "3s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := testDatabase(t, "nodb_"+tc.name)
			proxy := newCutProxy(t, u.Host)
			u.Host = proxy.ln.Addr().String()
			hooks := &cutWatch{}
			hookSrv := httptest.NewServer(hooks)
			t.Cleanup(hookSrv.Close)
			_, simURL := startSim(t, "--seed", "1", "--delay-ms", "5,20", "--telnyx-webhook-url", hookSrv.URL+"/webhooks/telnyx",
				"--retry-backoff", "200ms")
			env := append(serveEnv(t, simURL, simURL), "CREWCAST_CLUSTER_SECRET=e2e-cluster-secret")
			args := append([]string{"--db", u.String(), "--provider", "telnyx", "--send-rate", "20"}, tc.args...)
			srv, base := startServe(t, "serve", env, args...)
			hooks.setUpstream(base)
			createGroupWhenOwned(t, base, numbers(300), "Crew call: site C, 6:00.")
			waitFor(t, hooks.n, 30*time.Second, "a webhook acknowledged", func() bool { return hooks.count(false) > 0 })
			hooks.markCut()
			proxy.cutOff()
			// An inbound text while no database answers: its webhook must
			// never be acknowledged (the simulator retries, as a provider).
			if _, err := call(http.MethodPost, simURL+"/sim/inbound", simToken,
				map[string]string{"from": numbers(1)[0], "to": from, "text": "YES"}, nil, http.StatusAccepted); err != nil {
				t.Logf("sim inbound: %v", err)
			}
			waitFor(t, hooks.n, 30*time.Second, "a webhook posted after the cut", func() bool { return hooks.count(true) > 0 })
			began := time.Now()
			_ = syscall.Kill(srv.Pid(), syscall.SIGTERM)
			limit := time.NewTimer(drainTimeout)
			defer limit.Stop()
			select {
			case <-srv.Done():
				t.Logf("exited %s after SIGTERM: %v", time.Since(began).Round(time.Millisecond), srv.Err())
			case <-limit.C:
				t.Fatalf("serve had not exited %s after SIGTERM with no database (the drain timeout)", time.Since(began).Round(time.Second))
			}
			if !strings.Contains(testproc.Tail(srv.LogPath, 200), "no database answers") {
				t.Errorf("serve's log does not say that it stopped without a database")
			}
			if n := hooks.acked(); n > 0 {
				t.Fatalf("%d webhooks posted after the database was cut were answered 2xx", n)
			}
		})
	}
}

// cutWatch relays webhooks to the server and counts, for those that
// arrived after markCut, the ones answered 2xx.
type cutWatch struct {
	webhookRelay
	once sync.Once
	mu   sync.Mutex
	cut  bool
	seen [2]int // answers before / after the cut
	ok   int    // 2xx answers to webhooks that arrived after the cut
}

func (c *cutWatch) init() {
	c.once.Do(func() {
		c.n = newNotifier()
		c.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil}}
	})
}

func (c *cutWatch) setUpstream(u string) { c.init(); c.upstream.Store(&u) }

func (c *cutWatch) markCut() { c.mu.Lock(); c.cut = true; c.mu.Unlock() }

func (c *cutWatch) count(after bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if after {
		return c.seen[1]
	}
	return c.seen[0]
}

func (c *cutWatch) acked() int { c.mu.Lock(); defer c.mu.Unlock(); return c.ok }

func (c *cutWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.init()
	c.mu.Lock()
	after := c.cut
	c.mu.Unlock()
	body, _ := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	up := c.upstream.Load()
	if up == nil {
		http.Error(w, "no server", http.StatusServiceUnavailable)
		return
	}
	code, h, b, err := forward(r.Context(), c.client, *up, r, body)
	if err != nil {
		code, h, b = http.StatusServiceUnavailable, nil, nil
	}
	c.mu.Lock()
	if after {
		c.seen[1]++
		if code/100 == 2 {
			c.ok++
		}
	} else {
		c.seen[0]++
	}
	c.mu.Unlock()
	c.n.notify()
	writeAnswer(w, code, h, b)
}

// createGroupWhenOwned posts a group, again while the answer is 503 (a
// node that has not taken its shards yet answers so, with Retry-After).
func createGroupWhenOwned(t *testing.T, base string, to []string, text string) string {
	t.Helper()
	body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			ID string `json:"id"`
		}
		code, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &out, http.StatusCreated)
		if err == nil {
			return out.ID
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // the server is another process: polled
	}
}

// readyz returns the status code of GET /readyz (0 when unreachable).
func readyz(base string) int {
	resp, err := client.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestNoPrimaryThenBackResumesWithoutRestart is issue 34's item 2 with the
// database behind a proxy that is cut and healed (a primary lost, then a
// standby promoted behind the same address): while no database answers,
// /readyz is not ready, no webhook is acknowledged and nothing is sent;
// once it answers again the same process finishes the fan-out, nobody
// sent twice.
func TestNoPrimaryThenBackResumesWithoutRestart(t *testing.T) {
	u := testDatabase(t, "noprimary")
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	hooks := &cutWatch{}
	hookSrv := httptest.NewServer(hooks)
	t.Cleanup(hookSrv.Close)
	_, simURL := startSim(t, "--seed", "2", "--delay-ms", "5,20", "--telnyx-webhook-url", hookSrv.URL+"/webhooks/telnyx",
		"--retry-backoff", "500ms")
	env := append(serveEnv(t, simURL, simURL), "CREWCAST_CLUSTER_SECRET=e2e-cluster-secret")
	srv, base := startServe(t, "serve", env, "--db", u.String(), "--provider", "telnyx", "--send-rate", "25",
		"--node-id", "noprimary-1", "--lease-ttl", "3s")
	hooks.setUpstream(base)
	to := numbers(200)
	id := createGroupWhenOwned(t, base, to, "Crew call: site D, 5:30.")
	waitFor(t, hooks.n, 30*time.Second, "a webhook acknowledged", func() bool { return hooks.count(false) > 0 })
	hooks.markCut()
	proxy.cutOff()
	cut := time.Now()
	deadline := time.Now().Add(20 * time.Second)
	for readyz(base) != http.StatusServiceUnavailable { // another process: polled
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not answer 503 within 20 s of losing the database")
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitFor(t, hooks.n, 30*time.Second, "webhooks posted while no database answers", func() bool { return hooks.count(true) >= 3 })
	// Stay down past the lease TTL, so the node fences itself and has to
	// take its shards back at new epochs.
	for time.Since(cut) < 6*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	if n := hooks.acked(); n > 0 {
		t.Fatalf("%d webhooks were acknowledged while no database answered", n)
	}
	healed := time.Now()
	proxy.heal()
	// A send in flight when the database went away is honestly
	// unconfirmed (its claim committed, its outcome could not be): at most
	// the few calls in flight at the cut, never resent (checked below).
	pollGroup(t, base, adminKey, id, 120*time.Second, "every recipient delivered (or, in flight at the cut, unconfirmed) after the database came back", func(g groupView) bool {
		return g.Counts["delivered"]+g.Counts["unconfirmed"] == len(to) && g.Counts["unconfirmed"] <= 3
	})
	if !srv.Alive() {
		t.Fatalf("serve exited: %v", srv.Err())
	}
	if c := readyz(base); c != http.StatusOK {
		t.Fatalf("/readyz answered %d after the database came back", c)
	}
	var l struct {
		Sends []struct {
			To         string    `json:"to"`
			ReceivedAt time.Time `json:"received_at"`
		} `json:"sends"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/ledger", simToken, nil, &l, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	// A send whose provider call had begun before the cut may land just
	// after it; none may start while the database is away.
	during := 0
	for _, s := range l.Sends {
		if s.ReceivedAt.After(cut.Add(time.Second)) && s.ReceivedAt.Before(healed) {
			during++
		}
	}
	if during > 0 {
		t.Errorf("%d sends reached the provider while no database answered", during)
	}
	if sent := ledgerCounts(t, simURL); len(sent) != len(to) {
		t.Errorf("%d numbers in the ledger, want %d", len(sent), len(to))
	}
	t.Logf("no database for %s; %d webhooks refused meanwhile; all %d delivered %s after the heal, by the same process",
		healed.Sub(cut).Round(time.Millisecond), hooks.count(true), len(to), time.Since(healed).Round(time.Millisecond))
}
