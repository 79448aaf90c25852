package webhookout

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

func TestNextAttemptSchedule(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
		10 * time.Hour, 10 * time.Hour}
	for i, d := range want {
		if got := NextAttempt(now, i+1, 0.5, 0).Sub(now); got != d {
			t.Errorf("after attempt %d: %v, want %v", i+1, got, d)
		}
		lo, hi := NextAttempt(now, i+1, 0, 0).Sub(now), NextAttempt(now, i+1, 0.999999, 0).Sub(now)
		if lo != d*8/10 || hi < d*119/100 || hi > d*12/10 {
			t.Errorf("after attempt %d: jitter range [%v, %v], want ±20%% of %v", i+1, lo, hi, d)
		}
	}
	if got := NextAttempt(now, 8, 0.5, 0); !got.IsZero() {
		t.Fatalf("after the 8th attempt: %v, want give up", got)
	}
	if got := NextAttempt(now, 1, 0.5, time.Minute).Sub(now); got != time.Minute {
		t.Fatalf("Retry-After 60s over 5s: %v", got)
	}
	if got := NextAttempt(now, 2, 0.5, time.Minute).Sub(now); got != 5*time.Minute {
		t.Fatalf("a shorter Retry-After moves nothing: %v", got)
	}
	if got := NextAttempt(now, 1, 0.5, 1000*time.Hour).Sub(now); got != maxRetryAfter {
		t.Fatalf("Retry-After capped: %v", got)
	}
	if ParseRetryAfter("120", now) != 2*time.Minute || ParseRetryAfter(now.Add(time.Hour).UTC().Format(http.TimeFormat), now) != time.Hour ||
		ParseRetryAfter("soon", now) != 0 {
		t.Fatal("ParseRetryAfter")
	}
}

func TestRefused(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "100.64.0.1", "100.100.100.200", "0.0.0.0", "::1", "::", "fc00::1", "fd00:ec2::254",
		"fe80::1", "fe80::1%eth0", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "224.0.0.1",
		"255.255.255.255"} {
		if !Refused(netip.MustParseAddr(s)) {
			t.Errorf("%s is not refused", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "64:ff9b::808:808"} {
		if Refused(netip.MustParseAddr(s)) {
			t.Errorf("%s is refused", s)
		}
	}
	for _, u := range []string{"http://127.0.0.1/x", "https://[::1]/", "http://169.254.169.254/latest", "ftp://x.example/",
		"http://user:pw@x.example/", "http://localhost:8080/", "/relative"} {
		if CheckURL(u, false) == nil {
			t.Errorf("CheckURL(%q) accepted", u)
		}
	}
	if err := CheckURL("https://hooks.example.com/crewcast", false); err != nil {
		t.Fatal(err)
	}
	if err := CheckURL("http://127.0.0.1:9/x", true); err != nil {
		t.Fatalf("allow-private: %v", err)
	}
}

// The check is on the connected address: a host name that resolves to
// loopback (here "localhost", no literal IP in the URL) is refused when
// connecting, and the receiver never sees a request.
func TestClientRefusesConnectedAddress(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, u := range []string{"http://localhost:" + port + "/", srv.URL} {
		resp, err := NewClient(false).Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: request went through", u)
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("%s: %v, want ErrRefused", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatal("the receiver was reached")
	}
	resp, err := NewClient(true).Post("http://localhost:"+port+"/", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("allow-private: %v", err)
	}
	resp.Body.Close()
}

// ---- the worker against a real store ----

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func openStore(t *testing.T, path string, now func() time.Time) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

type fixture struct {
	t      *testing.T
	st     store.Store
	clk    *clock
	sealer *Sealer
	w      *Worker
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	st := openStore(t, filepath.Join(t.TempDir(), "c.db"), clk.Now)
	sealer, err := NewSealer("test server key, long enough")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: st, Sealer: sealer, AllowPrivate: true, Now: clk.Now, Jitter: func() float64 { return 0.5 }}
	if mod != nil {
		mod(&cfg)
	}
	return &fixture{t: t, st: st, clk: clk, sealer: sealer, w: New(cfg)}
}

// endpoint registers url for events and returns its id and whsec_ secret.
func (f *fixture) endpoint(id, url string, events ...string) string {
	secret, err := NewHMACSecret()
	if err != nil {
		f.t.Fatal(err)
	}
	sealed, err := f.sealer.Seal(id, secret)
	if err != nil {
		f.t.Fatal(err)
	}
	now := f.clk.Now()
	if err := f.st.CreateWebhookEndpoint(context.Background(), store.WebhookEndpoint{ID: id, URL: url, Events: events,
		Signing: store.SigningHMAC, Secret: sealed, CreatedAt: now, UpdatedAt: now}); err != nil {
		f.t.Fatal(err)
	}
	return secret
}

func (f *fixture) event(id, typ string) {
	if err := f.st.AppendOutbox(context.Background(), []store.OutboxRow{{MsgID: id, Type: typ, GroupID: "g1",
		Payload: []byte(`{"type":"` + typ + `","timestamp":"2026-03-01T12:00:00Z","data":{"group_id":"g1","seq":1}}`)}}); err != nil {
		f.t.Fatal(err)
	}
}

// step runs one worker step and waits until its lanes are drained.
func (f *fixture) step() {
	f.t.Helper()
	if err := f.w.Step(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.w.wg.Wait()
}

func (f *fixture) attempts(id string) []store.WebhookAttempt {
	as, err := f.st.ListWebhookAttempts(context.Background(), id, 100)
	if err != nil {
		f.t.Fatal(err)
	}
	return as
}

type receiver struct {
	mu     sync.Mutex
	bodies map[string][]byte // by webhook-id
	hdrs   map[string]http.Header
	status func(n int) int // answer to the n-th request (1-based)
	n      int
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.n++
	code := http.StatusOK
	if rc.status != nil {
		code = rc.status(rc.n)
	}
	if code/100 == 2 {
		if rc.bodies == nil {
			rc.bodies, rc.hdrs = map[string][]byte{}, map[string]http.Header{}
		}
		rc.bodies[r.Header.Get("webhook-id")] = body
		rc.hdrs[r.Header.Get("webhook-id")] = r.Header.Clone()
	}
	rc.mu.Unlock()
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "60")
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, "answer from the receiver")
}

