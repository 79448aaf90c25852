package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(printingM{m}) }

const from = "+15550100000"

func nums(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", 100001+i)
	}
	return out
}

// fakeProvider is a hand-written provider: by default it accepts every send
// with a fresh message id; tests replace sendFn and lookupFn.
type fakeProvider struct {
	mu       sync.Mutex
	sends    []crewcast.SendRequest
	n        int
	sendFn   func(req crewcast.SendRequest, id string) (crewcast.SendResult, error)
	lookupFn func(id string) (crewcast.MessageStatus, error)
}

func (p *fakeProvider) Name() string { return "fake" }

func (p *fakeProvider) Send(ctx context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	p.mu.Lock()
	p.sends = append(p.sends, req)
	p.n++
	id := fmt.Sprintf("msg-%d", p.n)
	fn := p.sendFn
	p.mu.Unlock()
	if fn != nil {
		return fn(req, id)
	}
	return crewcast.SendResult{MessageID: id}, nil
}

func (p *fakeProvider) SendGroupMMS(ctx context.Context, req crewcast.SendRequest) (crewcast.SendResult, error) {
	return p.Send(ctx, req)
}

func (p *fakeProvider) Lookup(ctx context.Context, id string) (crewcast.MessageStatus, error) {
	p.mu.Lock()
	fn := p.lookupFn
	p.mu.Unlock()
	if fn == nil {
		return crewcast.MessageStatus{}, errors.New("no lookup")
	}
	return fn(id)
}

func (p *fakeProvider) ParseWebhook(crewcast.WebhookRequest) ([]crewcast.Event, error) {
	return nil, nil
}

func (p *fakeProvider) sent() []crewcast.SendRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]crewcast.SendRequest(nil), p.sends...)
}

// sentTo counts sends per recipient number.
func (p *fakeProvider) sentTo() map[string]int {
	out := map[string]int{}
	for _, s := range p.sent() {
		for _, n := range s.To {
			out[n]++
		}
	}
	return out
}

type env struct {
	t    *testing.T
	st   store.Store
	path string
	prov *fakeProvider
	tr   *Tracker
	clk  *actor.ManualClock
}

func openStore(t *testing.T, path string, now func() time.Time) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	e, _ := newStoreEnv(t)
	e.tr = e.start(mod)
	return e
}

// newStoreEnv is an env on a fresh SQLite store (returned too, for tests
// that wrap it in e.st), with a manual clock; nothing is started.
func newStoreEnv(t *testing.T) (*env, store.Store) {
	t.Helper()
	e := &env{t: t, path: filepath.Join(t.TempDir(), "crewcast.db"), prov: &fakeProvider{}}
	e.clk = actor.NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	st := openStore(t, e.path, e.clk.Now)
	t.Cleanup(func() { _ = st.Close() })
	e.st = st
	return e, st
}

func (e *env) start(mod func(*Config)) *Tracker {
	cfg := Config{Store: e.st, Provider: e.prov, Clock: e.clk, SweepInterval: time.Hour}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Stop(ctx); err != nil {
			e.t.Errorf("stop: %v", err)
		}
	})
	return tr
}

func (e *env) create(n int, mode crewcast.Mode) string {
	e.t.Helper()
	id, created, err := e.tr.Create(context.Background(), group.Request{From: from, To: nums(n), Text: "Crew call 7am", Mode: mode}, CreateOptions{})
	if err != nil || !created {
		e.t.Fatalf("create: %v %v", created, err)
	}
	return id
}

