package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/httpapi"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
	"github.com/crewcast/crewcast/tracker"
)

// fakeTracker is a hand-written httpapi.Service: groups are planned and
// applied by the real domain package and committed to the real store with
// their projections, then published on the hub, as the tracker does.
type fakeTracker struct {
	st  store.Store
	hub *tracker.Hub

	mu     sync.Mutex
	n      int
	groups map[string]*group.Group
	seq    map[string]uint64
	idem   map[string]string
	// actions records the Resolve and Retry calls.
	actions []string
	// lastReq is the last create request.
	lastReq group.Request
	// afterCreate, when set, runs (in its own goroutine) after each create.
	afterCreate func(id string)
	wg          sync.WaitGroup
}

var _ httpapi.Service = (*fakeTracker)(nil)

func (f *fakeTracker) Create(ctx context.Context, req group.Request, opts tracker.CreateOptions) (string, bool, error) {
	f.mu.Lock()
	f.lastReq = req
	if id, ok := f.idem[opts.IdempotencyKey]; ok && opts.IdempotencyKey != "" {
		f.mu.Unlock()
		return id, false, nil
	}
	f.n++
	id := fmt.Sprintf("grp%d", f.n)
	created, errs := group.Plan(id, req, group.DefaultSettings(), nil, time.Now())
	if len(errs) > 0 {
		f.mu.Unlock()
		return "", false, &tracker.ValidationError{Fields: errs}
	}
	g := &group.Group{}
	err := f.applyLocked(ctx, g, created)
	if err == nil {
		f.groups[id] = g
		if opts.IdempotencyKey != "" {
			f.idem[opts.IdempotencyKey] = id
		}
	}
	f.mu.Unlock()
	if err != nil {
		return "", false, err
	}
	if f.afterCreate != nil {
		f.wg.Go(func() { f.afterCreate(id) })
	}
	return id, true, nil
}

func (f *fakeTracker) apply(id string, evs ...group.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applyLocked(context.Background(), f.groups[id], evs...)
}

func (f *fakeTracker) applyLocked(ctx context.Context, g *group.Group, evs ...group.Event) error {
	unit := actor.Unit{ExpectSeq: f.seq[g.ID]}
	var views []tracker.EventView
	for _, ev := range evs {
		if err := g.Apply(ev); err != nil {
			return err
		}
		typ, data, err := group.Encode(ev)
		if err != nil {
			return err
		}
		seq := unit.ExpectSeq + uint64(len(unit.Events)) + 1
		unit.Events = append(unit.Events, actor.Event{Seq: seq, Type: typ, Data: data, Time: time.Now()})
		views = append(views, tracker.EventView{Seq: seq, Type: typ, Data: data, Time: time.Now()})
	}
	unit.Key = g.ID
	last := unit.ExpectSeq + uint64(len(evs))
	row := store.GroupRow{ID: g.ID, Status: g.Status, From: g.From, Mode: g.Mode, Text: g.Text,
		CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt, Counts: g.Counts(), Seq: last, Answers: g.AnswersJSON()}
	eff := store.Effects{Group: &row}
	for _, i := range g.TakeDirty() {
		r := g.Recipients[i]
		eff.Deliveries = append(eff.Deliveries, store.DeliveryRow{GroupID: g.ID, Number: r.Number, Name: r.Name,
			Status: r.Status, Attempts: r.Attempts, ProviderMessageID: r.MessageID, ErrorCode: r.ErrorCode,
			ErrorClass: r.ErrorClass, SentAt: r.SentAt, DeliveredAt: r.DeliveredAt, FailedAt: r.FailedAt,
			UpdatedAt: g.UpdatedAt, Response: r.Response, LastReply: r.LastReply, RepliedAt: r.RepliedAt, Ack: r.Ack})
	}
	unit.Effects = []any{eff}
	res, err := f.st.Commit(ctx, []actor.Unit{unit})
	if err != nil {
		return err
	}
	if res[0] != nil {
		return res[0]
	}
	f.seq[g.ID] = last
	f.hub.Publish(tracker.Change{GroupID: g.ID, Seq: last, Events: views})
	return nil
}