func TestDeliverSignedAndRetried(t *testing.T) {
	f := newFixture(t, nil)
	rc := &receiver{status: func(n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	secret := f.endpoint("ep1", srv.URL, "*")
	f.event("msg_1", RecipientUpdated)
	f.step()
	as := f.attempts("ep1")
	if len(as) != 1 || as[0].StatusCode != 500 || as[0].Result != store.AttemptHTTP || as[0].Response != "" ||
		as[0].Error != ErrClassHTTPStatus {
		t.Fatalf("first attempt %+v", as)
	}
	// Retried after 5 s (jitter 0.5 = no spread), not before.
	f.clk.Advance(4 * time.Second)
	f.step()
	if n := len(f.attempts("ep1")); n != 1 {
		t.Fatalf("%d attempts after 4 s, want 1", n)
	}
	f.clk.Advance(time.Second)
	f.step()
	as = f.attempts("ep1")
	if len(as) != 2 || as[0].Result != store.AttemptOK {
		t.Fatalf("attempts after 5 s: %+v", as)
	}
	rc.mu.Lock()
	body, h := rc.bodies["msg_1"], rc.hdrs["msg_1"]
	rc.mu.Unlock()
	// webhook-timestamp is the attempt's time; the official library
	// checks it against the real clock, so verify ignoring it.
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		t.Fatalf("delivered request does not verify: %v (headers %v)", err, h)
	}
	if h.Get("webhook-timestamp") != strconv.FormatInt(f.clk.Now().Unix(), 10) {
		t.Fatalf("webhook-timestamp %q, want the attempt's time", h.Get("webhook-timestamp"))
	}
	if n, _, _ := f.st.WebhookQueue(context.Background()); n != 0 {
		t.Fatalf("queue depth %d after delivery", n)
	}
}

func TestRetryAfterAndRedirectsAndLimits(t *testing.T) {
	f := newFixture(t, nil)
	mux := http.NewServeMux()
	var followed atomic.Int32
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f.endpoint("redir", srv.URL+"/redirect", "*")
	f.endpoint("busy", srv.URL+"/busy", "*")
	f.event("msg_1", GroupCreated)
	f.step()
	if as := f.attempts("redir"); len(as) != 1 || as[0].StatusCode != http.StatusFound || as[0].Result != store.AttemptHTTP {
		t.Fatalf("redirect attempt %+v: a 3xx is an answer and not a success", as)
	}
	if followed.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
	as := f.attempts("busy")
	if len(as) != 1 || as[0].Response != "" || as[0].StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("busy attempt: %+v, want one 503 with no body kept", as)
	}
	// Retry-After 1 h beats the 5 s of the schedule.
	f.clk.Advance(59 * time.Minute)
	f.step()
	if n := len(f.attempts("busy")); n != 1 {
		t.Fatalf("%d attempts before Retry-After ended", n)
	}
	f.clk.Advance(time.Minute)
	f.step()
	if n := len(f.attempts("busy")); n != 2 {
		t.Fatalf("%d attempts after Retry-After, want 2", n)
	}
}

