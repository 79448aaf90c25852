package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
	"github.com/crewcast/crewcast/store/sqlite"
)

// Upgrade safety: testdata/upgrade holds a database written by crewcast
// as of schema version 1 (a SQLite file, and a pg_dump of the same
// scenario on PostgreSQL) plus what its projections said then. Every later
// version must open them (running its migrations), read the same
// projections, replay every group's journal to the same statuses, and keep
// working on them. Never regenerate the fixtures to make this test pass:
// they stand for a customer's existing database.
var updateFixtures = flag.Bool("update-fixtures", false,
	"rewrite testdata/upgrade from today's code (only when starting a new fixture generation)")

const (
	fixtureDir      = "testdata/upgrade"
	fixtureSQLite   = fixtureDir + "/sqlite-v1.db"
	fixturePGDump   = fixtureDir + "/postgres-v1.sql"
	fixtureExpected = fixtureDir + "/expected-v1.json"
	// fixtureSchema stands for the schema name in the PostgreSQL dump.
	fixtureSchema = "crewcast_fixture_schema"
)

var fixtureT0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// fixtureState is what the fixture's projections hold, read through the
// store interface.
type fixtureState struct {
	Groups       []store.GroupRow
	Deliveries   map[string][]store.DeliveryRow
	Replies      []store.Reply
	Suppressions []store.Suppression
	Keys         []store.APIKey
	Journal      map[string][]string // "seq type" per group
	Unmatched    []string            // "seq type" of the unmatched journal
	PendingInbox []string            // "provider/event_id"
}

