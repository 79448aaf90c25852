package server_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
	"github.com/crewcast/crewcast/tracker"
)

// The person of the byte-search test (issue 27): a saved contact with a
// field, sent a template that renders their first name and field, who
// replied, and whom an escalation named as not having answered.
const (
	erasedNumber  = "+15550100002"
	erasedName    = "Bartholomew Vantongeren"
	erasedSite    = "Kestrelmoor"
	erasedReply   = "Quillhaven bridge is shut, there by 7"
	erasedOther   = "+15550100003"
	erasedText    = "Hi Bartholomew, gate code 7741 at Kestrelmoor"
	erasedTmpl    = `Hi {{first_name | default "crew"}}, gate code 7741 at {{fields.site | default "depot"}}`
	escalationNum = "+15550109999"
)

// erasedValues are every value of the person's: the number in each form
// it is written in, the name and its parts, the field value, the rendered
// text, the reply and the contact id.
func erasedValues(contactID string) []string {
	return []string{erasedNumber, "15550100002", "5550100002", "555-010-0002", "(555) 010-0002", "555.010.0002",
		erasedName, "Bartholomew", "Vantongeren", erasedSite, erasedText, erasedReply, "Quillhaven", contactID}
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// findValues returns "where: value" for every value found in raw, as bytes
// and as the hex PostgreSQL renders bytea in.
func findValues(where string, raw []byte, values []string) []string {
	var hits []string
	for _, v := range values {
		if bytes.Contains(raw, []byte(v)) || bytes.Contains(raw, []byte(hex.EncodeToString([]byte(v)))) {
			hits = append(hits, where+": "+v)
		}
	}
	return hits
}

// TestErasureLeavesNothingOfThePerson erases a person from a template
// group with fields, their reply, an escalation that named them and a
// follow-up that repeated their text, then searches every byte the server
// wrote for each of their values: the API's answers (JSON and CSV), the
// database (SQLite: the file, its WAL and a backup taken afterwards;
// PostgreSQL: every row of every table) and the logs.
func TestErasureLeavesNothingOfThePerson(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		logs := &lockedBuffer{}
		hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b) // a receiver that echoes: its answer is kept as the attempt's response
		}))
		t.Cleanup(hooks.Close)
		srv := start(t, eng, sim.Faults{}, func(c *server.Config) {
			c.Retention.HashKey = []byte("erasure-key")
			c.WebhookAllowPrivate = true
			c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		contactID, ids := seedErasedPerson(t, srv, hooks.URL)
		values := erasedValues(contactID)
		if hits := apiTraces(t, srv, ids, values); len(hits) == 0 {
			t.Fatal("before the erasure the API shows none of the person's values: the search proves nothing")
		}
		if hits := storeTraces(t, srv, eng, values); len(hits) == 0 {
			t.Fatal("before the erasure the database holds none of the person's values: the search proves nothing")
		}

		code, b := apiDo(t, srv, http.MethodPost, "/v1/erasure", map[string]string{"number": erasedNumber})
		var rep tracker.ErasureReport
		if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || !rep.Erased || rep.Groups != 2 {
			t.Fatalf("POST /v1/erasure: %d %s", code, b)
		}
		hits := apiTraces(t, srv, ids, values)
		if eng.name == "sqlite" {
			backup := filepath.Join(t.TempDir(), "after-erasure.db")
			if err := sqlite.Backup(context.Background(), eng.db, backup); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(backup)
			if err != nil {
				t.Fatal(err)
			}
			hits = append(hits, findValues("backup", raw, values)...)
		}
		hits = append(hits, storeTraces(t, srv, eng, values)...)
		// Stopping writes too (snapshots, the last checkpoint).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		hits = append(hits, storeTraces(t, nil, eng, values)...)
		hits = append(hits, findValues("logs", logs.Bytes(), values)...)
		if len(hits) > 0 {
			t.Fatalf("after the erasure the person's values are still kept:\n%s", strings.Join(hits, "\n"))
		}
	})
}

