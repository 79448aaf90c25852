package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

const testAdminKey = "ops-admin-6a1d027ead41b2f03db2f3a275a0148f936fb4361216a2b5"

// ackRecorder stands between the simulator and the server, as a reverse
// proxy would: it forwards webhooks and records the event id of every one
// the server acknowledged with a 2xx.
type ackRecorder struct {
	mu    sync.Mutex
	acked map[string]bool
	proxy *httputil.ReverseProxy
}

func (a *ackRecorder) setTarget(target string) {
	u, _ := url.Parse(target)
	a.mu.Lock()
	a.proxy = httputil.NewSingleHostReverseProxy(u)
	// Posts that race the server's shutdown fail; the simulator retries.
	a.proxy.ErrorLog = log.New(io.Discard, "", 0)
	a.mu.Unlock()
}

func (a *ackRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var ev struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	a.mu.Lock()
	proxy := a.proxy
	a.mu.Unlock()
	if proxy == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	rec := &statusRecorder{ResponseWriter: w}
	proxy.ServeHTTP(rec, r)
	if rec.status/100 == 2 && ev.Data.ID != "" {
		a.mu.Lock()
		a.acked[ev.Data.ID] = true
		a.mu.Unlock()
	}
}

func (a *ackRecorder) snapshot() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.acked))
	for id := range a.acked {
		out = append(out, id)
	}
	return out
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// startDemo boots a demo server on db, its simulator posting webhooks
// through rec when rec is not nil, and stops it at cleanup.
func startDemo(t *testing.T, db string, rec *ackRecorder, sendRate float64) *server.Server {
	t.Helper()
	faults := sim.Faults{DelayMS: [2]int{10, 150}, ReplyRate: 0.3, FailRate: 0.05, ReplyTexts: []string{"YES", "NO"}}
	seed := int64(11)
	cfg := server.Config{Addr: "127.0.0.1:0", DB: db, Provider: server.ProviderDemo, DemoFaults: &faults, DemoSeed: &seed,
		AdminKey: testAdminKey, SendRate: sendRate, RetentionInterval: -1}
	if rec != nil {
		front := httptest.NewServer(rec)
		t.Cleanup(front.Close)
		cfg.PublicURL = front.URL
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		rec.setTarget(srv.URL())
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { stopServer(t, srv) }) })
	return srv
}

func stopServer(t *testing.T, srv *server.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// createGroup posts a group of n recipients and returns its id.
func createGroup(t *testing.T, base string, n int) string {
	t.Helper()
	to := make([]string, n)
	for i := range to {
		to[i] = fmt.Sprintf("+1555%07d", 400001+i)
	}
	body, _ := json.Marshal(map[string]any{"from": "+15550100000", "to": to, "text": "Crew call 7am", "mode": "individual"})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/groups", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create group: %d %v", resp.StatusCode, err)
	}
	return out.ID
}

// runOps runs one crewcast command in-process.
func runOps(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// inboxEventIDs reads every inbox event id of a SQLite database.
func inboxEventIDs(t *testing.T, path string) map[string]bool {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT event_id FROM inbox WHERE provider = 'telnyx'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBackupDuringFanOut backs up a live server while a group is being sent
// and its webhooks (receipts, replies) arrive, refuses to restore over the
// running server's database, restores into a stopped one, and finds in the
// restored database every webhook the server had acknowledged before the
// backup began; a server started on it applies them all.
func TestBackupDuringFanOut(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live.db")
	rec := &ackRecorder{acked: map[string]bool{}}
	// Paced at 100 sends a second, the fan-out lasts 6 s at least.
	srv := startDemo(t, live, rec, 100)
	id := createGroup(t, srv.URL(), 600)

	// Wait until webhooks are flowing, mid fan-out.
	deadline := time.Now().Add(20 * time.Second)
	for len(rec.snapshot()) < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d webhooks acknowledged after 20s", len(rec.snapshot()))
		}
		time.Sleep(10 * time.Millisecond)
	}
	ackedBefore := rec.snapshot()
	bak := filepath.Join(dir, "backup.db")
	code, out, errOut := runOps("backup", "--db", live, "--to", bak)
	if code != 0 {
		t.Fatalf("backup: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"backup written: " + bak, "integrity: ok", "replayed:  group " + id, "status sending (matches its projection)"} {
		if !strings.Contains(out, want) {
			t.Errorf("backup output lacks %q:\n%s", want, out)
		}
	}
	ackedAfter := len(rec.snapshot())
	t.Logf("acknowledged before backup %d, by its end %d\n%s", len(ackedBefore), ackedAfter, out)

	code, out, errOut = runOps("restore", "--from", bak, "--db", live)
	if code == 0 || !strings.Contains(errOut, "open in another process") {
		t.Fatalf("restore over the running server's database: exit %d: %s%s", code, out, errOut)
	}

	restored := filepath.Join(dir, "restored.db")
	code, out, errOut = runOps("restore", "--from", bak, "--db", restored)
	if code != 0 {
		t.Fatalf("restore: exit %d: %s%s", code, out, errOut)
	}
	have := inboxEventIDs(t, restored)
	missing := 0
	for _, ev := range ackedBefore {
		if !have[ev] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d webhooks acknowledged before the backup are missing from the restored database", missing, len(ackedBefore))
	}

	// A server on the restored database applies every webhook it holds.
	srv2 := startDemo(t, restored, nil, 0)
	deadline = time.Now().Add(30 * time.Second)
	for {
		g, err := srv2.Store().GetGroup(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		pend, err := srv2.Store().PendingInbox(context.Background(), store.InboxRef{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(pend) == 0 && g.Counts["sending"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restored server did not apply its inbox: %d pending, counts %v", len(pend), g.Counts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopServer(t, srv2)
	info, err := sqlite.Inspect(context.Background(), restored)
	if err != nil || info.Integrity != "ok" {
		t.Fatalf("restored database after use: %+v %v", info, err)
	}
}