func TestGoneDisablesWithEvent(t *testing.T) {
	reg := newRegistry()
	f := newFixture(t, func(c *Config) { c.Registerer = reg })
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer gone.Close()
	watcher := &receiver{}
	ws := httptest.NewServer(watcher)
	defer ws.Close()
	f.endpoint("gone", gone.URL, RecipientUpdated)
	f.endpoint("watcher", ws.URL, EndpointDisabled)
	f.event("msg_1", RecipientUpdated)
	f.event("msg_2", RecipientUpdated)
	f.step()
	e, err := f.st.GetWebhookEndpoint(context.Background(), "gone")
	if err != nil || e.DisabledAt.IsZero() || !strings.Contains(e.DisabledReason, "410") {
		t.Fatalf("endpoint after 410: %+v %v", e, err)
	}
	f.step() // the endpoint.disabled event goes out
	watcher.mu.Lock()
	n := len(watcher.bodies)
	var body string
	for _, b := range watcher.bodies {
		body = string(b)
	}
	watcher.mu.Unlock()
	if n != 1 || !strings.Contains(body, `"type":"endpoint.disabled"`) || !strings.Contains(body, `"id":"gone"`) {
		t.Fatalf("watcher got %d events: %s", n, body)
	}
	if got := counterValue(t, reg, "crewcast_webhook_out_endpoints_disabled_total"); got != 1 {
		t.Fatalf("disabled metric %v, want 1", got)
	}
	// Nothing more is sent to a disabled endpoint, however long we wait.
	before := len(f.attempts("gone"))
	f.clk.Advance(24 * time.Hour)
	f.step()
	if after := len(f.attempts("gone")); after != before {
		t.Fatalf("attempts to a disabled endpoint: %d → %d", before, after)
	}
}

func TestFailingFiveDaysDisables(t *testing.T) {
	f := newFixture(t, nil)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer down.Close()
	f.endpoint("down", down.URL, "*")
	f.event("msg_1", GroupCreated)
	for i := 0; i < 45; i++ {
		f.step()
		f.clk.Advance(3 * time.Hour)
		f.event("msg_more_"+string(rune('a'+i)), GroupCreated)
	}
	e, _ := f.st.GetWebhookEndpoint(context.Background(), "down")
	if e.DisabledAt.IsZero() || !strings.Contains(e.DisabledReason, "5 days") {
		t.Fatalf("endpoint failing for 5 days: %+v", e)
	}
	if d := e.DisabledAt.Sub(e.FailingSince); d < DisableAfter || d > DisableAfter+3*time.Hour {
		t.Fatalf("disabled %v after the first failure, want 5 days", d)
	}
}

// A slow endpoint holds at most PerEndpoint requests; the others are
// delivered meanwhile.
func TestSlowEndpointDoesNotStarveOthers(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.PerEndpoint = 2; c.Backlog = 4 })
	release := make(chan struct{})
	var inFlight, maxInFlight atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := maxInFlight.Load()
			if n <= m || maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
	}))
	defer slow.Close()
	defer close(release)
	fast := &receiver{}
	fs := httptest.NewServer(fast)
	defer fs.Close()
	f.endpoint("slow", slow.URL, "*")
	f.endpoint("fast", fs.URL, "*")
	for i := 0; i < 30; i++ {
		f.event("msg_"+string(rune('A'+i)), GroupCreated)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fast.mu.Lock()
		n := len(fast.bodies)
		fast.mu.Unlock()
		if n == 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fast endpoint got %d of 30 while the slow one hangs", n)
		}
		f.w.Kick()
		time.Sleep(10 * time.Millisecond)
	}
	if m := maxInFlight.Load(); m > 2 {
		t.Fatalf("slow endpoint had %d requests in flight, want at most 2", m)
	}
	f.w.mu.Lock()
	queued := len(f.w.lanes["slow"].queue)
	f.w.mu.Unlock()
	if queued > 8 {
		t.Fatalf("%d deliveries queued in memory for the slow endpoint", queued)
	}
	cancel()
	release <- struct{}{}
	release <- struct{}{}
	<-done
}