// waitGroup waits, driven by the group's published changes, until cond
// holds for the group's projection.
func (e *env) waitGroup(id string, what string, cond func(store.GroupRow, []store.DeliveryRow) bool) (store.GroupRow, []store.DeliveryRow) {
	e.t.Helper()
	sub := e.tr.Hub().Subscribe(id)
	defer sub.Close()
	deadline := time.After(15 * time.Second)
	for {
		g, err := e.st.GetGroup(context.Background(), id)
		if err == nil {
			rows, _, err := e.st.ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Limit: 10000})
			if err != nil {
				e.t.Fatal(err)
			}
			if cond(g, rows) {
				return g, rows
			}
		}
		select {
		case <-sub.C:
		case <-deadline:
			g, _ := e.st.GetGroup(context.Background(), id)
			e.t.Fatalf("timed out waiting for %s; group %+v", what, g)
		}
	}
}

// errBarrier is the refusal of the command a barrier asks.
var errBarrier = errors.New("barrier")

// askBarrier returns once group id's actor on tr has handled every message
// enqueued for it before the call: those told by this goroutine, and those
// of any goroutine whose Tell returned before it (a mailbox is one FIFO
// queue, and a virtual actor's next activation gets what its last one
// left, first). It asks, through the mailbox, a command that refuses and
// so changes nothing, and returns the actor's answer: errBarrier,
// ErrNotFound (no such group) or ErrUnavailable (a broken instance, or one
// of a node without the group's shard). The actor's turns commit
// synchronously, so what they commit is committed when it returns.
func askBarrier(tr *Tracker, id string) (error, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return actor.Ask(ctx, tr.groups.Get(id), func(r actor.Reply[error]) groupMsg {
		return msgCommand{fn: func(*group.Group, time.Time) (group.Event, error) { return nil, errBarrier }, reply: r}
	})
}

// barrier is askBarrier on the env's tracker; it fails the test unless the
// actor answered.
func (e *env) barrier(id string) {
	e.t.Helper()
	res, err := askBarrier(e.tr, id)
	if err != nil {
		e.t.Fatalf("barrier of group %s: %v", id, err)
	}
	if !errors.Is(res, errBarrier) && !errors.Is(res, ErrNotFound) && !errors.Is(res, ErrUnavailable) {
		e.t.Fatalf("barrier of group %s answered %v", id, res)
	}
}

func allStatus(s crewcast.Status) func(store.GroupRow, []store.DeliveryRow) bool {
	return func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status != s {
				return false
			}
		}
		return len(rows) > 0
	}
}

func statusEvent(id string, d store.DeliveryRow, st crewcast.Status) crewcast.Event {
	return crewcast.Event{Provider: "fake", EventID: id, Kind: crewcast.KindStatus, MessageID: d.ProviderMessageID,
		From: from, To: d.Number, Status: st, Text: "Crew call 7am"}
}

