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
	h := &itHarness{transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}
	hook := httptest.NewServer(http.HandlerFunc(h.webhook))
	t.Cleanup(hook.Close)
	seed := int64(1)
	sm, err := sim.New(sim.Config{Faults: faults, Seed: &seed, TelnyxWebhookURL: hook.URL + "/webhooks/telnyx",
		RetryBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.sim = sm
	h.simURL, err = sm.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sm.Stop(ctx); err != nil {
			t.Errorf("stop simulator: %v", err)
		}
		h.transport.CloseIdleConnections()
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
		sub := tr.Hub().Subscribe(id)
		defer sub.Close()
		for deadline := time.After(3 * time.Second); ; {
			pending, err := st.PendingInbox(ctx, store.InboxRef{}, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(pending) == 0 {
				break
			}
			select {
			case <-sub.C:
			case <-time.After(20 * time.Millisecond): // acks of no-op events publish nothing
			case <-deadline:
				t.Fatalf("inbox entries left unprocessed: %d", len(pending))
			}
		}
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
		tr.mu.Lock()
		_, routing := tr.routing[inboxKey{e.Provider, e.EventID}]
		_, parked := tr.parked[msgKey(e.Provider, e.MessageID)]
		tr.mu.Unlock()
		t.Logf("unprocessed inbox entry %s/%s message %s target %q: routing mark %v, parked %v", e.Provider, e.EventID, e.MessageID, e.Target, routing, parked)
	}
}
