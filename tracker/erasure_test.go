package tracker

// Erasure (issue 20): a person erased is gone from every byte crewcast
// keeps, stays blocked when they had opted out, and is never sent to after
// the erasure committed.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
)

// envOn starts a tracker with the fake provider on st.
func envOn(t *testing.T, st store.Store, mod func(*Config)) *env {
	t.Helper()
	e := &env{t: t, st: st, prov: &fakeProvider{}, clk: actor.NewManualClock(time.Now())}
	e.tr = e.start(mod)
	return e
}

const (
	erasedWho   = "+15559870001"
	erasedOther = "+15559870002"
)

// seedPerson puts the person into every place crewcast keeps data on this
// branch: a group sent only to them, a group shared with someone else
// with their reply, an unmatched inbound message, a parked status webhook,
// a suppression, conversation routes, deliveries and journal events. It
// returns the bodies that must not survive the erasure.
func seedPerson(t *testing.T, e *env) []string {
	t.Helper()
	ctx := context.Background()
	bodies := []string{"Solo secret briefing 4711", "Reply secret 4712", "Unmatched secret 4713", "Shared crew call 4714"}
	mk := func(to []string, text string) string {
		id, _, err := e.tr.Create(ctx, group.Request{From: from, To: to, Text: text, Mode: crewcast.ModeIndividual}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	solo := mk([]string{erasedWho}, bodies[0])
	// The reply must route to the shared group: its claim (which writes the
	// conversation route) must commit after the solo group's.
	e.waitGroup(solo, "sent", allStatus(crewcast.StatusSent))
	shared := mk([]string{erasedWho, erasedOther}, bodies[3])
	for i, id := range []string{solo, shared} {
		_, rows := e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
		for j, d := range rows {
			ev := statusEvent("st-"+string(rune('a'+i))+string(rune('a'+j)), d, crewcast.StatusDelivered)
			ev.Text = []string{bodies[0], bodies[3]}[i] // providers repeat the body
			if _, err := e.tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, ev := range []crewcast.Event{ // one webhook each
		{Provider: "fake", EventID: "in-reply", Kind: crewcast.KindInbound, From: erasedWho, To: from, Text: bodies[1]},
		{Provider: "fake", EventID: "in-unmatched", Kind: crewcast.KindInbound, From: erasedWho, To: "+15550100099", Text: bodies[2]},
		{Provider: "fake", EventID: "parked", Kind: crewcast.KindStatus, MessageID: "pm-unknown", From: from, To: erasedWho, Status: crewcast.StatusDelivered},
	} {
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitGroup(shared, "complete with the reply", func(g store.GroupRow, _ []store.DeliveryRow) bool {
		return g.Status == crewcast.GroupComplete && g.Counts["replied"] == 1
	})
	e.waitGroup(solo, "complete", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Status == crewcast.GroupComplete })
	for deadline := time.Now().Add(10 * time.Second); ; {
		rows, _, err := e.st.ListReplies(ctx, store.ReplyQuery{Number: erasedWho, Unmatched: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unmatched message was not recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A group with a follow-up policy whose follow-up to them is sent, and
	// a group where they are the escalation number (docs/design.md §12).
	followup, escalation := "Followup secret 4716", "Escalation secret 4717"
	mkPolicy := func(to []string, text string, in group.PolicyInput) string {
		id, _, err := e.tr.Create(ctx, group.Request{From: from, To: to, Text: text, Mode: crewcast.ModeIndividual, PolicyInput: in}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	fu := mkPolicy([]string{erasedWho}, "Followed secret 4718", group.PolicyInput{Followup: &group.FollowupInput{After: "1s", Max: 1, Text: followup}})
	e.waitGroup(fu, "sent", allStatus(crewcast.StatusSent))
	esc := mkPolicy([]string{erasedOther}, "Escalating call 4719", group.PolicyInput{Escalate: &group.EscalateInput{After: "1s", To: []string{erasedWho}, Text: escalation}})
	e.waitGroup(esc, "sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(2 * time.Second)
	e.waitSends("the follow-up and the escalation to the person", func(s []crewcast.SendRequest) bool {
		return slices.ContainsFunc(s, func(r crewcast.SendRequest) bool { return r.To[0] == erasedWho && r.Text == followup }) &&
			slices.ContainsFunc(s, func(r crewcast.SendRequest) bool { return r.To[0] == erasedWho && r.Text == escalation })
	})
	e.settle()
	for _, id := range []string{fu, esc} { // finished: their texts go with the person
		if err := e.tr.Cancel(ctx, id, "op"); err != nil && !errors.Is(err, group.ErrState) {
			t.Fatal(err)
		}
	}
	bodies = append(bodies, followup, escalation, "Followed secret 4718")
	if err := e.tr.AddSuppression(ctx, store.Suppression{Number: erasedWho, Reason: store.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	// Their contact, with a free field, in a crew (docs/design.md §11).
	site := "Depot secret 4715"
	c := store.Contact{ID: "ct_erased", Number: erasedWho, Name: "Erin Erased", Tags: []string{"night"},
		Fields: map[string]string{"site": site}, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := e.st.CreateContact(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := e.st.CreateCrew(ctx, store.Crew{ID: "cr_night", Name: "Night shift", Members: []string{c.ID},
		CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return append(bodies, site)
}

// withOutbox makes commits write outbound webhook rows (docs/design.md §13):
// their payloads name recipients and carry texts until delivered.
func withOutbox(c *Config) {
	hooks := &fakeOutbox{}
	hooks.enabled.Store(true)
	c.Webhooks = hooks
}

// eraseAndCheck erases the seeded person and checks the answers.
func eraseAndCheck(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	rep, err := e.tr.Erase(ctx, "+1 (555) 987-0001", "op")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Erased || rep.Groups != 4 || !rep.OptOutKept || rep.Replacement != "keyed_hash" ||
		rep.Subject != HashNumber(e.tr.cfg.HashKey, erasedWho) || rep.Changed["inbox"] == 0 || rep.Changed["replies"] != 2 {
		t.Fatalf("erasure report = %+v", rep)
	}
	again, err := e.tr.Erase(ctx, erasedWho, "op")
	if err != nil || again.Erased || again.Changed.Total() != 0 || !strings.Contains(again.Message, "nothing to erase") {
		t.Fatalf("second erasure = %+v, %v", again, err)
	}
	if _, err := e.tr.Erase(ctx, "not a number", "op"); !errors.Is(err, ErrInvalidNumber) {
		t.Fatalf("malformed number: %v", err)
	}
	// The other recipient is still there, in clear.
	if rows, _, err := e.st.ListDeliveries(ctx, store.DeliveryQuery{Number: erasedOther}); err != nil || len(rows) != 2 {
		t.Fatalf("other recipient: %+v, %v", rows, err)
	}
}

// needles are the strings searched for in the raw data, as stored text and
// as PostgreSQL's hex rendering of bytea.
func needles(bodies []string) [][]byte {
	var out [][]byte
	for _, s := range append([]string{erasedWho}, bodies...) {
		out = append(out, []byte(s), []byte(hex.EncodeToString([]byte(s))))
	}
	return out
}

func TestErasureLeavesNoTraceSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crewcast.db")
	st := openStore(t, path, time.Now)
	t.Cleanup(func() { _ = st.Close() })
	e := envOn(t, st, func(c *Config) { c.HashKey = []byte("erasure-test-key"); withOutbox(c) })
	bodies := seedPerson(t, e)
	// Before: the search finds the person (the test can fail).
	if hits := searchSQLiteFiles(t, path, bodies); len(hits) == 0 {
		t.Fatal("the search finds nothing before the erasure: it proves nothing")
	}
	eraseAndCheck(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if hits := searchSQLiteFiles(t, path, bodies); len(hits) > 0 {
		t.Fatalf("after erasure the database files still hold: %v", hits)
	}
}

// searchSQLiteFiles checkpoints the WAL into the database file and
// searches the raw bytes of the file and of what is left of the WAL.
func searchSQLiteFiles(t *testing.T, path string, bodies []string) []string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	var hits []string
	for _, f := range []string{path, path + "-wal", path + "-journal"} {
		raw, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles(bodies) {
			if bytes.Contains(raw, n) {
				hits = append(hits, filepath.Base(f)+": "+string(n))
			}
		}
	}
	return hits
}

func TestErasureLeavesNoTracePostgres(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		t.Skip("needs CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
	}
	schema := itSchema(t, url)
	st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	e := envOn(t, st, func(c *Config) { c.HashKey = []byte("erasure-test-key"); withOutbox(c) })
	bodies := seedPerson(t, e)
	if hits := searchPostgresTables(t, url, schema, bodies); len(hits) == 0 {
		t.Fatal("the search finds nothing before the erasure: it proves nothing")
	}
	eraseAndCheck(t, e)
	if hits := searchPostgresTables(t, url, schema, bodies); len(hits) > 0 {
		t.Fatalf("after erasure the tables still hold: %v", hits)
	}
}

// searchPostgresTables reads every row of every table of the schema as
// text and searches it.
func searchPostgresTables(t *testing.T, url, schema string, bodies []string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		t.Fatalf("tables of %s: %v, %v", schema, tables, err)
	}
	var hits []string
	for _, tb := range tables {
		q := `SELECT t::text FROM ` + pgx.Identifier{schema, tb}.Sanitize() + ` t`
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			for _, n := range needles(bodies) {
				if strings.Contains(s, string(n)) {
					hits = append(hits, tb+": "+string(n))
				}
			}
		}
	}
	return hits
}

// A person who sent STOP and was then erased is still never texted: the
// opt-out survives only as a keyed hash, and every send path matches it.
func TestErasedOptOutStillBlocksSends(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HashKey = []byte("k") })
	ctx := context.Background()
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "stop-1", Kind: crewcast.KindInbound,
		From: erasedWho, To: from, Text: "STOP"}}); err != nil {
		t.Fatal(err)
	}
	awaitSuppressed(t, e.st, erasedWho, 10*time.Second)
	rep, err := e.tr.Erase(ctx, erasedWho, "op")
	if err != nil || !rep.OptOutKept {
		t.Fatalf("erase: %+v, %v", rep, err)
	}
	if sup, err := e.st.Suppressed(ctx, []string{erasedWho}); err != nil || len(sup) != 0 {
		t.Fatalf("the number is still on the list in clear: %v, %v", sup, err)
	}
	// A new group to them: they start opted out, the other is sent to.
	id, _, err := e.tr.Create(ctx, group.Request{From: from, To: []string{erasedWho, erasedOther}, Text: "Crew call 7am",
		Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(id, "settled", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status != crewcast.StatusSent && r.Status != crewcast.StatusOptedOut {
				return false
			}
		}
		return len(rows) == 2
	})
	for _, r := range rows {
		if r.Number == erasedWho && r.Status != crewcast.StatusOptedOut {
			t.Fatalf("erased person who opted out: %+v", r)
		}
	}
	if got := e.prov.sentTo(); got[erasedWho] != 0 || got[erasedOther] != 1 {
		t.Fatalf("sends = %v", got)
	}
	// An operator's retry is refused too.
	if err := e.tr.Retry(ctx, id, erasedWho, "op"); !errors.Is(err, ErrSuppressed) {
		t.Fatalf("retry to the erased, opted-out person: %v", err)
	}
	// The claim check matches the hash as well: a claim of the number
	// itself is refused by the store, whatever the group thought.
	u := actor.Unit{Key: "claim-test", Effects: []any{store.Effects{Claim: []string{erasedWho, HashNumber([]byte("k"), erasedWho)}}}}
	res, err := e.st.Commit(ctx, []actor.Unit{u})
	if err != nil || !errors.Is(res[0], store.ErrSuppressed) {
		t.Fatalf("claim of the hashed opt-out: %v, %v", res, err)
	}
}

// An erasure while the person is being texted stops the remaining sends
// to them: nothing reaches the provider for them after it returned.
func TestErasureMidSendStopsTheirSends(t *testing.T) {
	others := []string{"+15559870011", "+15559870012", "+15559870013"}
	who := erasedWho
	for _, o := range others {
		if stripesOf([]string{o})[0] == stripesOf([]string{who})[0] {
			t.Fatalf("test numbers share a gate stripe: pick others")
		}
	}
	e := newEnv(t, func(c *Config) { c.HashKey = []byte("k"); c.SendWorkers = 1 })
	ctx := context.Background()
	release := make(chan struct{})
	var erasedAt atomic.Int64
	var late atomic.Int32
	e.prov.mu.Lock()
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if slices.Contains(req.To, who) && erasedAt.Load() != 0 {
			late.Add(1)
		}
		<-release
		return crewcast.SendResult{MessageID: id}, nil
	}
	e.prov.mu.Unlock()
	// The person is last in one group and in a second one: with one send
	// worker blocked, their sends are claimed or pending, not made.
	g1, _, err := e.tr.Create(ctx, group.Request{From: from, To: append(append([]string(nil), others...), who), Text: "Crew call 7am", Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g2, _, err := e.tr.Create(ctx, group.Request{From: from, To: []string{who}, Text: "Second call", Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(g1, "a send in flight", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status == crewcast.StatusSending {
				return true
			}
		}
		return false
	})
	rep, err := e.tr.Erase(ctx, who, "op")
	if err != nil || !rep.Erased || rep.Groups != 2 {
		t.Fatalf("erase mid-send: %+v, %v", rep, err)
	}
	erasedAt.Store(time.Now().UnixNano())
	close(release)
	for _, id := range []string{g1, g2} {
		e.waitGroup(id, "no more sending", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
			for _, r := range rows {
				if r.Status == crewcast.StatusSending || r.Status == crewcast.StatusPending {
					return false
				}
			}
			return true
		})
	}
	if n := late.Load(); n != 0 {
		t.Fatalf("%d send(s) to the erased person after the erasure returned", n)
	}
	got := e.prov.sentTo()
	if got[who] != 0 {
		t.Fatalf("sends to the erased person: %v", got)
	}
	for _, o := range others { // the group goes on for everyone else
		if got[o] != 1 {
			t.Fatalf("sends = %v: every other recipient once", got)
		}
	}
	rows, _, err := e.st.ListDeliveries(ctx, store.DeliveryQuery{Number: HashNumber([]byte("k"), who)})
	if err != nil || len(rows) != 2 {
		t.Fatalf("erased deliveries: %+v, %v", rows, err)
	}
	for _, r := range rows {
		if r.Status != crewcast.StatusOptedOut {
			t.Fatalf("erased person's delivery: %+v", r)
		}
	}
}

// Without CREWCAST_HASH_KEY an erasure still removes the number (a random
// token replaces it), says so, and says that an opt-out could not be kept;
// its audit record never names the number.
func TestErasureWithoutHashKey(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	e := newEnv(t, func(c *Config) { c.Logger = logger })
	ctx := context.Background()
	id, _, err := e.tr.Create(ctx, group.Request{From: from, To: []string{erasedWho, erasedOther}, Text: "Crew call 7am", Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	if err := e.tr.AddSuppression(ctx, store.Suppression{Number: erasedWho, Reason: store.ReasonManual}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.tr.Erase(ctx, erasedWho, "op")
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Erased || rep.Replacement != "random_token" || rep.Subject != "" || rep.OptOutKept || len(rep.Warnings) != 2 {
		t.Fatalf("erasure without a key = %+v", rep)
	}
	rows, _, err := e.st.ListDeliveries(ctx, store.DeliveryQuery{GroupID: id})
	if err != nil || len(rows) != 2 {
		t.Fatal(rows, err)
	}
	for _, r := range rows {
		if r.Number == erasedWho || (r.Number != erasedOther && !strings.HasPrefix(r.Number, "t:")) {
			t.Fatalf("delivery after erasure without a key: %+v", r)
		}
	}
	if sup, err := e.st.Suppressed(ctx, []string{erasedWho}); err != nil || len(sup) != 0 {
		t.Fatalf("suppressions: %v, %v", sup, err)
	}
	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "audit: erasure") || strings.Contains(out, erasedWho) || strings.Contains(out, strings.TrimPrefix(erasedWho, "+")) {
		t.Fatalf("audit log:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A group MMS member erased: their number leaves the thread's roster and
// the thread route, the other members stay, and the rewritten group still
// replays.
func TestErasureOfAGroupMMSMember(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HashKey = []byte("k") })
	ctx := context.Background()
	members := []string{erasedWho, erasedOther, "+15559870003"}
	id, _, err := e.tr.Create(ctx, group.Request{From: from, To: members, Text: "Crew call 7am", Mode: crewcast.ModeGroupMMS}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	thread := threadKey(from, members)
	if _, err := e.st.GetRoute(ctx, thread); err != nil {
		t.Fatalf("thread route before erasure: %v", err)
	}
	rep, err := e.tr.Erase(ctx, erasedWho, "op")
	if err != nil || !rep.Erased || rep.Groups != 1 || rep.Changed["routes"] == 0 {
		t.Fatalf("erase: %+v, %v", rep, err)
	}
	if _, err := e.st.GetRoute(ctx, thread); err == nil {
		t.Fatal("the thread route naming the person survived")
	}
	rows, _, err := e.st.ListDeliveries(ctx, store.DeliveryQuery{GroupID: id})
	if err != nil || len(rows) != 3 {
		t.Fatal(rows, err)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Number] = true
	}
	if seen[erasedWho] || !seen[erasedOther] || !seen["+15559870003"] || !seen[HashNumber([]byte("k"), erasedWho)] {
		t.Fatalf("deliveries after erasure: %+v", rows)
	}
	g, _, _ := itReplay(t, e.st, id)
	if g.Recipients[0].Number != HashNumber([]byte("k"), erasedWho) || g.Recipients[1].Number != erasedOther {
		t.Fatalf("replayed roster: %+v %+v", g.Recipients[0], g.Recipients[1])
	}
	// The group is still commanded through its actor.
	if err := e.tr.Cancel(ctx, id, "op"); err != nil && !errors.Is(err, group.ErrState) {
		t.Fatalf("cancel after erasure: %v", err)
	}
}

// EraseInGroup, one group's step run on its owner for an erasure asked on
// another node, keeps the owner's own guard: a send of the group claimed
// before it and still queued here is refused at its provider call, and a
// node that does not own the group refuses the step (the asking node asks
// again). The owner here is a single node, which owns every group.
func TestEraseInGroupOnTheOwnerStopsQueuedSends(t *testing.T) {
	others := []string{"+15559870011", "+15559870012", "+15559870013"}
	who := erasedWho
	e := newEnv(t, func(c *Config) { c.HashKey = []byte("k"); c.SendWorkers = 1 })
	ctx := context.Background()
	release := make(chan struct{})
	var erased atomic.Bool
	var late atomic.Int32
	e.prov.mu.Lock()
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		if slices.Contains(req.To, who) && erased.Load() {
			late.Add(1)
		}
		<-release
		return crewcast.SendResult{MessageID: id}, nil
	}
	e.prov.mu.Unlock()
	g1, _, err := e.tr.Create(ctx, group.Request{From: from, To: append(append([]string(nil), others...), who), Text: "Crew call 7am", Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(g1, "every send claimed", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status != crewcast.StatusSending {
				return false
			}
		}
		return true
	})
	counts, err := e.tr.EraseInGroup(ctx, g1, who, HashNumber([]byte("k"), who))
	if err != nil || counts["deliveries"] != 1 {
		t.Fatalf("EraseInGroup: %v, %v", counts, err)
	}
	erased.Store(true)
	close(release)
	e.waitGroup(g1, "no more sending", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status == crewcast.StatusSending || r.Status == crewcast.StatusPending {
				return false
			}
		}
		return true
	})
	if n := late.Load(); n != 0 || e.prov.sentTo()[who] != 0 {
		t.Fatalf("%d send(s) to the erased person after EraseInGroup returned; sends %v", n, e.prov.sentTo())
	}
	if _, err := e.tr.EraseInGroup(ctx, g1, "not a number", "x"); !errors.Is(err, ErrInvalidNumber) {
		t.Fatalf("malformed number: %v", err)
	}
}

// A configured hash key that differs from the one an opt-out was kept
// under (the key the server generated and stored, before an operator set
// CREWCAST_HASH_KEY) still blocks sends: every suppression check also
// matches the hashes under the past keys.
func TestErasedOptOutSurvivesAChangedHashKey(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HashKey = []byte("stored") })
	ctx := context.Background()
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "stop-1", Kind: crewcast.KindInbound,
		From: erasedWho, To: from, Text: "STOP"}}); err != nil {
		t.Fatal(err)
	}
	awaitSuppressed(t, e.st, erasedWho, 10*time.Second)
	if rep, err := e.tr.Erase(ctx, erasedWho, "op"); err != nil || !rep.OptOutKept {
		t.Fatalf("erase: %+v, %v", rep, err)
	}
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	tr := e.start(func(c *Config) { c.HashKey, c.PastHashKeys = []byte("configured"), [][]byte{[]byte("stored")} })
	e.tr = tr
	id, _, err := tr.Create(ctx, group.Request{From: from, To: []string{erasedWho, erasedOther}, Text: "Crew call 7am",
		Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(id, "settled", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status != crewcast.StatusSent && r.Status != crewcast.StatusOptedOut {
				return false
			}
		}
		return len(rows) == 2
	})
	for _, r := range rows {
		if r.Number == erasedWho && r.Status != crewcast.StatusOptedOut {
			t.Fatalf("erased person who opted out, after the hash key changed: %+v", r)
		}
	}
	if got := e.prov.sentTo(); got[erasedWho] != 0 {
		t.Fatalf("sends = %v", got)
	}
}