func TestGroupSendsOnceAndCompletesFromWebhooks(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(5, crewcast.ModeIndividual)
	_, rows := e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	ctx := context.Background()
	for i, d := range rows {
		isNew, err := e.tr.Ingest(ctx, []crewcast.Event{statusEvent(fmt.Sprintf("ev-%d", i), d, crewcast.StatusDelivered)})
		if err != nil || !isNew {
			t.Fatalf("ingest: %v %v", isNew, err)
		}
	}
	// A replay of the first webhook is recognised and changes nothing.
	if isNew, err := e.tr.Ingest(ctx, []crewcast.Event{statusEvent("ev-0", rows[0], crewcast.StatusFailed)}); err != nil || isNew {
		t.Fatalf("replay: %v %v", isNew, err)
	}
	g, rows := e.waitGroup(id, "complete", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Status == crewcast.GroupComplete })
	if g.Counts["delivered"] != 5 {
		t.Fatalf("counts %v", g.Counts)
	}
	for n, c := range e.prov.sentTo() {
		if c != 1 {
			t.Fatalf("%s sent %d times", n, c)
		}
	}
	for _, d := range rows {
		if d.Attempts != 1 || d.DeliveredAt.IsZero() || d.SentAt.IsZero() {
			t.Fatalf("row %+v", d)
		}
	}
	if s := e.prov.sent()[0]; s.IdempotencyKey == "" || s.From != from || s.Text != "Crew call 7am" {
		t.Fatalf("send request %+v", s)
	}
	// The journal is the audit trail: created, claims, outcomes, observations.
	types := map[string]int{}
	if err := e.st.Load(ctx, id, 0, func(ev actor.Event) error { types[ev.Type]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if types[group.TypeCreated] != 1 || types[group.TypeClaimed] < 1 || types[group.TypeOutcomes] < 1 || types[group.TypeObserved] != 5 {
		t.Fatalf("journal types %v", types)
	}
	pending, err := e.st.PendingInbox(ctx, store.InboxRef{}, 100)
	if err != nil || len(pending) != 0 {
		t.Fatalf("inbox not acknowledged: %d %v", len(pending), err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	req := group.Request{From: from, To: nums(2), Text: "hi"}
	id1, c1, err := e.tr.Create(ctx, req, CreateOptions{IdempotencyKey: "k1", By: "key_ops"})
	if err != nil || !c1 {
		t.Fatal(err)
	}
	// Who created the group is in the audit trail.
	var created group.Created
	if err := e.st.Load(ctx, id1, 0, func(ev actor.Event) error {
		if ev.Type == group.TypeCreated {
			return json.Unmarshal(ev.Data, &created)
		}
		return nil
	}); err != nil || created.By != "key_ops" {
		t.Fatalf("group.created by %q (%v), want key_ops", created.By, err)
	}
	id2, c2, err := e.tr.Create(ctx, req, CreateOptions{IdempotencyKey: "k1", By: "key_ops"})
	if err != nil || c2 || id2 != id1 {
		t.Fatalf("repeat: %s %v %v", id2, c2, err)
	}
	req.Text = "other"
	if _, _, err := e.tr.Create(ctx, req, CreateOptions{IdempotencyKey: "k1", By: "key_ops"}); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatalf("different body: %v", err)
	}
	var ve *ValidationError
	if _, _, err := e.tr.Create(ctx, group.Request{From: from, To: []string{"nope"}, Text: "x"}, CreateOptions{}); !errors.As(err, &ve) || ve.Fields[0].Field != "to[0]" {
		t.Fatalf("validation: %v", err)
	}
}

func TestWebhookBeatsSendResultIsAdopted(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, nil)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		<-release
		return crewcast.SendResult{MessageID: "early-msg"}, nil
	}
	id := e.create(1, crewcast.ModeIndividual)
	e.waitGroup(id, "claimed", allStatus(crewcast.StatusSending))
	ctx := context.Background()
	ev := crewcast.Event{Provider: "fake", EventID: "early-1", Kind: crewcast.KindStatus, MessageID: "early-msg", From: from, To: nums(1)[0], Status: crewcast.StatusDelivered}
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
		t.Fatal(err)
	}
	// The webhook is durable and parked: not acknowledged, no route yet.
	waitPending := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			p, err := e.st.PendingInbox(ctx, store.InboxRef{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(p) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pending inbox %d, want %d", len(p), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitPending(1)
	close(release)
	e.waitGroup(id, "adopted delivery", allStatus(crewcast.StatusDelivered))
	waitPending(0)
}

func TestRateLimitRequeuesWithoutSpendingAttempts(t *testing.T) {
	var calls sync.Map
	e := newEnv(t, nil)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		v, _ := calls.LoadOrStore(req.To[0], new(int))
		p := v.(*int)
		*p++
		if *p <= 2 {
			return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", HTTPStatus: 429, Code: "10011", Class: crewcast.ClassNotSent, RetryAfter: time.Millisecond}
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	id := e.create(3, crewcast.ModeIndividual)
	// The manual clock does not move: retries after Retry-After need time.
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
				e.clk.Advance(10 * time.Millisecond)
			}
		}
	}()
	_, rows := e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	close(done)
	for _, d := range rows {
		if d.Attempts != 1 {
			t.Fatalf("attempts %d after two 429s: %+v", d.Attempts, d)
		}
	}
	for n, c := range e.prov.sentTo() {
		if c != 3 {
			t.Fatalf("%s: %d calls, want 3 (two 429s, one accept)", n, c)
		}
	}
}

