package webhookout

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crewcast/crewcast/store"
)

// Schedule is the wait before each retry: the first attempt is at once,
// then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (docs/design.md §13); after
// the last the delivery is given up ("failed"; recover queues it again).
var Schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// DisableAfter is how long an endpoint may fail without a success before
// it is disabled.
const DisableAfter = 5 * 24 * time.Hour

// maxRetryAfter caps how far a Retry-After answer moves an attempt.
const maxRetryAfter = 24 * time.Hour

// NextAttempt returns when to try again after attempts failed attempts
// (zero: give up). jitter in [0,1) spreads retries over ±20 %; a
// Retry-After later than the schedule wins.
func NextAttempt(now time.Time, attempts int, jitter float64, retryAfter time.Duration) time.Time {
	if attempts < 1 || attempts > len(Schedule) {
		return time.Time{}
	}
	d := Schedule[attempts-1]
	d = time.Duration(float64(d) * (0.8 + 0.4*jitter))
	if retryAfter > d {
		d = min(retryAfter, maxRetryAfter)
	}
	return now.Add(d)
}

// ParseRetryAfter reads a Retry-After header (seconds or an HTTP date).
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Store is what a Worker reads and writes: the endpoints, the outbox it
// dispatches into deliveries, the deliveries it claims, tries and
// records, and the purge of what retention lets go. Every engine's
// store.Store is one; the worker needs nothing else of it.
type Store interface {
	ListWebhookEndpoints(ctx context.Context) ([]store.WebhookEndpoint, error)
	DispatchOutbox(ctx context.Context, now time.Time, limit int) (int, error)
	ClaimWebhookDeliveries(ctx context.Context, c store.WebhookClaim) ([]store.WebhookDelivery, error)
	ReleaseWebhookClaims(ctx context.Context, owner string, now time.Time) (int, error)
	RecordWebhookAttempts(ctx context.Context, os []store.WebhookOutcome) (disabled []bool, err error)
	WebhookQueue(ctx context.Context) (pending int, oldest time.Time, err error)
	PurgeWebhooks(ctx context.Context, before, dropPending time.Time) (int, error)
}

var _ Store = store.Store(nil)

// Config configures a Worker.
type Config struct {
	Store  Store
	Sealer *Sealer
	// Client sends the requests; default NewClient(AllowPrivate).
	Client       *http.Client
	AllowPrivate bool
	Logger       *slog.Logger
	// Registerer receives the crewcast_webhook_out_* metrics (nil: none).
	Registerer prometheus.Registerer
	Now        func() time.Time
	// Jitter returns a number in [0,1); default math/rand.
	Jitter func() float64
	// PerEndpoint is how many requests one endpoint may have in flight
	// (default 4): a slow endpoint holds at most that many workers.
	PerEndpoint int
	// Backlog is how many claimed deliveries one endpoint may have waiting
	// in memory before the worker stops claiming more for it (default 64).
	Backlog int
	// Poll is how often the worker looks for work without a Kick (default 1 s).
	Poll time.Duration
	// Lease is how long a claimed delivery is held (default 60 s): after a
	// crash it is tried again when the lease ends.
	Lease time.Duration
	// Owner names this worker's claims (a node id; default "local"). At
	// start the worker takes back at once what the same owner had claimed
	// when it died; each node of several needs its own.
	Owner string
	// Keep is how long events and attempts are kept for recover and the
	// attempts log (default 7 days; pending deliveries are kept longer).
	Keep time.Duration
	// MaxPending is how long an event waits for an endpoint that does not
	// take it (disabled, or recovered and failing) before it is dropped
	// with its payload, as retention redacts bodies (default 30 days).
	MaxPending time.Duration
}

// Worker fans the outbox out and delivers it.
type Worker struct {
	cfg   Config
	kick  chan struct{}
	mu    sync.Mutex
	lanes map[string]*lane
	eps   map[string]store.WebhookEndpoint
	wg    sync.WaitGroup
	m     workerMetrics
	// enabled is whether any endpoint exists: commits write outbox rows
	// only then.
	enabled atomic.Bool
	// recQueue holds outcomes waiting to be written; recBusy is set while
	// a lane writes them (see record).
	recMu    sync.Mutex
	recQueue []store.WebhookOutcome
	recBusy  bool
}

// Enabled reports whether any endpoint existed at the last refresh.
func (w *Worker) Enabled() bool { return w.enabled.Load() }

