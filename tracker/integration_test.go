package tracker

// Integration tests of the tracker against the real provider simulator
// (provider/sim) through the real Telnyx adapter (provider/telnyx), on
// SQLite and, when CREWCAST_TEST_POSTGRES is set, PostgreSQL. Webhooks come
// from the simulator, signed, to a small in-test endpoint that verifies and
// parses them with the adapter and hands them to Tracker.Ingest — the same
// path httpapi takes. Server-level tests (server/) cover the HTTP API.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
	"github.com/crewcast/crewcast/store/sqlite"
)

// itFrom is the sender number of the integration tests.
const itFrom = "+15550100000"

// itText is the message every integration group sends.
const itText = "Crew call: site B, 7:00"

// itNumbers returns n distinct fictional recipient numbers.
func itNumbers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", 200001+i)
	}
	return out
}

// itEngine opens stores on one database location; each call to open is a
// new connection to the same data, as a restarted process would make.
type itEngine struct {
	name string
	open func(t *testing.T) store.Store
}

// itEngines runs body once per store engine: SQLite always, PostgreSQL when
// CREWCAST_TEST_POSTGRES names a server (a fresh schema per test, dropped
// when it ends).
func itEngines(t *testing.T, body func(t *testing.T, eng itEngine)) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "crewcast.db")
		body(t, itEngine{name: "sqlite", open: func(t *testing.T) store.Store {
			t.Helper()
			st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
			if err != nil {
				t.Fatalf("open sqlite: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}})
	})
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv("CREWCAST_TEST_POSTGRES")
		if url == "" {
			t.Skip("PostgreSQL integration tests need CREWCAST_TEST_POSTGRES (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable); CI sets it")
		}
		schema := itSchema(t, url)
		body(t, itEngine{name: "postgres", open: func(t *testing.T) store.Store {
			t.Helper()
			st, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
			if err != nil {
				t.Fatalf("open postgres: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}})
	})
}

// itSchema names a fresh schema and drops it when the test ends (cleanups
// run last-in first-out, so after every store opened later is closed).
func itSchema(t *testing.T, url string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "crewcast_it_" + hex.EncodeToString(b[:])
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
	return schema
}

// itHarness is a running simulator, the Telnyx adapter pointed at it, and
// the webhook endpoint the simulator posts to.
type itHarness struct {
	sim      *sim.Sim
	simURL   string
	provider *telnyx.Client
	keys     sim.Keys
	// target receives ingested webhooks; nil answers 503 (the provider
	// retries), as a process that is down would.
	target atomic.Pointer[Tracker]
	// onIngest, when set, sees every webhook's events after Ingest made
	// them durable.
	onIngest atomic.Pointer[func([]crewcast.Event)]
	// transport makes the adapter's API calls; tests wrap it.
	transport *http.Transport
}

// newHarness starts a simulator with faults (seeded, so its draws repeat)
// and a webhook endpoint. wrap, if not nil, wraps the adapter's transport.
func newHarness(t *testing.T, faults sim.Faults, wrap func(http.RoundTripper) http.RoundTripper) *itHarness {
	t.Helper()
	return newHarnessWith(t, itOptions{faults: faults, wrap: wrap})
}

// itOptions configure a harness beyond newHarness's arguments.
type itOptions struct {
	faults sim.Faults
	wrap   func(http.RoundTripper) http.RoundTripper
	// acceptTimeoutHold is sim.Config.AcceptTimeoutHold: hold the
	// ambiguous send longer than the tracker's SendTimeout so the adapter
	// sees a timeout, not http.Transport's replay of an Idempotency-Key
	// request (which would get the recorded message back).
	acceptTimeoutHold time.Duration
}

// newHarnessWith is newHarness with every option.
func newHarnessWith(t *testing.T, o itOptions) *itHarness {
	t.Helper()
	faults, wrap := o.faults, o.wrap
	h := &itHarness{transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
	hook := httptest.NewServer(http.HandlerFunc(h.webhook))
	t.Cleanup(hook.Close)
	seed := int64(1)
	sm, err := sim.New(sim.Config{Faults: faults, Seed: &seed, TelnyxWebhookURL: hook.URL + "/webhooks/telnyx",
		RetryBackoff: 20 * time.Millisecond, AcceptTimeoutHold: o.acceptTimeoutHold})
	if err != nil {
		t.Fatal(err)
	}
	h.sim = sm
	h.simURL, err = sm.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Close the adapter's idle connections first: http.Server.Shutdown
		// counts a connection that never carried a request (one the
		// transport dialled but did not need) as busy for its first 5 s.
		h.transport.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sm.Stop(ctx); err != nil {
			t.Errorf("stop simulator: %v", err)
		}
	})
	h.keys = sm.Keys()
	var rt http.RoundTripper = h.transport
	if wrap != nil {
		rt = wrap(rt)
	}
	h.provider, err = telnyx.New(telnyx.Config{APIKey: h.keys.TelnyxAPIKey, PublicKey: h.keys.TelnyxPublicKey,
		APIBase: h.simURL, SendIdempotencyKey: true, HTTPClient: &http.Client{Transport: rt, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// webhook verifies and parses a simulator webhook with the adapter and
// ingests it: 2xx only once it is durable, as httpapi does.
func (h *itHarness) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	events, err := h.provider.ParseWebhook(crewcast.WebhookRequest{URL: "http://" + r.Host + r.URL.RequestURI(), Header: r.Header, Body: body})
	if err != nil {
		http.Error(w, "bad webhook", http.StatusBadRequest)
		return
	}
	tr := h.target.Load()
	if tr == nil {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	if len(events) > 0 {
		if _, err := tr.Ingest(r.Context(), events); err != nil {
			http.Error(w, "not stored", http.StatusServiceUnavailable)
			return
		}
		if f := h.onIngest.Load(); f != nil {
			(*f)(events)
		}
	}
	w.WriteHeader(http.StatusOK)
}

// startTracker starts a tracker on st that sends through the simulator and
// receives its webhooks. Its Stop runs at cleanup unless the test stops it.
func (h *itHarness) startTracker(t *testing.T, st store.Store, mod func(*Config)) *Tracker {
	t.Helper()
	cfg := Config{Store: st, Provider: h.provider, SweepInterval: time.Hour}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.target.Store(tr)
	t.Cleanup(func() { itStop(t, h, tr) })
	return tr
}

// itStop stops a tracker (a second Stop is a no-op) and detaches it from
// the webhook endpoint.
func itStop(t *testing.T, h *itHarness, tr *Tracker) {
	t.Helper()
	h.target.CompareAndSwap(tr, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tr.Stop(ctx); err != nil {
		t.Errorf("stop tracker: %v", err)
	}
}

// itCreate creates a group of the given numbers through the tracker.
func itCreate(t *testing.T, tr *Tracker, numbers []string) string {
	t.Helper()
	id, created, err := tr.Create(context.Background(), group.Request{From: itFrom, To: numbers, Text: itText, Mode: crewcast.ModeIndividual}, CreateOptions{})
	if err != nil || !created {
		t.Fatalf("create: created=%v err=%v", created, err)
	}
	return id
}

// awaitGroup waits, woken by the group's committed changes, until cond
// holds for its projection row, and returns the row.
func awaitGroup(t *testing.T, tr *Tracker, st store.Store, id string, timeout time.Duration, what string, cond func(store.GroupRow) bool) store.GroupRow {
	t.Helper()
	sub := tr.Hub().Subscribe(id)
	defer sub.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		g, err := st.GetGroup(context.Background(), id)
		if err != nil && !errors.Is(err, actor.ErrNotFound) {
			t.Fatalf("read group: %v", err)
		}
		if err == nil && cond(g) {
			return g
		}
		// Publish happens after commit, so any change received after the
		// read above means a newer state to look at.
		select {
		case <-sub.C:
		case <-deadline.C:
			t.Fatalf("%s: timed out after %s waiting for %s; group status %s, counts %v", tr.cfg.Store.Engine(), timeout, what, g.Status, g.Counts)
		}
	}
}

// itDeliveries returns every recipient row of a group, by number.
func itDeliveries(t *testing.T, st store.Store, id string) map[string]store.DeliveryRow {
	t.Helper()
	rows, _, err := st.ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]store.DeliveryRow, len(rows))
	for _, r := range rows {
		out[r.Number] = r
	}
	return out
}

// checkLedger asserts the simulator accepted no (from, to, text) twice and
// returns how many times it accepted each recipient number.
func checkLedger(t *testing.T, sm *sim.Sim) map[string]int {
	t.Helper()
	if d := sm.Duplicates(); len(d) != 0 {
		t.Errorf("the simulator accepted the same message more than once: %+v", d)
	}
	out := map[string]int{}
	for _, s := range sm.Ledger() {
		out[s.To]++
	}
	return out
}

// TestIntegrationRestartResumesGroup stops the tracker gracefully while a
// paced group is half sent and starts a new one on the same database: the
// new process must send the rest by itself, without waiting for a webhook,
// an API call or a status-check reminder (15 minutes away by default) to
// wake the group — and must not send anyone twice.
func TestIntegrationRestartResumesGroup(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		// No webhooks: nothing but the restart itself may wake the group.
		h := newHarness(t, sim.Faults{DropRate: 1}, nil)
		const n = 20
		numbers := itNumbers(n)
		st1 := eng.open(t)
		// Pacing lets one send through now and the next one in 1000 s: the
		// rest wait on an in-memory timer that a stop loses.
		tr1 := h.startTracker(t, st1, func(c *Config) { c.SendRate, c.SendBurst = 0.001, 1 })
		id := itCreate(t, tr1, numbers)
		awaitGroup(t, tr1, st1, id, 20*time.Second, "the first send", func(g store.GroupRow) bool { return g.Counts["sent"] == 1 })
		itStop(t, h, tr1)
		before, err := st1.GetGroup(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if before.Counts["sent"] != 1 || before.Counts["pending"] != n-1 {
			t.Fatalf("after a graceful stop: want 1 sent and the rest pending, counts %v", before.Counts)
		}
		_ = st1.Close()

		st2 := eng.open(t)
		tr2 := h.startTracker(t, st2, nil)
		awaitGroup(t, tr2, st2, id, 15*time.Second, "every recipient sent after the restart", func(g store.GroupRow) bool { return g.Counts["sent"] == n })
		sent := checkLedger(t, h.sim)
		for _, num := range numbers {
			if sent[num] != 1 {
				t.Errorf("%s accepted %d times by the simulator, want 1", num, sent[num])
			}
		}
		for num, d := range itDeliveries(t, st2, id) {
			if d.Attempts != 1 {
				t.Errorf("%s: attempts %d, want 1", num, d.Attempts)
			}
		}
	})
}

// TestIntegrationCrashedSendsBecomeUnconfirmedAfterRestart leaves claims in
// flight (their provider calls never answer) and starts a second tracker on
// the same database, as after kill -9: recovery must mark them unconfirmed
// on its own — not only when something happens to touch the group — and
// never resend them.
func TestIntegrationCrashedSendsBecomeUnconfirmedAfterRestart(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		release := make(chan struct{})
		var releaseOnce sync.Once
		free := func() { releaseOnce.Do(func() { close(release) }) }
		// The first process's sends hang: answers held forever stand for a
		// process that died mid-call.
		const n = 5
		var hang atomic.Bool
		hang.Store(true)
		var hung atomic.Int32
		allHung := make(chan struct{})
		h := newHarness(t, sim.Faults{DropRate: 1}, func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if hang.Load() && r.Method == http.MethodPost {
					if hung.Add(1) == n {
						close(allHung)
					}
					select {
					case <-release:
					case <-r.Context().Done():
					}
					return nil, errors.New("process gone")
				}
				return rt.RoundTrip(r)
			})
		})
		numbers := itNumbers(n)
		st1 := eng.open(t)
		tr1 := h.startTracker(t, st1, nil)
		t.Cleanup(free) // runs before tr1's Stop, which waits for its calls
		id := itCreate(t, tr1, numbers)
		select {
		case <-allHung:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d sends reached the provider", hung.Load(), n)
		}
		// The first process "dies": it stops receiving webhooks, and its
		// hung calls are never answered while the second one runs.
		h.target.Store(nil)
		hang.Store(false)

		st2 := eng.open(t)
		tr2, err := New(Config{Store: st2, Provider: h.provider, SweepInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr2.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() { itStop(t, h, tr2) }()
		awaitGroup(t, tr2, st2, id, 10*time.Second, "in-flight sends recovered as unconfirmed", func(g store.GroupRow) bool { return g.Counts["unconfirmed"] == n })
		if got := len(h.sim.Ledger()); got != 0 {
			t.Fatalf("the recovering process sent %d messages", got)
		}
		checkLedger(t, h.sim)
		free()
	})
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestIntegrationWebhookBeatsSendResultIsAdopted holds each send's answer
// until the simulator's webhooks for that message (posted with no delay)
// are durable in the inbox and parked for want of a route: the answer's
// commit must adopt them, so every recipient ends delivered, each webhook
// is observed exactly once, and the inbox is left empty.
func TestIntegrationWebhookBeatsSendResultIsAdopted(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		var trRef atomic.Pointer[Tracker]
		var mu sync.Mutex
		ingested := map[string]int{} // message id → webhooks made durable
		wake := make(chan struct{}, 1)
		parkedEarly := atomic.Int32{}
		hold := func(messageID string) error {
			deadline := time.NewTimer(10 * time.Second)
			defer deadline.Stop()
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				mu.Lock()
				n := ingested[messageID]
				mu.Unlock()
				tr := trRef.Load()
				parked := false
				if tr != nil {
					tr.mu.Lock()
					_, parked = tr.parked[msgKey(telnyx.ProviderName, messageID)]
					tr.mu.Unlock()
				}
				// Both webhooks (message.sent, message.finalized) are durable
				// and the router has parked the message id: the send result
				// now comes after its webhooks.
				if n == 2 && parked {
					parkedEarly.Add(1)
					return nil
				}
				select {
				case <-wake:
				case <-tick.C: // the router parks without a signal we can wait on
				case <-deadline.C:
					return fmt.Errorf("webhooks for %s not parked in time (%d ingested, parked %v)", messageID, n, parked)
				}
			}
		}
		h := newHarness(t, sim.Faults{}, func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v2/messages" || resp.StatusCode != http.StatusOK {
					return resp, err
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil {
					return nil, err
				}
				var msg struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				if err := json.Unmarshal(body, &msg); err != nil {
					return nil, err
				}
				if err := hold(msg.Data.ID); err != nil {
					return nil, err
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				return resp, nil
			})
		})
		note := func(events []crewcast.Event) {
			mu.Lock()
			for _, e := range events {
				ingested[e.MessageID]++
			}
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		h.onIngest.Store(&note)
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		trRef.Store(tr)
		const n = 4
		id := itCreate(t, tr, itNumbers(n))
		t.Cleanup(func() {
			if t.Failed() {
				dumpInbox(t, tr, st)
			}
		})
		g := awaitGroup(t, tr, st, id, 20*time.Second, "complete", func(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete })
		if g.Counts["delivered"] != n {
			t.Fatalf("counts %v, want %d delivered", g.Counts, n)
		}
		if got := parkedEarly.Load(); got != n {
			t.Fatalf("%d sends answered after their webhooks were parked, want %d", got, n)
		}
		for num, d := range itDeliveries(t, st, id) {
			if d.Attempts != 1 || d.ProviderMessageID == "" || d.DeliveredAt.IsZero() {
				t.Errorf("%s: %+v", num, d)
			}
		}
		ctx := context.Background()
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		// The group completes on the last "delivered"; a "sent" of another
		// recipient may still be on its way through the actor. Every entry
		// must be acknowledged well before the 15 s sweep could help.
		awaitInboxDrained(t, tr, st, id, 3*time.Second)
		obs := observations(t, st, id)
		if len(obs) != 2*n {
			t.Errorf("%d webhook observations in the journal, want %d (sent and finalized per recipient)", len(obs), 2*n)
		}
		for ev, c := range obs {
			if c != 1 {
				t.Errorf("event %s observed %d times", ev, c)
			}
		}
		sent := checkLedger(t, h.sim)
		if len(sent) != n {
			t.Errorf("simulator ledger holds %d recipients, want %d", len(sent), n)
		}
	})
}