// seedErasedPerson saves the person as a contact, registers a webhook
// endpoint, and sends two groups to them and another number: a template
// with fields they reply to, and one with a follow-up and an escalation
// that lists them as not having answered. It returns the contact id and
// the groups.
func seedErasedPerson(t *testing.T, srv *server.Server, hookURL string) (string, []string) {
	t.Helper()
	code, b := apiDo(t, srv, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": hookURL, "events": []string{"*"}})
	if code != http.StatusCreated {
		t.Fatalf("POST /v1/webhook-endpoints: %d %s", code, b)
	}
	contactID := saveErasedPerson(t, srv)
	mk := func(extra map[string]any) string {
		return createTemplateGroup(t, srv, []string{erasedNumber, erasedOther}, extra)
	}
	first := mk(map[string]any{})
	await(t, srv, first, 20*time.Second, "complete", complete)
	if _, err := srv.Sim().Inbound(context.Background(), erasedNumber, testFrom, erasedReply); err != nil {
		t.Fatal(err)
	}
	await(t, srv, first, 20*time.Second, "the reply", func(g store.GroupRow) bool { return g.Counts["replied"] == 1 })
	second := mk(map[string]any{"followup": map[string]any{"after": "1s", "max": 1},
		"escalate": map[string]any{"after": "1s", "to": []string{escalationNum}}})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, b := apiDo(t, srv, http.MethodGet, "/v1/groups/"+second, nil)
		if strings.Contains(string(b), `"escalated_at"`) && strings.Contains(string(b), `"followups_sent":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no escalation and follow-up: %s", b)
		}
	}
	await(t, srv, second, 20*time.Second, "complete", complete)
	drained(t, srv, 20*time.Second)
	return contactID, []string{first, second}
}

// saveErasedPerson saves the person as a contact through srv and returns
// its id.
func saveErasedPerson(t *testing.T, srv *server.Server) string {
	t.Helper()
	code, b := apiDo(t, srv, http.MethodPost, "/v1/contacts", map[string]any{"number": erasedNumber, "name": erasedName,
		"fields": map[string]string{"site": erasedSite}})
	var ct struct {
		ID string `json:"id"`
	}
	if code != http.StatusCreated || json.Unmarshal(b, &ct) != nil || ct.ID == "" {
		t.Fatalf("POST /v1/contacts: %d %s", code, b)
	}
	return ct.ID
}

// createTemplateGroup creates a group of the person's template to `to`
// through srv, with the extra fields of the request (a policy), and
// returns its id.
func createTemplateGroup(t *testing.T, srv *server.Server, to []string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"from": testFrom, "to": to, "text": erasedTmpl, "mode": "individual"}
	for k, v := range extra {
		body[k] = v
	}
	code, b := apiDo(t, srv, http.MethodPost, "/v1/groups", body)
	var g struct {
		ID string `json:"id"`
	}
	if code != http.StatusCreated || json.Unmarshal(b, &g) != nil || g.ID == "" {
		t.Fatalf("POST /v1/groups: %d %s", code, b)
	}
	return g.ID
}

// apiTraces reads what the API shows of the groups, the person's reports
// and replies and the directory, as JSON and CSV, and finds the values.
func apiTraces(t *testing.T, srv *server.Server, ids, values []string) []string {
	t.Helper()
	paths := []string{"/v1/reports/deliveries?format=csv", "/v1/reports/recipients/" + erasedNumber + "?format=csv",
		"/v1/replies", "/v1/replies?format=csv", "/v1/contacts", "/v1/audit", "/v1/suppressions"}
	for _, id := range ids {
		paths = append(paths, "/v1/groups/"+id, "/v1/groups/"+id+"/recipients", "/v1/groups/"+id+"/recipients?format=csv",
			"/v1/groups/"+id+"/events")
	}
	var hits []string
	for _, p := range paths {
		code, b := apiDo(t, srv, http.MethodGet, p, nil)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, code, b)
		}
		hits = append(hits, findValues("GET "+p, b, values)...)
	}
	return hits
}

// storeTraces searches the database: SQLite's files (after a checkpoint
// when srv runs; as the server left them when srv is nil), or every row of
// every table of the PostgreSQL schema.
func storeTraces(t *testing.T, srv *server.Server, eng engine, values []string) []string {
	t.Helper()
	if eng.name == "postgres" {
		if srv == nil {
			return nil // the rows were searched while it ran
		}
		return postgresTraces(t, eng, values)
	}
	var hits []string
	for _, f := range []string{eng.db, eng.db + "-wal", eng.db + "-journal"} {
		raw, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, findValues(filepath.Base(f), raw, values)...)
	}
	return hits
}

// postgresTraces reads every row of every table of the schema as text
// (bytea as hex) and finds the values.
func postgresTraces(t *testing.T, eng engine, values []string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, eng.db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, eng.schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("tables of %s: %v, %v", eng.schema, tables, err)
	}
	var hits []string
	for _, tb := range tables {
		rows, err := conn.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{eng.schema, tb}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		hits = append(hits, findValues(tb, []byte(strings.Join(texts, "\n")), values)...)
	}
	return hits
}

// awaitEvenSplit waits until the two nodes of a's cluster hold 32 shards
// each.
func awaitEvenSplit(t *testing.T, a *server.Server) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		v := clusterView(t, a, "")
		if len(v.Nodes) == 2 && v.Nodes[0].Shards == 32 && v.Nodes[1].Shards == 32 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no even split: %+v", v.Nodes)
		}
	}
}