// Refresh reloads the endpoints now; the API calls it after a change so
// that commits right after an endpoint is created write its events (other
// nodes see the change at their next poll).
func (w *Worker) Refresh(ctx context.Context) error {
	eps, err := w.cfg.Store.ListWebhookEndpoints(ctx)
	if err != nil {
		return err
	}
	w.setEndpoints(eps)
	w.Kick()
	return nil
}

func (w *Worker) setEndpoints(eps []store.WebhookEndpoint) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.eps = make(map[string]store.WebhookEndpoint, len(eps))
	for _, e := range eps {
		w.eps[e.ID] = e
	}
	w.enabled.Store(len(eps) > 0)
}

type lane struct {
	queue  []store.WebhookDelivery
	active int // goroutines serving it
}

type workerMetrics struct {
	attempts *prometheus.CounterVec
	disabled prometheus.Counter
	depth    prometheus.Gauge
	oldest   prometheus.Gauge
}

// New returns a worker; Run starts it.
func New(cfg Config) *Worker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Client == nil {
		cfg.Client = NewClient(cfg.AllowPrivate)
	}
	if cfg.Sealer == nil {
		cfg.Sealer = &Sealer{}
	}
	if cfg.PerEndpoint <= 0 {
		cfg.PerEndpoint = 4
	}
	if cfg.Backlog <= 0 {
		cfg.Backlog = 64
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 60 * time.Second
	}
	if cfg.Owner == "" {
		cfg.Owner = "local"
	}
	if cfg.Keep <= 0 {
		cfg.Keep = 7 * 24 * time.Hour
	}
	if cfg.MaxPending < cfg.Keep {
		cfg.MaxPending = max(30*24*time.Hour, cfg.Keep)
	}
	w := &Worker{cfg: cfg, kick: make(chan struct{}, 1), lanes: map[string]*lane{}, eps: map[string]store.WebhookEndpoint{}}
	w.m = workerMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "crewcast_webhook_out_attempts_total",
			Help: "Outbound webhook delivery attempts by result (ok, http, network, refused, internal)."}, []string{"result"}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{Name: "crewcast_webhook_out_endpoints_disabled_total",
			Help: "Webhook endpoints disabled (410 Gone or failing for 5 days)."}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{Name: "crewcast_webhook_out_queue_depth",
			Help: "Outbound webhook deliveries pending plus outbox rows not yet dispatched."}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "crewcast_webhook_out_oldest_pending_seconds",
			Help: "Age of the oldest pending outbound webhook event."}),
	}
	// Every result exported at 0 from the start: a rate over a series
	// that appears only with its first failure misses that failure.
	for _, r := range []string{store.AttemptOK, store.AttemptHTTP, store.AttemptNetwork, store.AttemptRefused, store.AttemptInternal} {
		w.m.attempts.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{w.m.attempts, w.m.disabled, w.m.depth, w.m.oldest} {
			_ = cfg.Registerer.Register(c)
		}
	}
	return w
}

