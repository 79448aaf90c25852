package server_test

// Server-level integration tests: server.New + Start on 127.0.0.1:0 with the
// demo provider — the simulator in-process, reached through the real Telnyx
// adapter over HTTP, its signed webhooks posted back to our own
// /webhooks/telnyx — so verification → inbox → group actor → store is
// exercised end to end. Each test runs on SQLite and, when
// CREWCAST_TEST_POSTGRES is set, on PostgreSQL in a fresh schema.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testFrom is the sender number of every test group.
const testFrom = "+15550100000"

// testText is the message every test group sends.
const testText = "Crew call: site B, 7:00. Reply YES or NO."

// adminKey is the bootstrap admin key the test servers register.
const adminKey = "it-admin-130d2c5ed110ad53e2727320739614b0cc260756d5e42d8f"

// numbers returns n distinct fictional recipient numbers.
func numbers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", 300001+i)
	}
	return out
}

// engine is where a test server keeps its data.
type engine struct {
	name   string
	db     string
	schema string
}

// forEachEngine runs body on SQLite and, when CREWCAST_TEST_POSTGRES is
// set, on PostgreSQL in a fresh schema dropped at the end.
func forEachEngine(t *testing.T, body func(t *testing.T, eng engine)) {
	t.Run("sqlite", func(t *testing.T) {
		body(t, engine{name: "sqlite", db: filepath.Join(t.TempDir(), "crewcast.db")})
	})
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv("CREWCAST_TEST_POSTGRES")
		if url == "" {
			t.Skip("PostgreSQL integration tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
		}
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		schema := "crewcast_srv_" + hex.EncodeToString(b[:])
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
				return
			}
			defer conn.Close(ctx)
			if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
				t.Errorf("drop schema %s: %v", schema, err)
			}
		})
		body(t, engine{name: "postgres", db: url, schema: schema})
	})
}

// testLogger discards logs unless CREWCAST_TEST_LOG is set, which sends
// them to stderr for debugging.
func testLogger() *slog.Logger {
	if os.Getenv("CREWCAST_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// start boots a demo-provider server with the given simulator faults,
// pacing off, and stops it at cleanup.
func start(t *testing.T, eng engine, faults sim.Faults, mod func(*server.Config)) *server.Server {
	t.Helper()
	seed := int64(7)
	cfg := server.Config{
		Addr: "127.0.0.1:0", DB: eng.db, DBSchema: eng.schema, Provider: server.ProviderDemo,
		DemoFaults: &faults, DemoSeed: &seed, AdminKey: adminKey, SendRate: 0,
		RetentionInterval: -1, Logger: testLogger(),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		began := time.Now()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		t.Logf("stopped in %s", time.Since(began).Round(time.Millisecond))
	})
	return srv
}

// createGroup creates a group through POST /v1/groups and returns its id.
func createGroup(t *testing.T, srv *server.Server, to []string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"from": testFrom, "to": to, "text": testText, "mode": "individual"})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/v1/groups", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/groups: %d %s", resp.StatusCode, b)
	}
	var out struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.ID == "" {
		t.Fatalf("POST /v1/groups answer %s: %v", b, err)
	}
	return out.ID
}

// await waits, woken by the tracker's committed changes, until cond holds
// for the group's projection row.
func await(t *testing.T, srv *server.Server, id string, timeout time.Duration, what string, cond func(store.GroupRow) bool) store.GroupRow {
	t.Helper()
	sub := srv.Tracker().Hub().Subscribe(id)
	defer sub.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// progress only logs, so that a slow run shows where it stood.
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	began := time.Now()
	for {
		g, err := srv.Store().GetGroup(context.Background(), id)
		if err != nil && !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("read group: %v", err)
		}
		if err == nil && cond(g) {
			return g
		}
		// Changes are published after their commit: anything received
		// after the read above is a newer state.
		select {
		case <-sub.C:
		case <-progress.C:
			p, _ := srv.Store().PendingInbox(context.Background(), store.InboxRef{}, 10000)
			t.Logf("after %s waiting for %s: group %s, counts %v, %d unprocessed webhooks", time.Since(began).Round(time.Second), what, g.Status, g.Counts, len(p))
		case <-deadline.C:
			t.Fatalf("%s: timed out after %s waiting for %s; group %s, counts %v", srv.Store().Engine(), timeout, what, g.Status, g.Counts)
		}
	}
}

func complete(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete }

// deliveries returns the recipient rows of a group by number.
func deliveries(t *testing.T, srv *server.Server, id string) map[string]store.DeliveryRow {
	t.Helper()
	rows, _, err := srv.Store().ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]store.DeliveryRow, len(rows))
	for _, r := range rows {
		out[r.Number] = r
	}
	return out
}

// ledger asserts the simulator accepted no (from, to, text) twice and
// returns how often it accepted each number.
func ledger(t *testing.T, srv *server.Server) map[string]int {
	t.Helper()
	if d := srv.Sim().Duplicates(); len(d) != 0 {
		t.Errorf("the simulator accepted the same message more than once: %+v", d)
	}
	out := map[string]int{}
	for _, s := range srv.Sim().Ledger() {
		out[s.To]++
	}
	return out
}

// drained waits until the simulator has posted every webhook it planned and
// the inbox holds no unprocessed entry.
func drained(t *testing.T, srv *server.Server, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Sim().WaitIdle(ctx); err != nil {
		t.Fatalf("simulator webhooks still pending: %v", err)
	}
	sub := srv.Tracker().Hub().Subscribe("")
	defer sub.Close()
	first := true
	for {
		p, err := srv.Store().PendingInbox(ctx, store.InboxRef{}, 10)
		if first {
			first = false
			t.Logf("simulator idle; %d unprocessed webhooks left", len(p))
		}
		if err != nil {
			t.Fatalf("pending inbox: %v", err)
		}
		if len(p) == 0 {
			return
		}
		select {
		case <-sub.C:
		case <-ctx.Done():
			t.Fatalf("%d+ inbox entries never processed, e.g. %s/%s (message %s)", len(p), p[0].Provider, p[0].EventID, p[0].MessageID)
		}
	}
}