func TestUncertainSendIsNeverResentUntilResolved(t *testing.T) {
	e := newEnv(t, nil)
	var fail sync.Once
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		var err error
		fail.Do(func() {
			err = &crewcast.SendError{Provider: "fake", Class: crewcast.ClassUncertain, Err: context.DeadlineExceeded}
		})
		if err != nil {
			return crewcast.SendResult{}, err
		}
		return crewcast.SendResult{MessageID: id}, nil
	}
	id := e.create(1, crewcast.ModeIndividual)
	e.waitGroup(id, "unconfirmed", allStatus(crewcast.StatusUnconfirmed))
	e.clk.Advance(48 * time.Hour)
	if err := e.tr.Retry(context.Background(), id, nums(1)[0], "op"); !errors.Is(err, group.ErrState) {
		t.Fatalf("retry of an unconfirmed recipient: %v", err)
	}
	if got := len(e.prov.sent()); got != 1 {
		t.Fatalf("%d sends before the operator decided", got)
	}
	if err := e.tr.Resolve(context.Background(), id, nums(1)[0], group.ResolveNotDelivered, "op"); err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(id, "resent", allStatus(crewcast.StatusSent))
	if rows[0].Attempts != 2 || len(e.prov.sent()) != 2 {
		t.Fatalf("after resolve: %+v, %d sends", rows[0], len(e.prov.sent()))
	}
	if err := e.tr.Resolve(context.Background(), "grp_missing", nums(1)[0], group.ResolveDelivered, "op"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing group: %v", err)
	}
}