// Kick asks the worker to look for work now (after a commit wrote outbox
// rows, an endpoint changed, a test event was queued).
func (w *Worker) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for attempts in flight. Pending
// rows left by an earlier process are picked up at once (claims it held
// come back when their lease ends).
func (w *Worker) Run(ctx context.Context) {
	defer w.wg.Wait()
	if n, err := w.cfg.Store.ReleaseWebhookClaims(ctx, w.cfg.Owner, w.cfg.Now()); err != nil && ctx.Err() == nil {
		w.cfg.Logger.Warn("webhook delivery: take back claims", "err", err)
	} else if n > 0 {
		w.cfg.Logger.Info("webhook delivery: took back claims of the previous run", "deliveries", n)
	}
	t := time.NewTicker(w.cfg.Poll)
	defer t.Stop()
	lastStats, lastPurge := time.Time{}, time.Time{}
	for {
		if err := w.Step(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("webhook delivery: store", "err", err)
		}
		if now := w.cfg.Now(); now.Sub(lastStats) >= 10*time.Second {
			lastStats = now
			if n, oldest, err := w.cfg.Store.WebhookQueue(ctx); err == nil {
				w.m.depth.Set(float64(n))
				age := 0.0
				if !oldest.IsZero() {
					age = now.Sub(oldest).Seconds()
				}
				w.m.oldest.Set(age)
			}
		}
		if now := w.cfg.Now(); now.Sub(lastPurge) >= time.Hour {
			lastPurge = now
			if _, err := w.cfg.Store.PurgeWebhooks(ctx, now.Add(-w.cfg.Keep), now.Add(-w.cfg.MaxPending)); err != nil && ctx.Err() == nil {
				w.cfg.Logger.Warn("webhook purge", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-t.C:
		}
	}
}

// Step dispatches the outbox, refreshes endpoints and hands due
// deliveries to the endpoints' lanes. Exported for tests.
func (w *Worker) Step(ctx context.Context) error {
	now := w.cfg.Now()
	for {
		n, err := w.cfg.Store.DispatchOutbox(ctx, now, 500)
		if err != nil {
			return err
		}
		if n < 500 {
			break
		}
	}
	eps, err := w.cfg.Store.ListWebhookEndpoints(ctx)
	if err != nil {
		return err
	}
	w.setEndpoints(eps)
	// A few rounds per step, so that new outbox rows are dispatched
	// while a backlog drains (lanes kick for the next step).
	for range 8 {
		// Room in each enabled endpoint's lane: a full lane is not
		// claimed for, so a slow endpoint's backlog stays in the store.
		w.mu.Lock()
		room := map[string]int{}
		for id, e := range w.eps {
			if e.DisabledAt.IsZero() {
				n := w.cfg.Backlog
				if l := w.lanes[id]; l != nil {
					n -= len(l.queue)
				}
				if n > 0 {
					room[id] = n
				}
			}
		}
		w.mu.Unlock()
		if len(room) == 0 {
			return nil
		}
		ds, err := w.cfg.Store.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: now, Lease: w.cfg.Lease, Room: room,
			Owner: w.cfg.Owner})
		if err != nil {
			return err
		}
		w.mu.Lock()
		for _, d := range ds {
			w.enqueueLocked(ctx, d)
		}
		w.mu.Unlock()
		if len(ds) == 0 {
			return nil
		}
	}
	w.Kick()
	return nil
}

func (w *Worker) enqueueLocked(ctx context.Context, d store.WebhookDelivery) {
	l := w.lanes[d.EndpointID]
	if l == nil {
		l = &lane{}
		w.lanes[d.EndpointID] = l
	}
	l.queue = append(l.queue, d)
	if l.active < w.cfg.PerEndpoint {
		l.active++
		w.wg.Add(1)
		go w.serve(ctx, d.EndpointID, l)
	}
}

// serve delivers a lane's queue; PerEndpoint of these run at most per
// endpoint, so a slow endpoint never holds more workers than that.
func (w *Worker) serve(ctx context.Context, id string, l *lane) {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if len(l.queue) == 0 || ctx.Err() != nil {
			l.active--
			if l.active == 0 && len(l.queue) == 0 {
				delete(w.lanes, id)
			}
			w.mu.Unlock()
			return
		}
		d := l.queue[0]
		l.queue = l.queue[1:]
		if len(l.queue) == w.cfg.Backlog/2 {
			w.Kick() // claim more before the lane runs dry
		}
		ep, ok := w.eps[id]
		w.mu.Unlock()
		if !ok || !ep.DisabledAt.IsZero() {
			continue // deleted or disabled since the claim: its lease lapses
		}
		if err := w.deliver(ctx, ep, d); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("webhook delivery: record attempt", "endpoint", id, "err", err)
		}
	}
}

// maxAnswer is how much of an answer is read (and thrown away).
const maxAnswer = 4 << 10

func (w *Worker) keys(ep store.WebhookEndpoint, now time.Time) ([]string, error) {
	cur, err := w.cfg.Sealer.Open(ep.ID, ep.Secret)
	if err != nil {
		return nil, err
	}
	keys := []string{cur}
	if len(ep.PrevSecret) > 0 && now.Before(ep.PrevUntil) {
		prev, err := w.cfg.Sealer.Open(ep.ID, ep.PrevSecret)
		if err != nil {
			return nil, err
		}
		keys = append(keys, prev)
	}
	return keys, nil
}

