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
	"net/http"
	"os"
	"path/filepath"
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
const adminKey = "integration-test-admin-key-0123456789"

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