func TestRecoveryMarksCrashedSendsUnconfirmed(t *testing.T) {
	block := make(chan struct{})
	e := newEnv(t, nil)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		<-block
		return crewcast.SendResult{}, errors.New("process gone")
	}
	id := e.create(3, crewcast.ModeIndividual)
	e.waitGroup(id, "claimed", allStatus(crewcast.StatusSending))
	// A second process on the same database: the first "crashed" mid-send
	// (its provider calls never return, its registry is not shared).
	st2 := openStore(t, e.path, e.clk.Now)
	defer st2.Close()
	prov2 := &fakeProvider{}
	tr2, err := New(Config{Store: st2, Provider: prov2, Clock: e.clk, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Nothing is sent to the group: the new process wakes every group still
	// sending at start, and recovery marks the crashed sends.
	sub := tr2.Hub().Subscribe(id)
	defer sub.Close()
	for deadline := time.After(10 * time.Second); ; {
		g, err := st2.GetGroup(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if g.Counts["unconfirmed"] == 3 {
			break
		}
		select {
		case <-sub.C:
		case <-deadline:
			t.Fatalf("after recovery: %+v", g)
		}
	}
	if len(prov2.sent()) != 0 {
		t.Fatal("the recovering process sent")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	close(block)
}

func TestRepliesAcksStopAndUnmatched(t *testing.T) {
	e := newEnv(t, nil)
	id := e.create(2, crewcast.ModeIndividual)
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	ctx := context.Background()
	in := func(evID, fromNum, text string) {
		t.Helper()
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: evID, Kind: crewcast.KindInbound, From: fromNum, To: from, Text: text}}); err != nil {
			t.Fatal(err)
		}
	}
	in("in-1", nums(2)[0], "yes")
	in("in-2", nums(2)[1], "STOP")
	in("in-3", "+15550109999", "who is this?")
	e.waitGroup(id, "replies", func(g store.GroupRow, _ []store.DeliveryRow) bool {
		return g.Counts["acknowledged"] == 1 && g.Counts["opted_out"] == 1
	})
	sup, err := e.st.Suppressed(ctx, []string{nums(2)[1]})
	if err != nil || len(sup) != 1 {
		t.Fatalf("suppression: %v %v", sup, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		rows, _, err := e.st.ListReplies(ctx, store.ReplyQuery{Unmatched: true, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 1 && rows[0].Text == "who is this?" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unmatched replies %+v", rows)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// A later group to the suppressed number records it as opted out.
	id2, _, err := e.tr.Create(ctx, group.Request{From: from, To: nums(2), Text: "again"}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(id2, "second group sent", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Status == crewcast.StatusPending || r.Status == crewcast.StatusSending {
				return false
			}
		}
		return true
	})
	for _, r := range rows {
		if r.Number == nums(2)[1] && r.Status != crewcast.StatusOptedOut {
			t.Fatalf("suppressed number: %+v", r)
		}
	}
	if e.prov.sentTo()[nums(2)[1]] != 1 {
		t.Fatal("sent to a suppressed number")
	}
}

func TestChecksLookUpThenExpireToUnknown(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Settings = group.Settings{CheckAfter: time.Minute, Deadline: 10 * time.Minute}
		c.ReminderPoll = 10 * time.Millisecond
	})
	e.prov.lookupFn = func(id string) (crewcast.MessageStatus, error) {
		return crewcast.MessageStatus{MessageID: id, Recipients: []crewcast.RecipientStatus{{Number: nums(1)[0], Status: crewcast.StatusSent, ProviderStatus: "sent"}}}, nil
	}
	id := e.create(1, crewcast.ModeIndividual)
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	ticker := make(chan struct{})
	go func() {
		for {
			select {
			case <-ticker:
				return
			case <-time.After(2 * time.Millisecond):
				e.clk.Advance(15 * time.Second)
			}
		}
	}()
	e.waitGroup(id, "unknown", allStatus(crewcast.StatusUnknown))
	close(ticker)
	types := map[string]int{}
	_ = e.st.Load(context.Background(), id, 0, func(ev actor.Event) error { types[ev.Type]++; return nil })
	if types[group.TypeChecked] < 1 || types[group.TypeExpired] != 1 {
		t.Fatalf("journal %v", types)
	}
}

func TestOrphanWebhookResolvesUnconfirmed(t *testing.T) {
	e := newEnv(t, nil)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		// Accepted as "orphan-1", but the answer is lost.
		return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", Class: crewcast.ClassUncertain, Err: errors.New("connection reset")}
	}
	id := e.create(1, crewcast.ModeIndividual)
	e.waitGroup(id, "unconfirmed", allStatus(crewcast.StatusUnconfirmed))
	// The provider's webhook for the lost message: no route for its id, but
	// the conversation (written with the claim) leads to the group.
	ev := crewcast.Event{Provider: "fake", EventID: "o-1", Kind: crewcast.KindStatus, MessageID: "orphan-1", From: from,
		To: nums(1)[0], Status: crewcast.StatusDelivered, Text: "Crew call 7am", OccurredAt: e.clk.Now()}
	if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{ev}); err != nil {
		t.Fatal(err)
	}
	_, rows := e.waitGroup(id, "reconciled", allStatus(crewcast.StatusDelivered))
	if rows[0].ProviderMessageID != "orphan-1" {
		t.Fatalf("row %+v", rows[0])
	}
}

// flakyStore fails Commit while failing is set, counting the attempts.
type flakyStore struct {
	store.Store
	failing  atomic.Bool
	attempts atomic.Int64
}

func (s *flakyStore) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	if s.failing.Load() {
		s.attempts.Add(1)
		return nil, errors.New("disk I/O error (injected)")
	}
	return s.Store.Commit(ctx, units)
}