func (f *fakeTracker) Cancel(ctx context.Context, id, by string) error {
	return f.apply(id, group.Canceled{At: time.Now(), By: by})
}
func (f *fakeTracker) Resolve(_ context.Context, id, number, outcome, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "resolve "+id+" "+number+" "+outcome)
	return nil
}

func (f *fakeTracker) Retry(_ context.Context, id, number, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, "retry "+id+" "+number)
	return nil
}

func (f *fakeTracker) Resume(context.Context, string, string) error           { return nil }
func (f *fakeTracker) Ingest(context.Context, []crewcast.Event) (bool, error) { return true, nil }
func (f *fakeTracker) Hub() *tracker.Hub                                      { return f.hub }

// deliver takes recipient i through claim, acceptance and delivery (or a
// definite failure), one commit each.
func (f *fakeTracker) deliver(id string, i int, ok bool) error {
	now := time.Now()
	sid := fmt.Sprintf("s%d", i)
	if err := f.apply(id, group.Claimed{At: now, Sends: []group.Send{{ID: sid, Indices: []int{i}}}}); err != nil {
		return err
	}
	if err := f.apply(id, group.Outcomes{At: now, Outcomes: []group.Outcome{{SendID: sid, Indices: []int{i},
		Result: group.ResultAccepted, MessageID: "m-" + id + sid}}}); err != nil {
		return err
	}
	st, code, class := crewcast.StatusDelivered, "", crewcast.ClassNone
	if !ok {
		st, code, class = crewcast.StatusFailed, "30007", crewcast.ClassCarrier
	}
	return f.apply(id, group.Observed{At: now.Add(time.Second), EventID: "e-" + id + sid, Source: group.SourceWebhook,
		Index: i, MessageID: "m-" + id + sid, Status: st, Code: code, Class: class})
}

// cliEnv is an API server on a real SQLite store with a fakeTracker.
type cliEnv struct {
	t    *testing.T
	db   string
	st   *sqlite.Store
	fake *fakeTracker
	url  string
	keys map[string]string
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	ctx := context.Background()
	db := t.TempDir() + "/crewcast.db"
	st, err := sqlite.Open(ctx, sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeTracker{st: st, hub: tracker.NewHub(), groups: map[string]*group.Group{}, seq: map[string]uint64{},
		idem: map[string]string{}}
	done := make(chan struct{})
	h, err := httpapi.New(httpapi.Config{Store: st, Service: fake, Done: done})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		close(done)
		srv.Close()
		fake.wg.Wait()
		_ = st.Close()
	})
	e := &cliEnv{t: t, db: db, st: st, fake: fake, url: srv.URL, keys: map[string]string{}}
	for _, s := range apikey.AllScopes {
		k, _, err := apikey.Create(ctx, st, string(s), []apikey.Scope{s}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		e.keys[string(s)] = k
	}
	return e
}

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// client runs a client command against the env's server with a key.
func (e *cliEnv) client(key string, args ...string) (int, string, string) {
	return runCLI(context.Background(), append(args, "--url", e.url, "--key", e.keys[key])...)
}