func readFixtureState(t *testing.T, st store.Store) fixtureState {
	t.Helper()
	ctx := context.Background()
	s := fixtureState{Deliveries: map[string][]store.DeliveryRow{}, Journal: map[string][]string{}}
	var err error
	if s.Groups, _, err = st.ListGroups(ctx, store.GroupQuery{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	for _, g := range s.Groups {
		rows, _, err := st.ListDeliveries(ctx, store.DeliveryQuery{GroupID: g.ID, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(rows, func(i, j int) bool { return rows[i].Number < rows[j].Number })
		s.Deliveries[g.ID] = rows
		if err := st.Load(ctx, g.ID, 0, func(e actor.Event) error {
			s.Journal[g.ID] = append(s.Journal[g.ID], fmt.Sprintf("%d %s", e.Seq, e.Type))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Replies, _, err = st.ListReplies(ctx, store.ReplyQuery{Limit: 1000}); err != nil {
		t.Fatal(err)
	}
	if s.Suppressions, _, err = st.ListSuppressions(ctx, "", 1000); err != nil {
		t.Fatal(err)
	}
	if s.Keys, err = st.ListKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Load(ctx, unmatchedKey, 0, func(e actor.Event) error {
		s.Unmatched = append(s.Unmatched, fmt.Sprintf("%d %s", e.Seq, e.Type))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	pending, err := st.PendingInbox(ctx, store.InboxRef{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pending {
		s.PendingInbox = append(s.PendingInbox, e.Provider+"/"+e.EventID)
	}
	return s
}

// writeFixtureScenario drives today's tracker through a small history on
// st: sends, receipts, a retry, replies with an acknowledgement and a
// STOP, uncertain sends resolved by an operator, an unmatched reply, a
// parked webhook, a manual suppression, an API key and an idempotency key.
func writeFixtureScenario(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	clk := actor.NewManualClock(fixtureT0)
	prov := &fakeProvider{}
	uncertain := map[string]bool{"+15550100011": true, "+15550100012": true}
	prov.sendFn = func(req crewcast.SendRequest, _ string) (crewcast.SendResult, error) {
		if uncertain[req.To[0]] {
			return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", Class: crewcast.ClassUncertain, Err: errors.New("connection reset")}
		}
		return crewcast.SendResult{MessageID: "msg-" + strings.TrimPrefix(req.To[0], "+")}, nil
	}
	ids := []string{"g_fixture_a", "g_fixture_b"}
	e := &env{t: t, st: st, prov: prov, clk: clk}
	e.tr = e.start(func(c *Config) {
		c.NewID = func() string { id := ids[0]; ids = ids[1:]; return id }
		c.SendWorkers = 1
	})
	a, _, err := e.tr.Create(ctx, group.Request{From: from, Recipients: []group.RecipientInput{{Number: "+15550100001", Name: "Ana"},
		{Number: "+15550100002"}, {Number: "+15550100003"}, {Number: "+15550100004"}}, Text: "Crew call 7am"}, CreateOptions{IdempotencyKey: "fixture-idem-1", By: "key_fixture"})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(a, "group a sent", allStatus(crewcast.StatusSent))
	clk.Advance(time.Minute)
	byNum := map[string]store.DeliveryRow{}
	for _, r := range rows {
		byNum[r.Number] = r
	}
	ingest := func(ev crewcast.Event) {
		t.Helper()
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	ingest(statusEvent("st-1", byNum["+15550100001"], crewcast.StatusDelivered))
	failed := statusEvent("st-2", byNum["+15550100002"], crewcast.StatusFailed)
	failed.ErrorCode, failed.ErrorClass = "30007", crewcast.ClassCarrier
	ingest(failed)
	ingest(crewcast.Event{Provider: "fake", EventID: "in-1", Kind: crewcast.KindInbound, From: "+15550100003", To: from, Text: "YES"})
	ingest(crewcast.Event{Provider: "fake", EventID: "in-2", Kind: crewcast.KindInbound, From: "+15550100004", To: from, Text: "STOP"})
	e.waitGroup(a, "receipts and replies", func(g store.GroupRow, _ []store.DeliveryRow) bool {
		return g.Counts["delivered"] == 1 && g.Counts["failed"] == 1 && g.Counts["acknowledged"] == 1 && g.Counts["opted_out"] == 1
	})
	clk.Advance(time.Minute)
	if err := e.tr.Retry(ctx, a, "+15550100002", "key_fixture"); err != nil {
		t.Fatal(err)
	}
	e.waitGroup(a, "retried", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Number == "+15550100002" {
				return r.Status == crewcast.StatusSent && r.Attempts == 2
			}
		}
		return false
	})

	clk.Advance(time.Minute)
	b, _, err := e.tr.Create(ctx, group.Request{From: from, To: []string{"+15550100011", "+15550100012"}, Text: "Wrap at 6pm"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(b, "group b unconfirmed", allStatus(crewcast.StatusUnconfirmed))
	clk.Advance(time.Minute)
	if err := e.tr.Resolve(ctx, b, "+15550100011", group.ResolveDelivered, "key_fixture"); err != nil {
		t.Fatal(err)
	}
	e.waitGroup(b, "resolved", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Counts["delivered"] == 1 })

	ingest(crewcast.Event{Provider: "fake", EventID: "in-3", Kind: crewcast.KindInbound, From: "+15550109999", To: from, Text: "who is this?"})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rows, _, err := st.ListReplies(ctx, store.ReplyQuery{Unmatched: true, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unmatched reply not recorded")
		}
	}
	// A receipt for a message id crewcast never sent stays parked.
	ingest(crewcast.Event{Provider: "fake", EventID: "st-parked", Kind: crewcast.KindStatus, MessageID: "msg-never-sent",
		From: from, To: "+15550107777", Status: crewcast.StatusDelivered})
	if err := st.AddSuppression(ctx, store.Suppression{Number: "+15550108888", Reason: "manual", CreatedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(ctx, store.APIKey{ID: "key_fixture", Name: "fixture", Prefix: "cc_fix", Hash: bytes.Repeat([]byte{7}, 32),
		Scopes: []string{"groups:write", "groups:read"}, CreatedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
}

func fixturePostgresURL(t *testing.T) string {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("the PostgreSQL fixture needs CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	return url
}

// regenerateFixtures writes the fixtures from today's code: the scenario
// on a new SQLite file, and the same scenario on a fresh PostgreSQL schema
// dumped with pg_dump (schema name replaced by fixtureSchema).
func regenerateFixtures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "fixture.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Now: func() time.Time { return fixtureT0 }})
	if err != nil {
		t.Fatal(err)
	}
	writeFixtureScenario(t, st)
	state := readFixtureState(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// One self-contained file: checkpoint the WAL into it.
	if out, err := exec.Command("sqlite3", path, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE; VACUUM;").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	copyFile(t, path, filepath.FromSlash(fixtureSQLite))
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.FromSlash(fixtureExpected), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}

	url := fixturePostgresURL(t)
	schema := itSchema(t, url)
	pst, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema, Now: func() time.Time { return fixtureT0 }})
	if err != nil {
		t.Fatal(err)
	}
	writeFixtureScenario(t, pst)
	pstate := readFixtureState(t, pst)
	_ = pst.Close()
	compareFixtureState(t, "postgres scenario", state, pstate)
	out, err := exec.Command("pg_dump", "--dbname", url, "--schema", schema, "--no-owner", "--no-privileges", "--column-inserts").Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	// Drop psql meta-commands (\restrict and its random token): the dump
	// is run as plain SQL.
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, "\\") {
			lines = append(lines, l)
		}
	}
	dump := strings.ReplaceAll(strings.Join(lines, "\n"), schema, fixtureSchema)
	if err := os.WriteFile(filepath.FromSlash(fixturePGDump), []byte(dump), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// compareFixtureState fails unless every field recorded in want is in got
// with the same value. Fields a later version added are allowed; a field
// renamed, dropped or changed is not.
func compareFixtureState(t *testing.T, what string, want, got fixtureState) {
	t.Helper()
	w, g := toAny(t, want), toAny(t, got)
	for _, d := range subsetDiff("", w, g) {
		t.Errorf("%s: %s", what, d)
	}
}

func toAny(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %v, want an object", path, got)}
		}
		var out []string
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			out = append(out, subsetDiff(path+"."+k, wv, gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
		var out []string
		for i := range w {
			out = append(out, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
		return nil
	}
}

func loadExpected(t *testing.T) fixtureState {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(fixtureExpected))
	if err != nil {
		t.Fatal(err)
	}
	var s fixtureState
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkUpgradedFixture holds an upgraded fixture store to what it held
// when it was written, then runs today's tracker on it.
func checkUpgradedFixture(t *testing.T, st store.Store) {
	ctx := context.Background()
	v, err := st.MigrationVersion(ctx)
	if err != nil || v < 1 {
		t.Fatalf("migration version %d, %v", v, err)
	}
	want := loadExpected(t)
	got := readFixtureState(t, st)
	compareFixtureState(t, "projections after the upgrade", want, got)
	if len(got.Groups) != 2 {
		t.Fatalf("fixture has %d groups, want 2", len(got.Groups))
	}

	// Replay: from the journal alone, and from the stored snapshot plus
	// the journal after it, both must match the projections.
	for _, row := range got.Groups {
		g := &group.Group{}
		if err := st.Load(ctx, row.ID, 0, func(e actor.Event) error { return applyEvent(g, e) }); err != nil {
			t.Fatalf("replay %s: %v", row.ID, err)
		}
		res, err := actor.Recover(ctx, st, st, row.ID, decodeSnapshot, applyEvent)
		if err != nil || res.SnapshotErr != nil {
			t.Fatalf("recover %s: %v, snapshot: %v", row.ID, err, res.SnapshotErr)
		}
		for name, state := range map[string]group.Group{"journal": *g, "snapshot+journal": res.State} {
			// Every count the v1 projection has must replay to the same
			// value; counts added since (ack_yes, no_reply, …) are new keys.
			replayed := state.Counts()
			if !countsCover(replayed, row.Counts) {
				t.Errorf("%s: counts replayed from the %s %v, projection %v", row.ID, name, replayed, row.Counts)
			}
			if state.Status != row.Status {
				t.Errorf("%s: status replayed from the %s %s, projection %s", row.ID, name, state.Status, row.Status)
			}
			for _, d := range got.Deliveries[row.ID] {
				r := state.Recipient(d.Number)
				if r == nil || r.Status != d.Status || r.Attempts != d.Attempts {
					t.Errorf("%s %s: replayed from the %s %+v, projection %s/%d", row.ID, d.Number, name, r, d.Status, d.Attempts)
				}
			}
		}
	}

	// Today's tracker works on the old data: a new reply reaches group a
	// and an unmatched one extends the old unmatched journal.
	clk := actor.NewManualClock(fixtureT0.Add(time.Hour))
	e := &env{t: t, st: st, prov: &fakeProvider{}, clk: clk}
	e.tr = e.start(nil)
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "in-after-upgrade", Kind: crewcast.KindInbound,
		From: "+15550100001", To: from, Text: "thanks"}}); err != nil {
		t.Fatal(err)
	}
	e.waitGroup("g_fixture_a", "reply after the upgrade", func(g store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Number == "+15550100001" {
				return r.LastReply == "thanks"
			}
		}
		return false
	})
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "in-unmatched-after-upgrade", Kind: crewcast.KindInbound,
		From: "+15550106666", To: from, Text: "hello"}}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		rows, _, err := st.ListReplies(ctx, store.ReplyQuery{Unmatched: true, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unmatched reply after the upgrade not recorded: %+v", rows)
		}
	}
}

func TestUpgradeFromV1FixtureSQLite(t *testing.T) {
	if *updateFixtures {
		regenerateFixtures(t)
	}
	path := filepath.Join(t.TempDir(), "crewcast.db")
	copyFile(t, filepath.FromSlash(fixtureSQLite), path)
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Now: func() time.Time { return fixtureT0.Add(time.Hour) }})
	if err != nil {
		t.Fatalf("open the v1 fixture: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	checkUpgradedFixture(t, st)
}

func TestUpgradeFromV1FixturePostgres(t *testing.T) {
	url := fixturePostgresURL(t)
	dump, err := os.ReadFile(filepath.FromSlash(fixturePGDump))
	if err != nil {
		t.Fatal(err)
	}
	schema := itSchema(t, url)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, strings.ReplaceAll(string(dump), fixtureSchema, schema))
	_ = conn.Close(ctx)
	if err != nil {
		t.Fatalf("restore the v1 dump: %v", err)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema, Now: func() time.Time { return fixtureT0.Add(time.Hour) }})
	if err != nil {
		t.Fatalf("open the v1 fixture: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	checkUpgradedFixture(t, st)
}

// countsCover reports whether got has every key of want with its value.
func countsCover(got, want map[string]int) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