func TestCommitFailureReloadsWithBackoffAndLosesNothing(t *testing.T) {
	e, base := newStoreEnv(t)
	fs := &flakyStore{Store: base}
	e.st = fs
	// The store fails from the moment the provider accepts: the outcomes
	// cannot be recorded.
	var once sync.Once
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		once.Do(func() { fs.failing.Store(true) })
		return crewcast.SendResult{MessageID: id}, nil
	}
	// Backoff timers run on the tracker's clock: a real one here.
	e.tr = e.start(func(c *Config) { c.Clock = actor.RealClock() })
	id := e.create(3, crewcast.ModeIndividual)
	// Let the failure persist for a while of real time: the actor must back
	// off (100 ms, 200 ms, 400 ms…), not spin.
	for deadline := time.Now().Add(10 * time.Second); fs.attempts.Load() < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d commit attempts while failing", fs.attempts.Load())
		}
		time.Sleep(5 * time.Millisecond) // waiting on the actor's backoff timers, which run on real time
	}
	start, n0 := time.Now(), fs.attempts.Load()
	time.Sleep(time.Second)
	if got := fs.attempts.Load() - n0; got > 6 {
		t.Fatalf("%d commit attempts in %s while the store fails: no backoff", got, time.Since(start))
	}
	if g, err := base.GetGroup(context.Background(), id); err != nil || g.Counts["sent"] != 0 {
		t.Fatalf("outcomes recorded while the store failed? %+v %v", g, err)
	}
	fs.failing.Store(false)
	_, rows := e.waitGroup(id, "recovered: all sent", allStatus(crewcast.StatusSent))
	for n, c := range e.prov.sentTo() {
		if c != 1 {
			t.Fatalf("%s sent %d times", n, c)
		}
	}
	for _, r := range rows {
		if r.Attempts != 1 {
			t.Fatalf("row %+v", r)
		}
	}
}

// TestCompletedGroupGetsItsFinalSnapshot: a group completes with a final
// snapshot; if that snapshot is lost (a crash right after the completing
// commit), the next activation takes it.
func TestCompletedGroupGetsItsFinalSnapshot(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	id := e.create(2, crewcast.ModeIndividual)
	_, rows := e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	for i, d := range rows {
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{statusEvent(fmt.Sprintf("fin-%d", i), d, crewcast.StatusDelivered)}); err != nil {
			t.Fatal(err)
		}
	}
	g, _ := e.waitGroup(id, "complete", func(g store.GroupRow, _ []store.DeliveryRow) bool { return g.Status == crewcast.GroupComplete })
	// A barrier: the refused command is handled after the completing turn,
	// snapshot included.
	if err := e.tr.Cancel(ctx, id, "op"); !errors.Is(err, group.ErrState) {
		t.Fatalf("cancel of a complete group: %v", err)
	}
	snap, err := e.st.LoadSnapshot(ctx, id)
	if err != nil || snap.Seq != g.Seq {
		t.Fatalf("final snapshot at seq %d (err %v), journal at %d", snap.Seq, err, g.Seq)
	}
	if err := e.st.DeleteSnapshot(ctx, id); err != nil {
		t.Fatal(err)
	}
	// A fresh process activates the group (a refused command will do).
	st2 := openStore(t, e.path, e.clk.Now)
	defer st2.Close()
	tr2, err := New(Config{Store: st2, Provider: &fakeProvider{}, Clock: e.clk, SweepInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := tr2.Stop(sctx); err != nil {
			t.Error(err)
		}
	}()
	if err := tr2.Cancel(ctx, id, "op"); !errors.Is(err, group.ErrState) {
		t.Fatalf("cancel of a complete group: %v", err)
	}
	snap, err = st2.LoadSnapshot(ctx, id)
	if err != nil || snap.Seq != g.Seq {
		t.Fatalf("after activation: snapshot at seq %d (err %v), want %d", snap.Seq, err, g.Seq)
	}
}

// ackFailStore fails AckInbox while failing is set, counting the calls.
type ackFailStore struct {
	store.Store
	failing atomic.Bool
	calls   atomic.Int64
}

func (s *ackFailStore) AckInbox(ctx context.Context, refs []store.InboxRef) error {
	s.calls.Add(1)
	if s.failing.Load() {
		return errors.New("disk I/O error (injected)")
	}
	return s.Store.AckInbox(ctx, refs)
}