func TestKeysCommands(t *testing.T) {
	db := t.TempDir() + "/keys.db"
	ctx := context.Background()
	code, key, stderr := runCLI(ctx, "keys", "create", "--scope", "send", "--name", "ci bot", "--db", db)
	key = strings.TrimSpace(key)
	if code != 0 || !strings.HasPrefix(key, "cc_") || !strings.Contains(stderr, "shown only now") ||
		!strings.Contains(stderr, "in a new database "+db) {
		t.Fatalf("create (must say which database it wrote): %d %q %q", code, key, stderr)
	}
	if code, _, stderr := runCLI(ctx, "keys", "create", "--scope", "admin", "--db", db); code != 0 || !strings.Contains(stderr, "in database "+db) {
		t.Fatalf("second create: %d %q", code, stderr)
	}
	code, list, _ := runCLI(ctx, "keys", "list", "--db", db)
	if code != 0 || !strings.Contains(list, "ci bot") || !strings.Contains(list, "send") || strings.Contains(list, key[12:]) {
		t.Fatalf("list (must not show the secret): %d\n%s", code, list)
	}
	// The key works against the API on that database.
	st, err := sqlite.Open(ctx, sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := apikey.NewAuthenticator(st, nil, 0).Authenticate(ctx, key)
	if err != nil || !p.Has(apikey.ScopeSend) || p.Has(apikey.ScopeAdmin) {
		t.Fatalf("created key: %+v %v", p, err)
	}
	_ = st.Close()
	id := p.KeyID
	// Flags may follow the positional argument.
	if code, out, errs := runCLI(ctx, "keys", "revoke", id, "--db", db); code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke: %d %q %q", code, out, errs)
	}
	// Keys made and revoked on the database directly are audited too
	// (docs/design.md §14), by the system actor "cli", each with its change.
	st, err = sqlite.Open(ctx, sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := st.ListAudit(ctx, store.AuditQuery{})
	_ = st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if en.Actor.Type != store.ActorSystem || en.Actor.ID != "cli" {
			t.Errorf("entry %+v: actor is not the CLI", en)
		}
		got = append(got, en.Action)
	}
	if want := []string{"key.revoked", "key.created", "key.created"}; !slices.Equal(got, want) || !strings.HasPrefix(entries[0].Target, id) {
		t.Fatalf("audit after keys create/revoke --db = %q (%+v), want %q", got, entries, want)
	}
	_, list, _ = runCLI(ctx, "keys", "list", "--db", db)
	fields := strings.Fields(lines(list)[1])
	if fields[0] != id {
		fields = strings.Fields(lines(list)[2])
	}
	if fields[len(fields)-1] == "-" {
		t.Errorf("revoked key not shown as revoked:\n%s", list)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"keys", "revoke", "key_nope", "--db", db}, 1, "no key with ID"},
		{[]string{"keys", "revoke", "--db", db}, 2, "one key ID"},
		{[]string{"keys", "create", "--db", db}, 2, "unknown scope"},
		{[]string{"keys", "create", "--scope", "root", "--db", db}, 2, "unknown scope"},
		{[]string{"keys", "rotate"}, 2, "unknown subcommand"},
		{[]string{"keys"}, 2, "Usage:"},
	} {
		code, _, errs := runCLI(ctx, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}

// Without --db, keys go through the API with an admin key.
func TestKeysThroughAPI(t *testing.T) {
	e := newCLIEnv(t)
	code, key, stderr := e.client("admin", "keys", "create", "--scope", "send", "--name", "dispatch")
	key = strings.TrimSpace(key)
	if code != 0 || !strings.HasPrefix(key, "cc_") || !strings.Contains(stderr, "on "+e.url) {
		t.Fatalf("create: %d %q %q", code, key, stderr)
	}
	// The new key sends.
	code, out, errs := runCLI(context.Background(), "send", "--url", e.url, "--key", key, "--from", "+15550100000",
		"--to", "+15550100001", "--text", "x", "--no-follow")
	if code != 0 || strings.TrimSpace(out) != "grp1" {
		t.Fatalf("send with the new key: %d %q %q", code, out, errs)
	}
	code, list, _ := e.client("admin", "keys", "list")
	if code != 0 || !strings.Contains(list, "dispatch") || strings.Contains(list, key[12:]) {
		t.Fatalf("list: %d\n%s", code, list)
	}
	var id string
	for _, l := range lines(list) {
		if strings.Contains(l, "dispatch") {
			id = strings.Fields(l)[0]
		}
	}
	if code, out, errs := e.client("admin", "keys", "revoke", id); code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("revoke %q: %d %q %q", id, code, out, errs)
	}
	code, _, errs = runCLI(context.Background(), "status", "grp1", "--url", e.url, "--key", key)
	if code != 1 || !strings.Contains(errs, "401") {
		t.Errorf("revoked key still works: %d %q", code, errs)
	}
	for _, c := range []struct {
		key  string
		args []string
		code int
		msg  string
	}{
		{"send", []string{"keys", "create", "--scope", "read"}, 1, "403"},
		{"admin", []string{"keys", "revoke", "key_nope"}, 1, "no key with ID"},
		{"admin", []string{"keys", "create", "--scope", "read", "extra"}, 2, `unexpected argument "extra"`},
	} {
		code, _, errs := e.client(c.key, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}

// lines splits output into non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestSendFollowsToCompletion(t *testing.T) {
	e := newCLIEnv(t)
	e.fake.afterCreate = func(id string) {
		for i := range 3 {
			if err := e.fake.deliver(id, i, i != 1); err != nil {
				t.Error(err)
				return
			}
		}
	}
	code, out, errs := e.client("send", "send", "--from", "+15550100000", "--to", "+15550100001,+15550100002",
		"--to", "+15550100003", "--text", "Crew call 7am")
	// One recipient failed: exit 1, and the failure is listed with its code.
	if code != 1 || !strings.Contains(errs, "1 recipient needs attention") {
		t.Fatalf("send: %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "+15550100002  failed  30007 filtered") {
		t.Errorf("failed recipient not listed:\n%s", out)
	}
	if !strings.Contains(out, "crewcast retry grp1 NUMBER") || strings.Contains(out, "crewcast resolve") {
		t.Errorf("hint for the failed recipient only:\n%s", out)
	}
	out, _, _ = strings.Cut(out, "Needs attention:\n") // the progress lines
	ls := lines(out)
	if ls[0] != "grp1" {
		t.Fatalf("first line %q, want the group id", ls[0])
	}
	if !strings.HasPrefix(ls[1], "sending") || !strings.Contains(ls[1], "0/3 delivered") {
		t.Errorf("first progress line %q", ls[1])
	}
	last := ls[len(ls)-1]
	if !strings.HasPrefix(last, "complete") || !strings.Contains(last, "2/3 delivered") || !strings.Contains(last, "1 failed") {
		t.Errorf("last line %q", last)
	}
	for i := 2; i < len(ls); i++ {
		if ls[i] == ls[i-1] {
			t.Errorf("line %d repeats the previous one: %q", i, ls[i])
		}
	}
	if strings.Contains(out, "\r") {
		t.Error("progress redrawn with \\r on a non-terminal")
	}
}

func TestSendIdempotencyAndNoFollow(t *testing.T) {
	e := newCLIEnv(t)
	args := []string{"send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x", "--idempotency-key", "run-7", "--no-follow"}
	code, out1, _ := e.client("send", args...)
	code2, out2, errs := e.client("send", args...)
	if code != 0 || code2 != 0 || out1 != out2 || strings.TrimSpace(out1) != "grp1" {
		t.Fatalf("outputs %q %q", out1, out2)
	}
	if !strings.Contains(errs, "nothing was sent again") {
		t.Errorf("replay not explained: %q", errs)
	}
}

func TestSendRefusals(t *testing.T) {
	e := newCLIEnv(t)
	code, _, errs := e.client("send", "send", "--from", "+15550100000", "--to", "12,+15550100002", "--text", "x")
	if code != 1 || !strings.Contains(errs, "to[0]") {
		t.Errorf("validation: %d %q", code, errs)
	}
	code, _, errs = e.client("read", "send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x")
	if code != 1 || !strings.Contains(errs, "forbidden") {
		t.Errorf("read key: %d %q", code, errs)
	}
	code, _, errs = runCLI(context.Background(), "send", "--url", e.url, "--key", "", "--from", "+15550100000", "--to", "+15550100001", "--text", "x")
	if code != 2 || !strings.Contains(errs, "API key is required") {
		t.Errorf("no key: %d %q", code, errs)
	}
	code, _, errs = runCLI(context.Background(), "send", "--url", "ftp://x", "--key", "k", "--from", "+15550100000", "--to", "+15550100001", "--text", "x")
	if code != 2 || !strings.Contains(errs, "not an http(s) URL") {
		t.Errorf("bad server: %d %q", code, errs)
	}
}

// syncBuffer is a goroutine-safe buffer that reports when a line arrives.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	line chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if bytes.Contains(p, []byte("\n")) {
		select {
		case s.line <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Ctrl-C while following stops following (exit 3); the group is left alone.
func TestSendInterrupted(t *testing.T) {
	e := newCLIEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{line: make(chan struct{}, 1)}
	var errb bytes.Buffer
	codeC := make(chan int, 1)
	go func() {
		codeC <- run(ctx, []string{"send", "--url", e.url, "--key", e.keys["send"], "--from", "+15550100000",
			"--to", "+15550100001", "--text", "x"}, out, &errb)
	}()
	for !strings.Contains(out.String(), "0/1 delivered") {
		<-out.line
	}
	cancel()
	// Nothing is known of the outcomes yet: not a success.
	if code := <-codeC; code != exitIncomplete {
		t.Fatalf("exit %d, want %d: %s", code, exitIncomplete, errb.String())
	}
	if !strings.Contains(out.String(), "stopped following") {
		t.Errorf("output %q", out.String())
	}
}

// A canceled group ends the follow as well.
func TestSendStopsWhenCanceled(t *testing.T) {
	e := newCLIEnv(t)
	e.fake.afterCreate = func(id string) {
		if err := e.fake.Cancel(context.Background(), id, ""); err != nil {
			t.Error(err)
		}
	}
	code, out, errs := e.client("send", "send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x")
	if ls := lines(out); code != 0 || !strings.HasPrefix(ls[len(ls)-1], "canceled") {
		t.Errorf("%d %q %q", code, out, errs)
	}
}

func TestStatus(t *testing.T) {
	e := newCLIEnv(t)
	id, _, err := e.fake.Create(context.Background(), group.Request{From: "+15550100000", Text: "Crew call",
		Recipients: []group.RecipientInput{{Number: "+15550100001", Name: "Ana"}, {Number: "+15550100002"}}}, tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fake.deliver(id, 0, true); err != nil {
		t.Fatal(err)
	}
	// The id may come before or after the flags.
	for _, args := range [][]string{
		{"status", id, "--url", e.url, "--key", e.keys["read"]},
		{"status", "--url", e.url, "--key", e.keys["read"], id},
	} {
		code, out, errs := runCLI(context.Background(), args...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		for _, want := range []string{"group   " + id, "Crew call", "1/2 delivered", "NUMBER", "+15550100001  Ana", "delivered", "+15550100002"} {
			if !strings.Contains(out, want) {
				t.Errorf("status output lacks %q:\n%s", want, out)
			}
		}
	}
	if code, _, errs := e.client("read", "status", "nope"); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("unknown group: %d %q", code, errs)
	}
	if code, _, _ := e.client("read", "status"); code != 2 {
		t.Errorf("missing id: exit %d", code)
	}
}

// CREWCAST_URL and CREWCAST_KEY stand in for the flags.
func TestClientEnvironment(t *testing.T) {
	e := newCLIEnv(t)
	t.Setenv("CREWCAST_URL", e.url)
	t.Setenv("CREWCAST_KEY", e.keys["send"])
	code, out, errs := runCLI(context.Background(), "send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x", "--no-follow")
	if code != 0 || strings.TrimSpace(out) != "grp1" {
		t.Errorf("%d %q %q", code, out, errs)
	}
}

func TestReportCommand(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	id, _, err := e.fake.Create(ctx, group.Request{From: "+15550100000", Text: "x", To: []string{"+15550100001", "+15550100002", "+15550100003"}},
		tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fake.deliver(id, 0, true); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.deliver(id, 1, false); err != nil {
		t.Fatal(err)
	}

	code, out, errs := e.client("read", "report", "deliveries")
	if code != 0 || len(lines(out)) != 4 || !strings.Contains(out, "30007 filtered") {
		t.Errorf("table: %d %s %s", code, out, errs)
	}
	code, out, _ = e.client("read", "report", "deliveries", "--status", "delivered", "--format", "csv")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(rows) != 2 || rows[0][0] != "group_id" || rows[1][1] != "+15550100001" {
		t.Errorf("csv: %d %v %q", code, err, out)
	}
	code, out, _ = e.client("read", "report", "deliveries", "--format", "json", "--since", "1h")
	var page struct {
		Deliveries []json.RawMessage `json:"deliveries"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 3 {
		t.Errorf("json since 1h: %d %q", code, out)
	}
	code, out, _ = e.client("read", "report", "deliveries", "--format", "json", "--until", "1h")
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Deliveries) != 0 {
		t.Errorf("json until 1h ago: %d %q", code, out)
	}
	code, out, _ = e.client("read", "report", "deliveries", "--limit", "2")
	if code != 0 || len(lines(out)) != 3 {
		t.Errorf("limit 2: %d\n%s", code, out)
	}
	code, out, errs = e.client("read", "report", "summary")
	for _, want := range []string{"recipients", "3", "delivered", "delivery rate", "33.3%", "error 30007"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("summary lacks %q: %d\n%s%s", want, code, out, errs)
		}
	}
	code, out, _ = e.client("read", "report", "summary", "--format", "csv")
	if code != 0 || !strings.HasPrefix(out, "metric,value\n") || !strings.Contains(out, "total,3") {
		t.Errorf("summary csv: %d %q", code, out)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"report", "deliveries", "--format", "xml"}, 2, "--format"},
		{[]string{"report", "deliveries", "--since", "last week"}, 2, "neither"},
		{[]string{"report", "weekly"}, 2, "unknown report"},
		{[]string{"report", "deliveries", "--status", "lost"}, 1, "status"},
	} {
		code, _, errs := e.client("read", c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: %d %q", c.args, code, errs)
		}
	}
}

// The ERROR cell joins what is known, without a leading space.
func TestErrorText(t *testing.T) {
	for _, c := range []struct{ code, class, want string }{
		{"", "", "-"}, {"30007", "carrier", "30007 carrier"}, {"", "timeout", "timeout"}, {"40008", "", "40008"},
	} {
		if got := errorText(apitype.Recipient{ErrorCode: c.code, ErrorClass: c.class}); got != c.want {
			t.Errorf("%q %q: %q, want %q", c.code, c.class, got, c.want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	g := apitype.Group{Status: "sending", Counts: map[string]int{"pending": 2, "sent": 1, "delivered": 3, "replied": 1}}
	if got, want := progressLine(g), "sending  3/6 delivered · 1 sent · 2 pending · 1 replied"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	g = apitype.Group{Status: "paused", PauseReason: "sender not registered", Counts: map[string]int{"pending": 1}}
	if got := progressLine(g); !strings.HasSuffix(got, "— paused: sender not registered") {
		t.Errorf("paused: %q", got)
	}
}

func TestParseArgs(t *testing.T) {
	fs := newFlagSet("x", &bytes.Buffer{})
	a := fs.String("a", "", "")
	b := fs.Bool("b", false, "")
	pos, err := parseArgs(fs, []string{"one", "-a", "v", "two", "-b", "--", "-three"})
	if err != nil || *a != "v" || !*b || strings.Join(pos, " ") != "one two -three" {
		t.Errorf("%v %q %v %v", err, *a, *b, pos)
	}
	if _, err := parseArgs(newFlagSet("y", &bytes.Buffer{}), []string{"-nope"}); err != errUsage {
		t.Errorf("unknown flag: %v", err)
	}
	if _, err := parseArgs(newFlagSet("z", &bytes.Buffer{}), []string{"-h"}); err != flag.ErrHelp {
		t.Errorf("-h: %v", err)
	}
}

func TestReportTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"":                          "",
		"2026-02-01T00:00:00Z":      "2026-02-01T00:00:00Z",
		"2026-02-01T01:00:00+01:00": "2026-02-01T01:00:00+01:00",
		"24h":                       "2026-02-28T12:00:00Z",
		"90m":                       "2026-03-01T10:30:00Z",
	} {
		if got, err := reportTime(in, now); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-5h", "2026-02-01"} {
		if _, err := reportTime(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// cancel, retry and resolve reach their API routes with the right body.
func TestActionCommands(t *testing.T) {
	e := newCLIEnv(t)
	id, _, err := e.fake.Create(context.Background(), group.Request{From: "+15550100000", Text: "x",
		To: []string{"+15550100001", "+15550100002"}}, tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.fake.deliver(id, 0, false); err != nil {
		t.Fatal(err)
	}
	code, out, errs := e.client("send", "retry", id, "+15550100001")
	if code != 0 || !strings.Contains(out, "+15550100001  failed") || !strings.Contains(out, "1 failed") {
		t.Errorf("retry: %d %q %q", code, out, errs)
	}
	code, out, errs = e.client("send", "resolve", id, "+15550100002", "--outcome", "not_delivered")
	if code != 0 || !strings.Contains(out, "+15550100002") {
		t.Errorf("resolve: %d %q %q", code, out, errs)
	}
	e.fake.mu.Lock()
	got := strings.Join(e.fake.actions, "; ")
	e.fake.mu.Unlock()
	if want := "retry " + id + " +15550100001; resolve " + id + " +15550100002 not_delivered"; got != want {
		t.Errorf("tracker saw %q, want %q", got, want)
	}
	code, out, errs = e.client("send", "cancel", id)
	if code != 0 || !strings.HasPrefix(out, "canceled") {
		t.Errorf("cancel: %d %q %q", code, out, errs)
	}
	for _, c := range []struct {
		key  string
		args []string
		code int
		msg  string
	}{
		{"send", []string{"resolve", id, "+15550100002"}, 2, "--outcome must be delivered or not_delivered"},
		{"send", []string{"resolve", id, "+15550100002", "--outcome", "maybe"}, 2, `got "maybe"`},
		{"send", []string{"retry", id}, 2, "missing argument: want a group ID and a recipient's number"},
		{"send", []string{"retry", id, "+15550100001", "foo"}, 2, `unexpected argument "foo"`},
		{"send", []string{"cancel"}, 2, "want one group ID"},
		{"read", []string{"cancel", id}, 1, "403"},
		{"send", []string{"retry", "grp_nope", "+15550100001"}, 1, "404"},
	} {
		code, _, errs := e.client(c.key, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}

func TestVersionLine(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/crewcast/crewcast", Version: "v1.2.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "48b9493c0ffee0123456789"}, {Key: "vcs.time", Value: "2026-12-01T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(info, "linux/amd64"), "crewcast v1.2.0 revision 48b9493c0ffe 2026-12-01T12:00:00Z (modified) go1.26.0 linux/amd64"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := versionLine(&debug.BuildInfo{GoVersion: "go1.26.0"}, "linux/amd64"); got != "crewcast (devel) go1.26.0 linux/amd64" {
		t.Errorf("no vcs: %q", got)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runCLI(context.Background(), args...)
		if code != 0 || !strings.HasPrefix(out, "crewcast ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: %d %q", args, code, out)
		}
	}
}

// error_detail, when the server gives it, is shown beside the code by send
// and under the table by status; recipients beyond the listing cap are
// counted.
func TestAttentionShowsErrorDetail(t *testing.T) {
	rec := func(number, status, code, class, detail string) map[string]any {
		return map[string]any{"number": number, "status": status, "error_code": code, "error_class": class, "error_detail": detail}
	}
	byStatus := map[string][]map[string]any{
		"failed":      {rec("+15550100003", "failed", "40008", "permanent", "The number cannot receive texts.")},
		"unconfirmed": {rec("+15550100004", "unconfirmed", "", "uncertain", "")},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/recipients") {
			_ = json.NewEncoder(w).Encode(map[string]any{"recipients": byStatus[r.URL.Query().Get("status")]})
			return
		}
		all := append(append([]map[string]any{}, byStatus["failed"]...), byStatus["unconfirmed"]...)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "grp9", "status": "complete",
			"counts": map[string]int{"failed": 1, "unconfirmed": 2, "delivered": 3}, "recipients": all})
	}))
	defer srv.Close()
	c := &apiClient{base: srv.URL, key: "k", http: srv.Client()}
	var out bytes.Buffer
	g := apitype.Group{ID: "grp9", Status: "complete", Counts: map[string]int{"failed": 1, "unconfirmed": 2, "delivered": 3}}
	err := attention(context.Background(), c, g, &out)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitFailed || ee.msg != "3 recipients need attention: 1 failed, 2 unconfirmed" {
		t.Errorf("attention: %v", err)
	}
	for _, want := range []string{"40008 permanent  The number cannot receive texts.", "+15550100004  unconfirmed  uncertain", "… and 1 more unconfirmed (crewcast status grp9 lists everyone)",
		"crewcast retry grp9 NUMBER", "crewcast resolve grp9 NUMBER --outcome delivered|not_delivered"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("attention output lacks %q:\n%s", want, out.String())
		}
	}
	code, status, errs := runCLI(context.Background(), "status", "grp9", "--url", srv.URL, "--key", "k")
	if code != 0 || !strings.Contains(status, "error 40008: The number cannot receive texts.") {
		t.Errorf("status: %d %q\n%s", code, errs, status)
	}
}

// RetryFailed retries each failed recipient, as the tracker does.
func (f *fakeTracker) RetryFailed(ctx context.Context, id, by string) (retried, skipped int, err error) {
	f.mu.Lock()
	g := f.groups[id]
	var failed []string
	if g != nil {
		for _, r := range g.Recipients {
			if r.Status == crewcast.StatusFailed {
				failed = append(failed, r.Number)
			}
		}
	}
	f.mu.Unlock()
	if g == nil {
		return 0, 0, tracker.ErrNotFound
	}
	for _, n := range failed {
		if err := f.Retry(ctx, id, n, by); err != nil {
			return retried, skipped, err
		}
		retried++
	}
	return retried, skipped, nil
}

// Nudge is the board's "send the follow-up now" (not used by the CLI).
func (f *fakeTracker) Nudge(context.Context, string, string) error { return nil }

// --pool sends the group body's pool instead of a from; both is a usage
// error.
func TestSendPool(t *testing.T) {
	e := newCLIEnv(t)
	_, _, _ = e.client("send", "send", "--pool", "dispatch", "--to", "+15550100001", "--text", "x", "--no-follow")
	e.fake.mu.Lock()
	got := e.fake.lastReq
	e.fake.mu.Unlock()
	if got.Pool != "dispatch" || got.From != "" {
		t.Fatalf("request pool %q from %q, want pool dispatch and no from", got.Pool, got.From)
	}
	code, _, errs := e.client("send", "send", "--pool", "dispatch", "--from", "+15550100000", "--to", "+15550100001", "--text", "x")
	if code != 2 || !strings.Contains(errs, "not both") {
		t.Fatalf("--from and --pool: %d %q", code, errs)
	}
}