// Attempt makes one delivery attempt and returns its outcome (not yet
// recorded). Exported for tests.
func (w *Worker) Attempt(ctx context.Context, ep store.WebhookEndpoint, d store.WebhookDelivery) store.WebhookOutcome {
	start := w.cfg.Now()
	a := store.WebhookAttempt{EndpointID: ep.ID, OutboxID: d.Row.ID, MsgID: d.Row.MsgID, Type: d.Row.Type, At: start}
	var retryAfter time.Duration
	gone := false
	keys, err := w.keys(ep, start)
	var sig string
	if err == nil {
		sig, err = Sign(d.Row.MsgID, start, d.Row.Payload, keys...)
	}
	if err != nil {
		a.Result, a.Error = store.AttemptInternal, ErrClassInternal
	} else {
		req, rerr := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(d.Row.Payload))
		if rerr != nil {
			a.Result, a.Error = store.AttemptInternal, ErrClassInternal
		} else {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("User-Agent", "crewcast-webhooks/1")
			req.Header.Set("webhook-id", d.Row.MsgID)
			req.Header.Set("webhook-timestamp", strconv.FormatInt(start.Unix(), 10))
			req.Header.Set("webhook-signature", sig)
			t0 := time.Now()
			resp, derr := w.cfg.Client.Do(req)
			if derr != nil {
				a.Latency = time.Since(t0)
				a.Result, a.Error = store.AttemptNetwork, errorClass(derr)
				if errors.Is(derr, ErrRefused) {
					a.Result = store.AttemptRefused
				}
			} else {
				// Read (a little of) the answer so the connection can be
				// reused; its body is never kept.
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
				_ = resp.Body.Close()
				a.Latency = time.Since(t0)
				a.StatusCode = resp.StatusCode
				if resp.StatusCode >= 200 && resp.StatusCode < 300 {
					a.Result = store.AttemptOK
				} else {
					a.Result, a.Error = store.AttemptHTTP, ErrClassHTTPStatus
					gone = resp.StatusCode == http.StatusGone
					retryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), start)
				}
			}
		}
	}
	o := store.WebhookOutcome{Attempt: a}
	if a.Result == store.AttemptOK {
		o.Delivered = true
		return o
	}
	o.NextAt = NextAttempt(start, d.Attempts+1, w.cfg.Jitter(), retryAfter)
	switch {
	case gone:
		o.Disable = "gone: the endpoint answered 410"
	case !ep.FailingSince.IsZero() && start.Sub(ep.FailingSince) >= DisableAfter:
		o.Disable = "failing: no successful delivery for 5 days"
	}
	if o.Disable != "" {
		if o.NextAt.IsZero() {
			o.NextAt = start.Add(Schedule[len(Schedule)-1])
		}
		row := Disabled(ep, o.Disable, start)
		o.Disabled = &row
	}
	return o
}

func (w *Worker) deliver(ctx context.Context, ep store.WebhookEndpoint, d store.WebhookDelivery) error {
	o := w.Attempt(ctx, ep, d)
	if ctx.Err() != nil {
		return nil // shutting down: the claim is taken back at the next start
	}
	w.m.attempts.WithLabelValues(o.Attempt.Result).Inc()
	return w.record(ctx, o)
}

// record queues an outcome; the first lane to find no flush under way
// writes the queue, and whatever others queue meanwhile, in one
// transaction per round (group commit), so that many small attempts cost
// few transactions. Its lane goroutine does not return before the queue
// is empty.
func (w *Worker) record(ctx context.Context, o store.WebhookOutcome) error {
	w.recMu.Lock()
	w.recQueue = append(w.recQueue, o)
	if w.recBusy {
		w.recMu.Unlock()
		return nil
	}
	w.recBusy = true
	var errs []error
	for len(w.recQueue) > 0 {
		batch := w.recQueue
		w.recQueue = nil
		w.recMu.Unlock()
		disabled, err := w.cfg.Store.RecordWebhookAttempts(context.WithoutCancel(ctx), batch)
		if err != nil {
			// Not recorded: the deliveries come back when their claims do.
			errs = append(errs, err)
		} else {
			w.recorded(batch, disabled)
		}
		w.recMu.Lock()
	}
	w.recBusy = false
	w.recMu.Unlock()
	return errors.Join(errs...)
}

// recorded updates the cached endpoints after outcomes were written.
func (w *Worker) recorded(batch []store.WebhookOutcome, disabled []bool) {
	kick := false
	for i, o := range batch {
		id := o.Attempt.EndpointID
		if disabled[i] {
			w.m.disabled.Inc()
			w.cfg.Logger.Warn("webhook endpoint disabled", "endpoint", id, "reason", o.Disable)
		}
		w.mu.Lock()
		if e, ok := w.eps[id]; ok {
			switch {
			case o.Disable != "":
				e.DisabledAt = o.Attempt.At
				kick = true
			case o.Delivered:
				e.FailingSince = time.Time{}
			case e.FailingSince.IsZero():
				e.FailingSince = o.Attempt.At
			}
			w.eps[id] = e
		}
		w.mu.Unlock()
	}
	if kick {
		w.Kick()
	}
}