// journal returns a group's journal events, decoded.
func journal(t *testing.T, srv *server.Server, id string) []group.Event {
	t.Helper()
	var out []group.Event
	err := srv.Store().Load(context.Background(), id, 0, func(e actor.Event) error {
		ev, err := group.Decode(e.Type, e.Data)
		if err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestThousandRecipientsComplete sends one group to 1,000 recipients with
// pacing off and quick webhooks: every recipient reaches a final status,
// each is sent exactly once, and every webhook is processed.
func TestThousandRecipientsComplete(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		const n = 1000
		srv := start(t, eng, sim.Faults{DelayMS: [2]int{0, 5}, FailRate: 0.05, UnknownRate: 0.05}, nil)
		to := numbers(n)
		began := time.Now()
		id := createGroup(t, srv, to)
		g := await(t, srv, id, 90*time.Second, "complete", complete)
		t.Logf("%s: %d recipients final in %s: %v", eng.name, n, time.Since(began).Round(time.Millisecond), g.Counts)
		if sum := g.Counts["delivered"] + g.Counts["failed"] + g.Counts["unknown"]; sum != n {
			t.Errorf("counts %v: delivered+failed+unknown = %d, want %d", g.Counts, sum, n)
		}
		rows := deliveries(t, srv, id)
		if len(rows) != n {
			t.Fatalf("%d recipient rows, want %d", len(rows), n)
		}
		sent := ledger(t, srv)
		for _, num := range to {
			d := rows[num]
			if !d.Status.Final() || d.Attempts != 1 || d.ProviderMessageID == "" || sent[num] != 1 {
				t.Errorf("%s: status %s attempts %d message %q, accepted %d times", num, d.Status, d.Attempts, d.ProviderMessageID, sent[num])
			}
		}
		began = time.Now()
		drained(t, srv, 30*time.Second)
		t.Logf("drained in %s", time.Since(began).Round(time.Millisecond))
	})
}

// apiDo makes one admin request to the server's API and returns the status
// and body.
func apiDo(t *testing.T, srv *server.Server, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, srv.URL()+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// apiRecipient is one recipient as GET /v1/groups/{id} shows it.
type apiRecipient struct {
	Number            string `json:"number"`
	Status            string `json:"status"`
	Attempts          int    `json:"attempts"`
	ProviderMessageID string `json:"provider_message_id"`
	ErrorClass        string `json:"error_class"`
}

// apiGroup reads GET /v1/groups/{id} and returns its recipients by number.
func apiGroup(t *testing.T, srv *server.Server, id string) map[string]apiRecipient {
	t.Helper()
	code, b := apiDo(t, srv, http.MethodGet, "/v1/groups/"+id, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/groups/%s: %d %s", id, code, b)
	}
	var g struct {
		Recipients []apiRecipient `json:"recipients"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	out := map[string]apiRecipient{}
	for _, r := range g.Recipients {
		out[r.Number] = r
	}
	return out
}

// TestAmbiguousSendsThroughTheAPI is T11 through the whole server: the demo
// provider accepts two sends and never answers them (the simulator holds
// the connection past our provider timeout). The one whose webhooks never
// come shows as unconfirmed in GET /v1/groups/{id}, cannot be retried, and
// is sent again only after POST …/resolve not_delivered — exactly once. The
// one whose webhooks arrive is reconciled to delivered without an operator.
func TestAmbiguousSendsThroughTheAPI(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		to := numbers(4)
		silent, heard := to[0], to[1]
		faults := sim.Faults{Script: map[string]string{silent: "accept_timeout:silent", heard: "accept_timeout"}}
		srv := start(t, eng, faults, func(c *server.Config) { c.ProviderTimeout = 2 * time.Second })
		id := createGroup(t, srv, to)
		await(t, srv, id, 30*time.Second, "complete with one delivered by reconciliation", func(g store.GroupRow) bool {
			return complete(g) && g.Counts["delivered"] == 3 && g.Counts["unconfirmed"] == 1
		})
		rs := apiGroup(t, srv, id)
		if r := rs[silent]; r.Status != "unconfirmed" || r.ErrorClass != "uncertain" || r.Attempts != 1 || r.ProviderMessageID != "" {
			t.Errorf("silent ambiguous send: %+v, want unconfirmed, uncertain, 1 attempt, no message id", r)
		}
		accepted := ledger(t, srv)
		var heardID string
		for _, s := range srv.Sim().Ledger() {
			if s.To == heard {
				heardID = s.ID
			}
		}
		if r := rs[heard]; r.Status != "delivered" || r.Attempts != 1 || r.ProviderMessageID != heardID {
			t.Errorf("ambiguous send whose webhooks arrived: %+v, want delivered as %s after 1 attempt", r, heardID)
		}
		for _, num := range to {
			if accepted[num] != 1 {
				t.Errorf("%s accepted %d times, want 1", num, accepted[num])
			}
		}
		path := "/v1/groups/" + id + "/recipients/" + silent
		if code, b := apiDo(t, srv, http.MethodPost, path+"/retry", nil); code != http.StatusConflict {
			t.Errorf("retry of an unconfirmed recipient: %d %s, want 409", code, b)
		}
		if code, b := apiDo(t, srv, http.MethodPost, path+"/resolve", map[string]string{"outcome": "maybe"}); code != http.StatusBadRequest {
			t.Errorf("resolve with outcome maybe: %d %s, want 400", code, b)
		}
		if code, b := apiDo(t, srv, http.MethodPost, "/v1/groups/"+id+"/recipients/"+heard+"/resolve", map[string]string{"outcome": "not_delivered"}); code != http.StatusConflict {
			t.Errorf("resolve of a delivered recipient: %d %s, want 409", code, b)
		}
		// Only the operator's decision may cause a new send; the ledger
		// starts afresh so that exactly that send shows.
		srv.Sim().Reset()
		if err := srv.Sim().SetFaults(sim.Faults{}); err != nil {
			t.Fatal(err)
		}
		if code, b := apiDo(t, srv, http.MethodPost, path+"/resolve", map[string]string{"outcome": "not_delivered"}); code != http.StatusOK {
			t.Fatalf("resolve not_delivered: %d %s", code, b)
		}
		await(t, srv, id, 30*time.Second, "the resolved recipient delivered", func(g store.GroupRow) bool { return g.Counts["delivered"] == 4 })
		if r := apiGroup(t, srv, id)[silent]; r.Attempts != 2 || r.ProviderMessageID == "" {
			t.Errorf("after resolve not_delivered: %+v, want a second attempt with a message id", r)
		}
		if code, b := apiDo(t, srv, http.MethodPost, path+"/resolve", map[string]string{"outcome": "not_delivered"}); code != http.StatusConflict {
			t.Errorf("second resolve: %d %s, want 409", code, b)
		}
		drained(t, srv, 30*time.Second)
		if after := ledger(t, srv); len(after) != 1 || after[silent] != 1 {
			t.Errorf("sends after the operator's decision: %v, want exactly one, to %s", after, silent)
		}
	})
}

// webhookTap sits between the demo simulator and the server (via
// Config.PublicURL), forwarding every webhook and keeping a copy of each
// one the server acknowledged, to be posted again later.
type webhookTap struct {
	upstream atomic.Pointer[string]
	client   *http.Client
	mu       sync.Mutex
	acked    []tappedWebhook
}

// tappedWebhook is one acknowledged webhook, as it was signed.
type tappedWebhook struct {
	path   string
	header http.Header
	body   []byte
}

func (wt *webhookTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	up := wt.upstream.Load()
	if up == nil {
		http.Error(w, "no server", http.StatusServiceUnavailable)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, *up+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, "request", http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := wt.client.Do(req)
	if err != nil {
		http.Error(w, "server unreachable", http.StatusServiceUnavailable)
		return
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		wt.mu.Lock()
		wt.acked = append(wt.acked, tappedWebhook{path: r.URL.RequestURI(), header: r.Header.Clone(), body: body})
		wt.mu.Unlock()
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rb)
}

// counterValue reads one sample of a counter from GET /metrics (0 when the
// series does not exist yet).
func counterValue(t *testing.T, srv *server.Server, series string) float64 {
	t.Helper()
	code, b := apiDo(t, srv, http.MethodGet, "/metrics", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", code)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// TestWebhooksReplayedAfterRestartAreHarmless is T2 through the HTTP
// endpoint: the simulator posts every webhook twice and lets final receipts
// overtake sent ones; after a restart on the same database, every webhook
// the first server acknowledged is posted again three times, concurrently
// and shuffled. The replays must all be answered 2xx, be recognised as
// duplicates (no new inbox row), and change nothing: the journal and every
// recipient stay as they were, each event observed once, and no status
// ever moved backwards.
func TestWebhooksReplayedAfterRestartAreHarmless(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		tapTransport := &http.Transport{Proxy: nil}
		tap := &webhookTap{client: &http.Client{Timeout: 10 * time.Second, Transport: tapTransport}}
		tapSrv := httptest.NewServer(tap)
		t.Cleanup(tapSrv.Close)
		// Replays come from a client of their own; both close their idle
		// connections before a server stops, since http.Server.Shutdown
		// waits up to 5 s for a connection that never carried a request.
		replayTransport := &http.Transport{Proxy: nil}
		replayClient := &http.Client{Timeout: 10 * time.Second, Transport: replayTransport}
		to := numbers(8)
		faults := sim.Faults{DuplicateRate: 1, Reorder: true, DelayMS: [2]int{0, 20}, Script: map[string]string{
			to[0]: "fail:40001", to[1]: "fail:40006", to[2]: "unknown", to[3]: "reply:YES", to[4]: "reply:NO",
			to[5]: "deliver", to[6]: "deliver", to[7]: "deliver",
		}}
		public := func(c *server.Config) { c.PublicURL = tapSrv.URL }
		srv1 := start(t, eng, faults, public)
		u1 := srv1.URL()
		tap.upstream.Store(&u1)
		id := createGroup(t, srv1, to)
		await(t, srv1, id, 30*time.Second, "complete with both replies", func(g store.GroupRow) bool {
			return complete(g) && g.Counts["replied"] == 2
		})
		drained(t, srv1, 30*time.Second)
		before := deliveries(t, srv1, id)
		journalBefore := journal(t, srv1, id)
		ledger(t, srv1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		tapTransport.CloseIdleConnections()
		if err := srv1.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		// Same seed: the new demo simulator signs with the same key, so the
		// old webhooks verify.
		srv2 := start(t, eng, faults, public)
		t.Cleanup(replayTransport.CloseIdleConnections) // before srv2 stops
		tap.mu.Lock()
		hooks := append([]tappedWebhook(nil), tap.acked...)
		tap.mu.Unlock()
		if len(hooks) < 2*2*len(to) {
			t.Fatalf("only %d webhooks acknowledged, want at least %d (sent and final, each twice)", len(hooks), 4*len(to))
		}
		var replays []tappedWebhook
		for range 3 {
			replays = append(replays, hooks...)
		}
		mrand.Shuffle(len(replays), func(i, j int) { replays[i], replays[j] = replays[j], replays[i] })
		var wg sync.WaitGroup
		codes := make(chan int, len(replays))
		work := make(chan tappedWebhook)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for h := range work {
					req, err := http.NewRequest(http.MethodPost, srv2.URL()+h.path, bytes.NewReader(h.body))
					if err != nil {
						codes <- 0
						continue
					}
					req.Header = h.header.Clone()
					resp, err := replayClient.Do(req)
					if err != nil {
						codes <- 0
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					codes <- resp.StatusCode
				}
			}()
		}
		for _, h := range replays {
			work <- h
		}
		close(work)
		wg.Wait()
		close(codes)
		for c := range codes {
			if c < 200 || c > 299 {
				t.Errorf("a replayed webhook was answered %d, want 2xx (it is already durable)", c)
			}
		}
		const ingested = `crewcast_webhook_events_ingested_total{provider="telnyx",result=`
		if n := counterValue(t, srv2, ingested+`"new"}`); n != 0 {
			t.Errorf("%v replayed webhooks stored as new, want 0", n)
		}
		if n := counterValue(t, srv2, ingested+`"duplicate"}`); n != float64(len(replays)) {
			t.Errorf("%v replays recognised as duplicates, want %d", n, len(replays))
		}
		if p, err := srv2.Store().PendingInbox(context.Background(), store.InboxRef{}, 10); err != nil || len(p) != 0 {
			t.Errorf("inbox after the replays: %d unprocessed (err %v), want none", len(p), err)
		}
		if after := journal(t, srv2, id); len(after) != len(journalBefore) {
			t.Errorf("journal grew from %d to %d events on replays", len(journalBefore), len(after))
		}
		after := deliveries(t, srv2, id)
		for num, d := range before {
			a := after[num]
			if a.Status != d.Status || a.Attempts != d.Attempts || a.Ack != d.Ack || a.ErrorCode != d.ErrorCode {
				t.Errorf("%s changed on replays: %s/%d/%q/%q → %s/%d/%q/%q", num, d.Status, d.Attempts, d.Ack, d.ErrorCode, a.Status, a.Attempts, a.Ack, a.ErrorCode)
			}
		}
		want := map[string]crewcast.Status{to[0]: crewcast.StatusFailed, to[1]: crewcast.StatusFailed, to[2]: crewcast.StatusUnknown,
			to[3]: crewcast.StatusDelivered, to[4]: crewcast.StatusDelivered, to[5]: crewcast.StatusDelivered,
			to[6]: crewcast.StatusDelivered, to[7]: crewcast.StatusDelivered}
		for num, st := range want {
			if after[num].Status != st {
				t.Errorf("%s: %s, want %s", num, after[num].Status, st)
			}
		}
		if after[to[3]].Ack != crewcast.AckYes || after[to[4]].Ack != crewcast.AckNo {
			t.Errorf("acks %q and %q, want yes and no", after[to[3]].Ack, after[to[4]].Ack)
		}
		// Replaying the journal: one observation per event id, and no
		// recipient's status ever lower than before.
		seen := map[string][]string{}
		g := &group.Group{}
		last := map[int]crewcast.Status{}
		err := srv2.Store().Load(context.Background(), id, 0, func(e actor.Event) error {
			ev, err := group.Decode(e.Type, e.Data)
			if err != nil {
				return err
			}
			if err := g.Apply(ev); err != nil {
				return err
			}
			switch v := ev.(type) {
			case group.Observed:
				if v.Source == group.SourceWebhook {
					seen[v.EventID] = append(seen[v.EventID], fmt.Sprintf("seq %d: %s of %s, status %s", e.Seq, e.Type, g.Recipients[v.Index].Number, v.Status))
				}
			case group.Replied:
				seen[v.EventID] = append(seen[v.EventID], fmt.Sprintf("seq %d: %s", e.Seq, e.Type))
			}
			for i, r := range g.Recipients {
				if prev, ok := last[i]; ok && statusRank(r.Status) < statusRank(prev) {
					t.Errorf("%s moved backwards: %s → %s at seq %d (%s)", r.Number, prev, r.Status, e.Seq, e.Type)
				}
				last[i] = r.Status
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for ev, where := range seen {
			if len(where) != 1 {
				t.Errorf("webhook event %s is in the journal %d times: %v", ev, len(where), where)
			}
		}
	})
}

// statusRank orders statuses as docs/design.md §3 lets them move within one
// attempt (nothing in these tests starts a second attempt).
func statusRank(s crewcast.Status) int {
	switch s {
	case crewcast.StatusPending:
		return 0
	case crewcast.StatusSending:
		return 1
	case crewcast.StatusUnconfirmed:
		return 2
	case crewcast.StatusSent:
		return 3
	case crewcast.StatusUnknown:
		return 4
	case crewcast.StatusDelivered, crewcast.StatusFailed:
		return 5
	}
	return 6
}