// awaitInboxDrained waits until the inbox holds no unprocessed entry. Acks
// of webhooks that change nothing publish nothing, so besides the group's
// changes it looks again every 20 ms.
func awaitInboxDrained(t *testing.T, tr *Tracker, st store.Store, id string, timeout time.Duration) {
	t.Helper()
	sub := tr.Hub().Subscribe(id)
	defer sub.Close()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		pending, err := st.PendingInbox(context.Background(), store.InboxRef{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) == 0 {
			return
		}
		select {
		case <-sub.C:
		case <-time.After(20 * time.Millisecond):
		case <-deadline.C:
			dumpInbox(t, tr, st)
			t.Fatalf("inbox entries left unprocessed after %s: %d", timeout, len(pending))
		}
	}
}

// observations counts the journal's webhook observations per event id.
func observations(t *testing.T, st store.Store, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := st.Load(context.Background(), id, 0, func(e actor.Event) error {
		if e.Type != group.TypeObserved {
			return nil
		}
		var o group.Observed
		if err := json.Unmarshal(e.Data, &o); err != nil {
			return err
		}
		if o.Source != group.SourceLookup {
			out[o.EventID]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dumpInbox logs what a failed test left in the inbox and in the tracker's
// routing state, to say where a webhook got stuck.
func dumpInbox(t *testing.T, tr *Tracker, st store.Store) {
	t.Helper()
	pending, err := st.PendingInbox(context.Background(), store.InboxRef{}, 100)
	if err != nil {
		t.Logf("read pending inbox: %v", err)
	}
	for _, e := range pending {
		routing := tr.work.routingMarked(inboxKey{e.Provider, e.EventID})
		tr.mu.Lock()
		_, parked := tr.parked[msgKey(e.Provider, e.MessageID)]
		tr.mu.Unlock()
		t.Logf("unprocessed inbox entry %s/%s message %s target %q: routing mark %v, parked %v", e.Provider, e.EventID, e.MessageID, e.Target, routing, parked)
	}
}

// ---- classification, rate limits, ambiguous sends, duplicates ----

// itRank orders recipient statuses the way docs/design.md §3 lets them move:
// within one attempt a status is only ever followed by one of equal or
// higher rank. (Rate-limit requeues and operator decisions start a new
// attempt and are checked separately.)
func itRank(s crewcast.Status) int {
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
	case crewcast.StatusOptedOut, crewcast.StatusCanceled:
		return 6
	}
	return -1
}

// statusStep is a recipient's status after one journal event changed it.
type statusStep struct {
	seq    uint64
	typ    string
	status crewcast.Status
}

// itReplay replays a group's journal in order through group.Apply, as
// recovery does, and returns the resulting state, the events, and each
// recipient's status history by number (one step per event that changed
// it, starting with the status group.created gave it).
func itReplay(t *testing.T, st store.Store, id string) (*group.Group, []group.Event, map[string][]statusStep) {
	t.Helper()
	g := &group.Group{}
	var events []group.Event
	hist := map[string][]statusStep{}
	err := st.Load(context.Background(), id, 0, func(e actor.Event) error {
		ev, err := group.Decode(e.Type, e.Data)
		if err != nil {
			return err
		}
		if err := g.Apply(ev); err != nil {
			return fmt.Errorf("replay seq %d: %w", e.Seq, err)
		}
		events = append(events, ev)
		for _, r := range g.Recipients {
			h := hist[r.Number]
			if len(h) == 0 || h[len(h)-1].status != r.Status {
				hist[r.Number] = append(h, statusStep{seq: e.Seq, typ: e.Type, status: r.Status})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, events, hist
}

// checkForwardOnly fails the test for every recipient whose journal shows
// its status moving to a lower rank.
func checkForwardOnly(t *testing.T, hist map[string][]statusStep) {
	t.Helper()
	for num, h := range hist {
		for i := 1; i < len(h); i++ {
			if itRank(h[i].status) < itRank(h[i-1].status) {
				t.Errorf("%s moved backwards: %s → %s at journal seq %d (%s); history %v", num, h[i-1].status, h[i].status, h[i].seq, h[i].typ, h)
			}
		}
	}
}

// replies counts the journal's reply events per event id.
func replies(events []group.Event) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		if r, ok := e.(group.Replied); ok {
			out[r.EventID]++
		}
	}
	return out
}

// TestIntegrationFailuresAreClassified scripts delivery failures with real
// Telnyx codes: each recipient must end failed with its code and the class
// docs/providers.md §1.10 gives that code (an unlisted code reported after
// acceptance is a carrier failure). A send refused with 40300 — the
// recipient texted STOP to the provider while we were not listening — must
// end opted_out with a suppression that keeps the number out of the next
// group, and no failed recipient may be resent.
func TestIntegrationFailuresAreClassified(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		want := []struct {
			script string
			status crewcast.Status
			code   string
			class  crewcast.ErrorClass
		}{
			{"fail:40001", crewcast.StatusFailed, "40001", crewcast.ClassRecipient}, // not routable
			{"fail:40006", crewcast.StatusFailed, "40006", crewcast.ClassCarrier},   // recipient carrier down
			{"fail:40008", crewcast.StatusFailed, "40008", crewcast.ClassCarrier},   // undeliverable
			{"fail:40005", crewcast.StatusFailed, "40005", crewcast.ClassUncertain}, // expired after leaving Telnyx
			{"fail:49999", crewcast.StatusFailed, "49999", crewcast.ClassCarrier},   // not in the table
			{"deliver", crewcast.StatusDelivered, "", crewcast.ClassNone},
			{"", crewcast.StatusOptedOut, "40300", crewcast.ClassRecipient}, // blocked at send: STOP
		}
		numbers := itNumbers(len(want))
		optedOut := numbers[len(numbers)-1]
		script := map[string]string{}
		for i, w := range want {
			if w.script != "" {
				script[numbers[i]] = w.script
			}
		}
		h := newHarness(t, sim.Faults{Script: script}, nil)
		ctx := context.Background()
		// No tracker is attached yet: the STOP webhook is refused until the
		// simulator gives up, so only the provider knows of the opt-out.
		if _, err := h.sim.Inbound(ctx, optedOut, itFrom, "STOP"); err != nil {
			t.Fatal(err)
		}
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		id := itCreate(t, tr, numbers)
		g := awaitGroup(t, tr, st, id, 20*time.Second, "complete", func(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete })
		if g.Counts["failed"] != 5 || g.Counts["delivered"] != 1 || g.Counts["opted_out"] != 1 {
			t.Errorf("counts %v, want 5 failed, 1 delivered, 1 opted_out", g.Counts)
		}
		rows := itDeliveries(t, st, id)
		for i, w := range want {
			d := rows[numbers[i]]
			if d.Status != w.status || d.ErrorCode != w.code || d.ErrorClass != w.class || d.Attempts != 1 {
				t.Errorf("script %q: status %s code %q class %q attempts %d; want %s %q %q after 1 attempt",
					w.script, d.Status, d.ErrorCode, d.ErrorClass, d.Attempts, w.status, w.code, w.class)
			}
		}
		sup, err := st.Suppressed(ctx, numbers)
		if err != nil {
			t.Fatal(err)
		}
		if len(sup) != 1 || sup[optedOut].Reason != "provider_opt_out" {
			t.Errorf("suppressions %+v, want one provider_opt_out for the blocked recipient", sup)
		}
		// A permanent failure is not retryable, even by an operator.
		if err := tr.Retry(ctx, id, numbers[0], "test"); !errors.Is(err, group.ErrState) {
			t.Errorf("retry of a 40001 failure: %v, want ErrState", err)
		}
		_, _, hist := itReplay(t, st, id)
		checkForwardOnly(t, hist)

		// The next group skips the suppressed number without a provider call.
		id2, _, err := tr.Create(ctx, group.Request{From: itFrom, To: []string{optedOut, numbers[5]}, Text: itText + " (moved to 8:00)",
			Mode: crewcast.ModeIndividual}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		awaitGroup(t, tr, st, id2, 20*time.Second, "second group complete", func(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete })
		rows2 := itDeliveries(t, st, id2)
		if d := rows2[optedOut]; d.Status != crewcast.StatusOptedOut || d.Attempts != 0 {
			t.Errorf("suppressed recipient in the next group: status %s attempts %d, want opted_out after 0 attempts", d.Status, d.Attempts)
		}
		if d := rows2[numbers[5]]; d.Status != crewcast.StatusDelivered {
			t.Errorf("other recipient of the next group: %s, want delivered", d.Status)
		}
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		sent := checkLedger(t, h.sim)
		for i, num := range numbers {
			wantSends := 1
			switch {
			case num == optedOut:
				wantSends = 0 // refused with 40300: nothing was accepted
			case i == 5:
				wantSends = 2 // once per group, with different texts
			}
			if sent[num] != wantSends {
				t.Errorf("%s (script %q) accepted %d times by the simulator, want %d", num, want[i].script, sent[num], wantSends)
			}
		}
	})
}

// TestIntegrationOptOutInReceiptIsSuppressed: a delivery receipt that fails
// with 40300 (blocked due to STOP) is an opt-out as much as a refused send
// is: the recipient ends opted_out and a suppression is recorded, so the
// next group does not send to that number (docs/design.md §4: "opt-out also
// records a suppression").
func TestIntegrationOptOutInReceiptIsSuppressed(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		numbers := itNumbers(2)
		blocked := numbers[0]
		h := newHarness(t, sim.Faults{Script: map[string]string{blocked: "fail:40300"}}, nil)
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		id := itCreate(t, tr, numbers)
		awaitGroup(t, tr, st, id, 20*time.Second, "complete", func(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete })
		d := itDeliveries(t, st, id)[blocked]
		if d.Status != crewcast.StatusOptedOut || d.ErrorCode != "40300" || d.ErrorClass != crewcast.ClassRecipient {
			t.Errorf("receipt with 40300: status %s code %q class %q, want opted_out 40300 recipient", d.Status, d.ErrorCode, d.ErrorClass)
		}
		sup, err := st.Suppressed(context.Background(), []string{blocked})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sup[blocked]; !ok {
			t.Errorf("no suppression recorded for a recipient the provider reports as opted out (40300 in message.finalized)")
		}
		checkLedger(t, h.sim)
	})
}

// TestIntegrationRateLimitedSendsAreRequeued answers a share of sends with
// 429 (Telnyx 10011, Retry-After 1 s): each refused send must be requeued
// after the wait without spending the attempt budget, every recipient must
// be sent exactly once in the end, and the journal must record each 429 as
// a rate-limited outcome.
func TestIntegrationRateLimitedSendsAreRequeued(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		const n = 12
		numbers := itNumbers(n)
		var mu sync.Mutex
		limited := map[string]int{} // recipient → 429 answers
		h := newHarness(t, sim.Faults{RateLimitRate: 0.4}, func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Method != http.MethodPost || r.URL.Path != "/v2/messages" {
					return rt.RoundTrip(r)
				}
				body, err := io.ReadAll(r.Body)
				_ = r.Body.Close()
				if err != nil {
					return nil, err
				}
				var req struct {
					To string `json:"to"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					return nil, err
				}
				r2 := r.Clone(r.Context())
				r2.Body = io.NopCloser(bytes.NewReader(body))
				resp, err := rt.RoundTrip(r2)
				if err == nil && resp.StatusCode == http.StatusTooManyRequests {
					mu.Lock()
					limited[req.To]++
					mu.Unlock()
				}
				return resp, err
			})
		})
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		id := itCreate(t, tr, numbers)
		awaitGroup(t, tr, st, id, 60*time.Second, "every recipient delivered", func(g store.GroupRow) bool { return g.Counts["delivered"] == n })
		mu.Lock()
		total := 0
		for _, c := range limited {
			total += c
		}
		mu.Unlock()
		// The simulator's draws are seeded and every request draws the
		// same number of values, so the count is the same on every run.
		if total == 0 {
			t.Fatal("the simulator answered no send with 429; the test exercised nothing")
		}
		t.Logf("%d sends answered 429, across %d recipients", total, len(limited))
		for num, d := range itDeliveries(t, st, id) {
			if d.Attempts != 1 {
				t.Errorf("%s: %d attempts after %d rate-limited sends, want 1", num, d.Attempts, limited[num])
			}
		}
		sent := checkLedger(t, h.sim)
		for _, num := range numbers {
			if sent[num] != 1 {
				t.Errorf("%s accepted %d times by the simulator, want 1", num, sent[num])
			}
		}
		g, events, _ := itReplay(t, st, id)
		recorded := map[string]int{}
		for _, e := range events {
			if o, ok := e.(group.Outcomes); ok {
				for _, oc := range o.Outcomes {
					if oc.Result != group.ResultRateLimited {
						continue
					}
					if oc.Code != "10011" || oc.Class != crewcast.ClassNotSent {
						t.Errorf("rate-limited outcome with code %q class %q, want 10011 not_sent", oc.Code, oc.Class)
					}
					for _, i := range oc.Indices {
						recorded[g.Recipients[i].Number]++
					}
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, num := range numbers {
			if recorded[num] != limited[num] {
				t.Errorf("%s: %d rate-limited outcomes in the journal, %d 429 answers", num, recorded[num], limited[num])
			}
		}
	})
}

// TestIntegrationSilentAcceptTimeoutNeedsAnOperator: the provider accepts
// the send but the answer never comes and no webhook ever follows
// ("accept_timeout:silent"). The recipient must become unconfirmed and
// stay so — across a restart, never resent, not retryable — until an
// operator resolves it not_delivered, which allows exactly one new send.
func TestIntegrationSilentAcceptTimeoutNeedsAnOperator(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		numbers := itNumbers(2)
		silent, other := numbers[0], numbers[1]
		h := newHarnessWith(t, itOptions{faults: sim.Faults{Script: map[string]string{silent: "accept_timeout:silent"}}, acceptTimeoutHold: time.Minute})
		short := func(c *Config) { c.SendTimeout = 2 * time.Second }
		st1 := eng.open(t)
		tr1 := h.startTracker(t, st1, short)
		id := itCreate(t, tr1, numbers)
		awaitGroup(t, tr1, st1, id, 20*time.Second, "complete", func(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete })
		ctx := context.Background()
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		rows := itDeliveries(t, st1, id)
		if d := rows[silent]; d.Status != crewcast.StatusUnconfirmed || d.Attempts != 1 || d.ProviderMessageID != "" || d.ErrorClass != crewcast.ClassUncertain {
			t.Fatalf("silent accept timeout: %+v, want unconfirmed, uncertain, 1 attempt, no message id", d)
		}
		if d := rows[other]; d.Status != crewcast.StatusDelivered {
			t.Fatalf("other recipient %s, want delivered", d.Status)
		}
		itStop(t, h, tr1)
		_ = st1.Close()

		// A new process: recovery and the start-up sweep must leave the
		// unconfirmed recipient alone.
		st2 := eng.open(t)
		tr2 := h.startTracker(t, st2, short)
		if err := tr2.ResumeGroups(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tr2.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tr2.Retry(ctx, id, silent, "test"); !errors.Is(err, group.ErrState) {
			t.Errorf("retry of an unconfirmed recipient: %v, want ErrState (only an operator's resolve may resend)", err)
		}
		if err := tr2.Resolve(ctx, id, other, group.ResolveNotDelivered, "test"); !errors.Is(err, group.ErrState) {
			t.Errorf("resolve of a delivered recipient: %v, want ErrState", err)
		}
		if d := itDeliveries(t, st2, id)[silent]; d.Status != crewcast.StatusUnconfirmed || d.Attempts != 1 {
			t.Fatalf("after a restart: %s after %d attempts, want still unconfirmed after 1", d.Status, d.Attempts)
		}
		sent := checkLedger(t, h.sim)
		if sent[silent] != 1 || sent[other] != 1 || len(sent) != 2 {
			t.Fatalf("simulator ledger %v before the operator decided, want each recipient once", sent)
		}

		// The operator says it did not arrive: one new attempt, which the
		// provider now answers. The ledger starts afresh so the check below
		// sees only what the decision caused.
		h.sim.Reset()
		if err := h.sim.SetFaults(sim.Faults{}); err != nil {
			t.Fatal(err)
		}
		if err := tr2.Resolve(ctx, id, silent, group.ResolveNotDelivered, "operator"); err != nil {
			t.Fatal(err)
		}
		awaitGroup(t, tr2, st2, id, 20*time.Second, "the resent recipient delivered", func(g store.GroupRow) bool { return g.Counts["delivered"] == 2 })
		if d := itDeliveries(t, st2, id)[silent]; d.Attempts != 2 || d.ProviderMessageID == "" {
			t.Errorf("after resolve not_delivered: %d attempts, message %q; want 2 attempts and a message id", d.Attempts, d.ProviderMessageID)
		}
		if err := tr2.Resolve(ctx, id, silent, group.ResolveNotDelivered, "operator"); !errors.Is(err, group.ErrState) {
			t.Errorf("a second resolve of a delivered recipient: %v, want ErrState", err)
		}
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		sent = checkLedger(t, h.sim)
		if sent[silent] != 1 || len(sent) != 1 {
			t.Errorf("sends after the operator's decision %v, want exactly one, to %s", sent, silent)
		}
	})
}

// TestIntegrationAcceptTimeoutReconciledByWebhooks: the provider accepts
// the send and its webhooks flow, but the answer to the send is lost. The
// recipient becomes unconfirmed, and the webhooks — whether they arrive
// while the send is still hanging or after it timed out — prove the send
// went out: the recipient is reconciled to delivered with the evidence in
// the journal, and never resent.
func TestIntegrationAcceptTimeoutReconciledByWebhooks(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		numbers := itNumbers(2)
		early, late := numbers[0], numbers[1]
		script := map[string]string{early: "accept_timeout", late: "accept_timeout"}
		h := newHarnessWith(t, itOptions{faults: sim.Faults{Script: script}, acceptTimeoutHold: time.Minute})
		st := eng.open(t)
		tr := h.startTracker(t, st, func(c *Config) { c.SendTimeout = time.Second })
		ctx := context.Background()
		t.Cleanup(func() {
			if t.Failed() {
				dumpInbox(t, tr, st)
			}
		})
		for _, c := range []struct {
			num   string
			delay int
			what  string
		}{
			{early, 0, "webhooks before the send times out"},
			{late, 1500, "webhooks after the send timed out"},
		} {
			if err := h.sim.SetFaults(sim.Faults{Script: script, DelayMS: [2]int{c.delay, c.delay}}); err != nil {
				t.Fatal(err)
			}
			id := itCreate(t, tr, []string{c.num})
			awaitGroup(t, tr, st, id, 20*time.Second, c.what+": delivered", func(g store.GroupRow) bool { return g.Counts["delivered"] == 1 })
			if err := h.sim.WaitIdle(ctx); err != nil {
				t.Fatal(err)
			}
			awaitInboxDrained(t, tr, st, id, 5*time.Second)
			var messageID string
			for _, s := range h.sim.Ledger() {
				if s.To == c.num {
					messageID = s.ID
				}
			}
			d := itDeliveries(t, st, id)[c.num]
			if d.Attempts != 1 || d.ProviderMessageID != messageID || messageID == "" {
				t.Errorf("%s: attempts %d, message %q; want 1 attempt and the accepted message %q", c.what, d.Attempts, d.ProviderMessageID, messageID)
			}
			_, events, hist := itReplay(t, st, id)
			checkForwardOnly(t, hist)
			// The journal tells the story: the answer was lost (uncertain →
			// unconfirmed), then provider evidence reconciled it.
			uncertainAt, reconciledAt := -1, -1
			for i, e := range events {
				switch v := e.(type) {
				case group.Outcomes:
					for _, o := range v.Outcomes {
						if o.Result == group.ResultUncertain {
							uncertainAt = i
						}
					}
				case group.Observed:
					if v.Source == group.SourceReconcile && reconciledAt < 0 {
						reconciledAt = i
						if v.MessageID != messageID || !strings.Contains(v.Evidence, messageID) {
							t.Errorf("%s: reconciled with message %q, evidence %q; want the accepted message %q", c.what, v.MessageID, v.Evidence, messageID)
						}
					}
				}
			}
			if uncertainAt < 0 || reconciledAt < uncertainAt {
				t.Errorf("%s: journal has the uncertain outcome at %d and the reconciliation at %d; want an uncertain outcome followed by a reconciliation", c.what, uncertainAt, reconciledAt)
			}
			var path []crewcast.Status
			for _, s := range hist[c.num] {
				path = append(path, s.status)
			}
			if !slices.Contains(path, crewcast.StatusUnconfirmed) {
				t.Errorf("%s: status history %v never shows unconfirmed", c.what, path)
			}
			for ev, n := range observations(t, st, id) {
				if n != 1 {
					t.Errorf("%s: event %s observed %d times", c.what, ev, n)
				}
			}
		}
		sent := checkLedger(t, h.sim)
		if sent[early] != 1 || sent[late] != 1 {
			t.Errorf("simulator ledger %v, want each recipient once", sent)
		}
	})
}

// TestIntegrationDuplicateAndReorderedWebhooksAreHarmless posts every
// webhook twice and lets final receipts overtake "sent" ones: the final
// statuses must be those the simulator reported, each event must be
// observed once, replies counted once, and no recipient's status may ever
// move backwards in the journal.
func TestIntegrationDuplicateAndReorderedWebhooksAreHarmless(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		fates := []struct {
			script string
			status crewcast.Status
			ack    crewcast.Ack
		}{
			{"deliver", crewcast.StatusDelivered, crewcast.AckNone},
			{"deliver", crewcast.StatusDelivered, crewcast.AckNone},
			{"deliver", crewcast.StatusDelivered, crewcast.AckNone},
			{"deliver", crewcast.StatusDelivered, crewcast.AckNone},
			{"fail:40001", crewcast.StatusFailed, crewcast.AckNone},
			{"fail:40006", crewcast.StatusFailed, crewcast.AckNone},
			{"unknown", crewcast.StatusUnknown, crewcast.AckNone},
			{"unknown", crewcast.StatusUnknown, crewcast.AckNone},
			{"reply:YES", crewcast.StatusDelivered, crewcast.AckYes},
			{"reply:NO", crewcast.StatusDelivered, crewcast.AckNo},
		}
		numbers := itNumbers(len(fates))
		script := map[string]string{}
		for i, f := range fates {
			script[numbers[i]] = f.script
		}
		h := newHarness(t, sim.Faults{Script: script, DuplicateRate: 1, Reorder: true, DelayMS: [2]int{0, 20}}, nil)
		var mu sync.Mutex
		posts := map[string]int{}                    // event id → webhooks ingested (copies included)
		firstKind := map[string]crewcast.EventKind{} // message id → kind of its first status webhook
		note := func(events []crewcast.Event) {
			mu.Lock()
			defer mu.Unlock()
			e := events[0]
			posts[e.EventID]++
			if _, ok := firstKind[e.MessageID]; !ok && e.Kind != crewcast.KindInbound {
				firstKind[e.MessageID] = e.Kind
			}
		}
		h.onIngest.Store(&note)
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		t.Cleanup(func() {
			if t.Failed() {
				dumpInbox(t, tr, st)
			}
		})
		id := itCreate(t, tr, numbers)
		awaitGroup(t, tr, st, id, 20*time.Second, "complete with both replies", func(g store.GroupRow) bool {
			return g.Status == crewcast.GroupComplete && g.Counts["replied"] == 2
		})
		ctx := context.Background()
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		awaitInboxDrained(t, tr, st, id, 5*time.Second)
		rows := itDeliveries(t, st, id)
		for i, f := range fates {
			d := rows[numbers[i]]
			if d.Status != f.status || d.Ack != f.ack || d.Attempts != 1 {
				t.Errorf("script %q: status %s ack %q attempts %d; want %s ack %q after 1 attempt", f.script, d.Status, d.Ack, d.Attempts, f.status, f.ack)
			}
		}
		mu.Lock()
		reordered := 0
		for _, k := range firstKind {
			if k == crewcast.KindStatus {
				reordered++
			}
		}
		for ev, n := range posts {
			if n < 2 {
				t.Errorf("event %s was ingested %d times; duplicate_rate=1 should post every webhook twice", ev, n)
			}
		}
		mu.Unlock()
		// Seeded: the same recipients are reordered on every run.
		if reordered == 0 {
			t.Error("no final receipt overtook its sent event; the test exercised no reordering")
		}
		t.Logf("%d of %d recipients had their final receipt first; %d distinct events ingested", reordered, len(fates), len(posts))
		obs := observations(t, st, id)
		// Sent and final per recipient; replies are counted apart.
		if len(obs) != 2*len(fates) {
			t.Errorf("%d distinct events observed in the journal, want %d", len(obs), 2*len(fates))
		}
		for ev, n := range obs {
			if n != 1 {
				t.Errorf("event %s observed %d times in the journal", ev, n)
			}
		}
		_, events, hist := itReplay(t, st, id)
		rep := replies(events)
		if len(rep) != 2 {
			t.Errorf("%d distinct replies in the journal, want 2", len(rep))
		}
		for ev, n := range rep {
			if n != 1 {
				t.Errorf("reply %s recorded %d times", ev, n)
			}
		}
		checkForwardOnly(t, hist)
		sent := checkLedger(t, h.sim)
		for _, num := range numbers {
			if sent[num] != 1 {
				t.Errorf("%s accepted %d times by the simulator, want 1", num, sent[num])
			}
		}
	})
}

// TestIntegrationRerouteOfAppliedWebhookIsNotJournaledTwice: routing reads
// the inbox and hands entries to groups without a transaction around both
// (adoptParked's InboxByMessageID, the Sweep's PendingInbox), and the
// routing mark that stops a second hand-over is cleared once the group's
// commit acknowledged the entry. A reader that read the entry just before
// that commit therefore routes it again just after. The group must treat
// an event it has already applied as done — acknowledge it, journal
// nothing — or the audit trail shows one webhook twice (seen with
// duplicated and reordered webhooks through the HTTP endpoint, server
// TestWebhooksReplayedAfterRestartAreHarmless, about one run in ten). The
// test routes an applied entry again directly, as that stale reader would.
func TestIntegrationRerouteOfAppliedWebhookIsNotJournaledTwice(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		h := newHarness(t, sim.Faults{}, nil)
		var mu sync.Mutex
		var finals [][]crewcast.Event
		note := func(events []crewcast.Event) {
			if events[0].Kind == crewcast.KindStatus {
				mu.Lock()
				finals = append(finals, events)
				mu.Unlock()
			}
		}
		h.onIngest.Store(&note)
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		id := itCreate(t, tr, itNumbers(1))
		awaitGroup(t, tr, st, id, 20*time.Second, "complete", func(g store.GroupRow) bool { return g.Status == crewcast.GroupComplete })
		ctx := context.Background()
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		awaitInboxDrained(t, tr, st, id, 5*time.Second)
		mu.Lock()
		if len(finals) != 1 {
			mu.Unlock()
			t.Fatalf("%d final receipts ingested, want 1", len(finals))
		}
		events := finals[0]
		mu.Unlock()
		ev := events[0]
		before, err := st.GetGroup(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// A command asked of the group is handled after the turn in progress
		// and after anything told to it earlier by this goroutine: resolving
		// a delivered recipient (refused, changing nothing) is a barrier.
		barrier := func() {
			t.Helper()
			if err := tr.Resolve(ctx, id, ev.To, group.ResolveDelivered, "barrier"); !errors.Is(err, group.ErrState) {
				t.Fatalf("resolve of a delivered recipient (a barrier): %v, want ErrState", err)
			}
		}
		// The turn that acknowledged the receipt clears its routing mark
		// after the commit the inbox shows: let it finish.
		barrier()
		// The stale reader's hand-over of the already acknowledged entry;
		// routeEntry tells the group before it returns.
		if err := tr.routeEntry(ctx, store.InboxRef{Provider: ev.Provider, EventID: ev.EventID}, events, time.Time{}); err != nil {
			t.Fatal(err)
		}
		barrier()
		if n := observations(t, st, id)[ev.EventID]; n != 1 {
			t.Errorf("final receipt %s observed %d times in the journal after being routed again, want 1", ev.EventID, n)
		}
		after, err := st.GetGroup(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.Seq != before.Seq {
			t.Errorf("journal moved from seq %d to %d on an event already applied", before.Seq, after.Seq)
		}
		checkLedger(t, h.sim)
	})
}

// gatedStore holds the tracker's InboxByMessageID calls — the first store
// call of a goroutine that adopts parked webhooks — until leave is closed.
type gatedStore struct {
	store.Store
	entered chan struct{} // closed at the first call
	once    sync.Once
	leave   chan struct{}
}

func (g *gatedStore) InboxByMessageID(ctx context.Context, provider, messageID string) ([]store.InboxEntry, error) {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.leave:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Store.InboxByMessageID(ctx, provider, messageID)
}

// TestIntegrationStopWhileAdoptingParkedWebhooks stops the tracker while a
// send is in flight whose webhooks are already parked: the send's answer
// arrives during Stop, its commit adopts the parked webhooks, and
// Tracker.adoptParked starts a goroutine (t.wg.Add(1)) while Stop is about
// to call, or has passed, t.wg.Wait(). Stop must either not start that
// work or wait for it: it must not return while a tracker goroutine is
// still inside the store, and (under -race) an Add from zero must not race
// with Wait.
func TestIntegrationStopWhileAdoptingParkedWebhooks(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		release := make(chan struct{})
		var releaseOnce sync.Once
		free := func() { releaseOnce.Do(func() { close(release) }) }
		accepted := make(chan string, 1)
		h := newHarness(t, sim.Faults{}, func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(r)
				if err != nil || r.Method != http.MethodPost || resp.StatusCode != http.StatusOK {
					return resp, err
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil {
					return nil, err
				}
				var msg struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				if err := json.Unmarshal(body, &msg); err != nil {
					return nil, err
				}
				accepted <- msg.Data.ID
				<-release // the answer waits until Stop is under way
				resp.Body = io.NopCloser(bytes.NewReader(body))
				return resp, nil
			})
		})
		t.Cleanup(free)
		gs := &gatedStore{Store: eng.open(t), entered: make(chan struct{}), leave: make(chan struct{})}
		var leaveOnce sync.Once
		leave := func() { leaveOnce.Do(func() { close(gs.leave) }) }
		t.Cleanup(leave)
		tr := h.startTracker(t, gs, nil)
		itCreate(t, tr, itNumbers(1))
		var messageID string
		select {
		case messageID = <-accepted:
		case <-time.After(10 * time.Second):
			t.Fatal("the send never reached the simulator")
		}
		// Internal states without a signal to wait on: look every 2 ms.
		poll := func(what string, cond func() bool) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for !cond() {
				if time.Now().After(deadline) {
					t.Fatalf("timed out waiting for %s", what)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}
		poll("the webhooks parked", func() bool {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			_, ok := tr.parked[msgKey(telnyx.ProviderName, messageID)]
			return ok
		})
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			stopped <- tr.Stop(ctx)
		}()
		poll("Stop waiting for the send in flight", func() bool {
			tr.pool.mu.Lock()
			defer tr.pool.mu.Unlock()
			return tr.pool.closed
		})
		free()
		select {
		case err := <-stopped:
			// Stop started no adoption, or finished before starting it;
			// in the latter case the goroutine now runs after Stop.
			select {
			case <-gs.entered:
				t.Fatal("Stop returned while the adoption goroutine it let start was inside the store")
			default:
			}
			if err != nil {
				t.Fatalf("stop: %v", err)
			}
		case <-gs.entered:
			// Adoption began during Stop: Stop must wait for it. One second
			// is far longer than Stop needs to return when it does not.
			select {
			case <-stopped:
				t.Fatal("Stop returned while the adoption goroutine it let start was inside the store")
			case <-time.After(time.Second):
			}
			leave()
			if err := <-stopped; err != nil {
				t.Fatalf("stop: %v", err)
			}
		}
		checkLedger(t, h.sim)
	})
}

// TestIntegrationUnknownRecipientsAreResolvable: recipients the provider
// reported as delivery_unconfirmed end "unknown"; an operator resolves one
// as delivered (nothing is sent) and one as not delivered (exactly one new
// attempt, which the provider now delivers). Issue 11: unknown was a dead
// end ("only unconfirmed recipients can be resolved").
func TestIntegrationUnknownRecipientsAreResolvable(t *testing.T) {
	itEngines(t, func(t *testing.T, eng itEngine) {
		numbers := itNumbers(3)
		got, lost, other := numbers[0], numbers[1], numbers[2]
		h := newHarness(t, sim.Faults{Script: map[string]string{got: "unknown", lost: "unknown"}}, nil)
		st := eng.open(t)
		tr := h.startTracker(t, st, nil)
		id := itCreate(t, tr, numbers)
		awaitGroup(t, tr, st, id, 20*time.Second, "two unknown, one delivered", func(g store.GroupRow) bool {
			return g.Counts["unknown"] == 2 && g.Counts["delivered"] == 1
		})
		ctx := context.Background()
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		h.sim.Reset()
		if err := h.sim.SetFaults(sim.Faults{}); err != nil {
			t.Fatal(err)
		}
		if err := tr.Resolve(ctx, id, other, group.ResolveDelivered, "op"); !errors.Is(err, group.ErrState) {
			t.Errorf("resolve of a delivered recipient: %v, want ErrState", err)
		}
		if err := tr.Resolve(ctx, id, got, group.ResolveDelivered, "op-ana"); err != nil {
			t.Fatalf("resolve unknown as delivered: %v", err)
		}
		if err := tr.Resolve(ctx, id, lost, group.ResolveNotDelivered, "op-bo"); err != nil {
			t.Fatalf("resolve unknown as not delivered: %v", err)
		}
		awaitGroup(t, tr, st, id, 20*time.Second, "all delivered", func(g store.GroupRow) bool {
			return g.Counts["delivered"] == 3 && g.Status == crewcast.GroupComplete
		})
		rows := itDeliveries(t, st, id)
		if d := rows[got]; d.Attempts != 1 {
			t.Errorf("resolved delivered: %d attempts, want 1", d.Attempts)
		}
		if d := rows[lost]; d.Attempts != 2 {
			t.Errorf("resolved not delivered: %d attempts, want 2", d.Attempts)
		}
		if err := h.sim.WaitIdle(ctx); err != nil {
			t.Fatal(err)
		}
		if sent := checkLedger(t, h.sim); sent[lost] != 1 || len(sent) != 1 {
			t.Errorf("sends after the decisions %v, want one, to %s", sent, lost)
		}
		// The journal says who decided, from what status.
		var resolved []group.Resolved
		err := st.Load(ctx, id, 0, func(e actor.Event) error {
			if e.Type == group.TypeResolved {
				ev, err := group.Decode(e.Type, e.Data)
				if err != nil {
					return err
				}
				resolved = append(resolved, ev.(group.Resolved))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(resolved) != 2 || resolved[0].By != "op-ana" || resolved[0].From != crewcast.StatusUnknown ||
			resolved[1].By != "op-bo" || resolved[1].Outcome != group.ResolveNotDelivered || resolved[1].From != crewcast.StatusUnknown {
			t.Errorf("journal resolved events %+v", resolved)
		}
	})
}