// TestWebhookForMissingGroupIsAcknowledgedAfterAFailedAck: a webhook routed
// to a group that no longer exists is acknowledged by that group's empty
// actor; when that acknowledgement fails, the entry stays pending and the
// sweep must be able to route it again.
func TestWebhookForMissingGroupIsAcknowledgedAfterAFailedAck(t *testing.T) {
	e, base := newStoreEnv(t)
	fs := &ackFailStore{Store: base}
	e.st = fs
	e.tr = e.start(nil)
	ctx := context.Background()
	if err := base.PutRoute(ctx, store.Route{Key: msgKey("fake", "gone-msg"), Value: "grp_deleted"}); err != nil {
		t.Fatal(err)
	}
	fs.failing.Store(true)
	ev := crewcast.Event{Provider: "fake", EventID: "late-1", Kind: crewcast.KindStatus, MessageID: "gone-msg", From: from,
		To: nums(1)[0], Status: crewcast.StatusDelivered}
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); fs.calls.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the missing group's actor never tried to acknowledge the webhook")
		}
		time.Sleep(5 * time.Millisecond)
	}
	fs.failing.Store(false)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := e.tr.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := base.PendingInbox(ctx, store.InboxRef{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook for a missing group still pending after its failed acknowledgement: %+v", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countingStore counts Commit calls.
type countingStore struct {
	store.Store
	commits atomic.Int64
}

func (s *countingStore) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	s.commits.Add(1)
	return s.Store.Commit(ctx, units)
}

// A check reminder delivered after the commit that deleted it (the poller
// read it while the receipt was on its way) costs nothing: its row is gone
// already. A commit per such reminder would keep a large group behind on its
// receipts busy on them, with its send outcomes (and a hand-off) waiting
// behind in the mailbox.
func TestStaleCheckReminderCommitsNothing(t *testing.T) {
	e, base := newStoreEnv(t)
	cs := &countingStore{Store: base}
	e.st = cs
	e.tr = e.start(nil)
	const n = 3
	id := e.create(n, crewcast.ModeIndividual)
	_, rows := e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	checkDue := e.clk.Now()
	for i, r := range rows {
		if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{statusEvent(fmt.Sprintf("d-%d", i), r, crewcast.StatusDelivered)}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitGroup(id, "delivered", allStatus(crewcast.StatusDelivered))
	e.barrier(id) // the turns that applied the receipts are over
	before := cs.commits.Load()
	stale := func(i int) {
		e.tr.groups.Tell(id, msgReminder{r: actor.Reminder{Key: id, Name: reminderCheck + strconv.Itoa(i), Due: checkDue}})
	}
	for i := range n {
		stale(i)
	}
	e.barrier(id) // told after the reminders: they were handled, and committed what they would
	if got := cs.commits.Load() - before; got != 0 {
		t.Errorf("%d commits for %d check reminders whose rows a commit deleted", got, n)
	}
	// The same reminder delivered again (as the poller does RefireAfter
	// later when its row is really there) is rewritten.
	stale(0)
	e.barrier(id)
	if got := cs.commits.Load() - before; got != 1 {
		t.Errorf("%d commits after a stale reminder fired again, want 1 (its rows rewritten)", got)
	}
}

// secondProcess starts a second tracker on the env's database (the first
// one left as it is, stuck mid-call or not), as a restart after a crash
// does: cfg with its Store, Clock and SweepInterval set here. It is
// stopped, then its store closed, when the test ends.
func (e *env) secondProcess(cfg Config) (store.Store, *Tracker) {
	e.t.Helper()
	st := openStore(e.t, e.path, e.clk.Now)
	e.t.Cleanup(func() { _ = st.Close() })
	cfg.Store, cfg.Clock, cfg.SweepInterval = st, e.clk, time.Hour
	tr, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Stop(ctx); err != nil {
			e.t.Error(err)
		}
	})
	return st, tr
}