// Rows committed while no worker ran (a crash right after the commit) and
// deliveries claimed by a worker that died are delivered by the next one.
func TestRestartDeliversPending(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "c.db")
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := openStore(t, path, clk.Now)
	f := &fixture{t: t, st: st, clk: clk, sealer: &Sealer{}}
	f.endpoint("ep1", srv.URL, "*")
	f.event("msg_1", GroupCreated)
	f.event("msg_2", GroupCreated)
	if _, err := st.DispatchOutbox(context.Background(), clk.Now(), 1); err != nil {
		t.Fatal(err)
	}
	// A worker claimed msg_1 and died before attempting it.
	if ds, err := st.ClaimWebhookDeliveries(context.Background(), store.WebhookClaim{Now: clk.Now(), Lease: time.Minute, Limit: 10, Owner: "other"}); err != nil || len(ds) != 1 {
		t.Fatalf("claim %v %v", ds, err)
	}
	_ = st.Close()

	st2 := openStore(t, path, clk.Now)
	w := New(Config{Store: st2, AllowPrivate: true, Now: clk.Now, Lease: time.Minute})
	f2 := &fixture{t: t, st: st2, clk: clk, w: w}
	f2.step()
	rc.mu.Lock()
	_, got2 := rc.bodies["msg_2"]
	_, got1 := rc.bodies["msg_1"]
	rc.mu.Unlock()
	if !got2 || got1 {
		t.Fatalf("after restart: msg_2 %v (want delivered), msg_1 %v (want held by its lease)", got2, got1)
	}
	clk.Advance(time.Minute)
	f2.step()
	rc.mu.Lock()
	_, got1 = rc.bodies["msg_1"]
	rc.mu.Unlock()
	if !got1 {
		t.Fatal("msg_1 not delivered after the dead worker's lease ended")
	}
}

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

// A worker killed after claiming gets its claims back at once when it
// starts again under the same owner (one node), without waiting for the
// lease.
func TestRestartTakesBackOwnClaims(t *testing.T) {
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "c.db")
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	st := openStore(t, path, clk.Now)
	f := &fixture{t: t, st: st, clk: clk, sealer: &Sealer{}}
	f.endpoint("ep1", srv.URL, "*")
	f.event("msg_1", GroupCreated)
	if _, err := st.DispatchOutbox(context.Background(), clk.Now(), 10); err != nil {
		t.Fatal(err)
	}
	if ds, err := st.ClaimWebhookDeliveries(context.Background(), store.WebhookClaim{Now: clk.Now(), Lease: time.Hour,
		Limit: 10, Owner: "local"}); err != nil || len(ds) != 1 {
		t.Fatalf("claim %v %v", ds, err)
	}
	_ = st.Close()
	st2 := openStore(t, path, clk.Now)
	w := New(Config{Store: st2, AllowPrivate: true, Now: clk.Now, Poll: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		rc.mu.Lock()
		_, ok := rc.bodies["msg_1"]
		rc.mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim of the previous run was not taken back at start")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The queue gauges: depth counts pending deliveries and undispatched rows,
// the oldest pending age comes from the worker's clock.
func TestQueueMetrics(t *testing.T) {
	reg := newRegistry()
	f := newFixture(t, func(c *Config) { c.Registerer = reg })
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer down.Close()
	f.endpoint("down", down.URL, "*")
	f.event("msg_1", GroupCreated)
	f.event("msg_2", GroupCreated)
	f.step() // both fail once and wait 5 s
	f.clk.Advance(90 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		depth, oldest := gaugeValue(t, reg, "crewcast_webhook_out_queue_depth"), gaugeValue(t, reg, "crewcast_webhook_out_oldest_pending_seconds")
		if depth == 2 && oldest >= 90 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("depth %v oldest %v s, want 2 and ≥ 90", depth, oldest)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := counterValue(t, reg, "crewcast_webhook_out_attempts_total"); got < 2 {
		t.Fatalf("attempts counter %v, want ≥ 2", got)
	}
}

// Before any event the worker exports every family it has, at 0, with a
// series for each attempt result: alerts and dashboard panels on them see
// a series from the start (deploy's metric test relies on it).
func TestMetricsExportedBeforeAnyEvent(t *testing.T) {
	reg := newRegistry()
	newFixture(t, func(c *Config) { c.Registerer = reg })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		got[mf.GetName()] = len(mf.GetMetric())
	}
	for name, series := range map[string]int{"crewcast_webhook_out_attempts_total": 5, "crewcast_webhook_out_endpoints_disabled_total": 1,
		"crewcast_webhook_out_queue_depth": 1, "crewcast_webhook_out_oldest_pending_seconds": 1} {
		if got[name] != series {
			t.Errorf("%s: %d series before any event, want %d", name, got[name], series)
		}
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
