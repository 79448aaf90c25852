// Package metrics exports crewcast's counters to Prometheus. One Registry
// holds every metric on its own prometheus.Registry (never the global
// default, so tests and several servers in one process do not collide) and
// implements the observer interfaces of the actor runtime (actor.Metrics,
// via Runtime) and of the delivery tracker (tracker.Metrics, via Service),
// plus the HTTP layer's own counters.
//
// Every method is safe for concurrent use and cheap: label values are
// bounded sets (actor kinds, providers, statuses, route patterns), never
// per-group, per-number or per-key values.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/tracker"
)

const namespace = "crewcast"

// Registry is every crewcast metric on one private prometheus.Registry.
type Registry struct {
	reg *prometheus.Registry

	// actor runtime
	activations   *prometheus.CounterVec
	passivations  *prometheus.CounterVec
	stops         *prometheus.CounterVec
	restarts      *prometheus.CounterVec
	active        *prometheus.GaugeVec
	messages      *prometheus.CounterVec
	mailboxDepth  *prometheus.HistogramVec
	deadLetters   *prometheus.CounterVec
	timersFired   prometheus.Counter
	timerPanics   prometheus.Counter
	timersPending prometheus.Gauge
	commitUnits   prometheus.Histogram
	commitLatency prometheus.Histogram
	commitErrors  prometheus.Counter
	storeErrors   *prometheus.CounterVec

	// tracker
	ingested        *prometheus.CounterVec
	sends           *prometheus.CounterVec
	transitions     *prometheus.CounterVec
	timeToDelivered prometheus.Histogram
	parkedExpired   *prometheus.CounterVec
	providerUp      *prometheus.GaugeVec

	// HTTP
	webhooks      *prometheus.CounterVec
	sigFailures   *prometheus.CounterVec
	sseClients    prometheus.Gauge
	sseResyncs    prometheus.Counter
	reqDuration   *prometheus.HistogramVec
	authFailures  *prometheus.CounterVec
	touchFailures prometheus.Counter
	leaseLost     *prometheus.CounterVec

	runtime *Runtime
	service *Service
}

// New returns a Registry with every crewcast metric plus the Go runtime and
// process collectors registered.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	f := factory{r.reg}

	r.activations = f.counterVec("actor_activations_total", "Actors that came into memory (spawned or activated).", "kind")
	r.passivations = f.counterVec("actor_passivations_total", "Virtual actors that left memory after passivating.", "kind")
	r.stops = f.counterVec("actor_stops_total", "Actors that stopped for a reason other than passivation.", "kind")
	r.restarts = f.counterVec("actor_restarts_total", "Supervisor restarts.", "kind")
	r.active = f.gaugeVec("actors_active", "Actors currently in memory.", "kind")
	r.messages = f.counterVec("actor_messages_processed_total", "Messages handled by actors.", "kind")
	r.mailboxDepth = f.histogramVec("actor_mailbox_depth", "Mailbox length sampled at the start of each batch.",
		[]float64{0, 1, 2, 5, 10, 50, 100, 500, 1000, 5000}, "kind")
	r.deadLetters = f.counterVec("actor_dead_letters_total", "Messages that could not be delivered.", "reason")
	// Exported at 0 from the start (alerts and dashboards need the
	// series before the first dead letter).
	for _, reason := range []string{actor.ReasonMailboxFull, actor.ReasonStopped, actor.ReasonActivationFailed} {
		r.deadLetters.WithLabelValues(reason)
	}
	r.timersFired = f.counter("actor_timers_fired_total", "Scheduler callbacks that ran.")
	r.timerPanics = f.counter("actor_timer_panics_total", "Scheduler callbacks that panicked (recovered).")
	r.timersPending = f.gauge("actor_timers_pending", "Timers waiting in the scheduler.")
	r.commitUnits = f.histogram("store_commit_batch_units", "Units (actors' changes) per store commit.",
		[]float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512})
	r.commitLatency = f.histogram("store_commit_duration_seconds", "Duration of store commits.",
		[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5})
	r.commitErrors = f.counter("store_commit_errors_total", "Store commits that failed as a whole.")
	r.storeErrors = f.counterVec("store_errors_total", "Store calls that failed outside a commit.", "op")

	r.ingested = f.counterVec("webhook_events_ingested_total", "Webhooks made durable (new), recognised as duplicates of stored ones (duplicate) or, their inbox row purged, as replays of processed ones (replay), or failing (error).", "provider", "result")
	r.sends = f.counterVec("sends_total", "Provider sends by result and error class.", "provider", "result", "class")
	r.transitions = f.counterVec("recipient_transitions_total", "Recipients moving into a status.", "status")
	r.timeToDelivered = f.histogram("time_to_delivered_seconds", "Time from provider acceptance to delivery receipt.",
		[]float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600})
	r.providerUp = f.gaugeVec("provider_up", "1 while the provider's circuit is not open (docs/design.md §16), 0 while it is; one series per configured provider.", "provider")
	r.parkedExpired = f.counterVec("webhooks_parked_expired_total", "Receipts for message ids with no route, acknowledged as expired after the parked TTL.", "provider")

	r.webhooks = f.counterVec("webhooks_received_total", "Webhook requests by provider, event kind and result.", "provider", "type", "result")
	r.sigFailures = f.counterVec("webhook_signature_failures_total", "Webhook requests whose signature did not verify.", "provider")
	r.sseClients = f.gauge("sse_clients", "Open server-sent event streams.")
	r.sseResyncs = f.counter("sse_resyncs_total", "Event streams that fell behind the live hub and re-read the journal.")
	r.reqDuration = f.histogramVec("http_request_duration_seconds", "HTTP request duration by route pattern.",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2, 5}, "route", "method", "code")
	r.authFailures = f.counterVec("http_auth_failures_total", "Requests refused for authentication or authorization.", "reason")
	r.touchFailures = f.counter("apikey_touch_failures_total", "Failed best-effort writes of an API key's last use.")
	// Cluster mode only, but exported at 0 on every node so that the
	// lease-loss alert and panel have a series from the start.
	r.leaseLost = f.counterVec("cluster_lease_lost_total", "Shard leases this node stopped holding other than by hand-off: taken_over (a renewal found it gone) or fenced (renewal overdue, the node fenced itself).", "reason")
	for _, reason := range []string{tracker.LeaseLostTakenOver, tracker.LeaseLostFenced} {
		r.leaseLost.WithLabelValues(reason)
	}

	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.runtime = &Runtime{r: r}
	r.service = &Service{r: r}
	return r
}

// factory registers metrics with the crewcast namespace.
type factory struct{ reg *prometheus.Registry }

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	// ContinueOnError: one failing collector (the recipients summary when
	// the store is down) must not hide every other metric.
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg, ErrorHandling: promhttp.ContinueOnError})
}

// Registerer lets other parts add their own collectors to this registry.
func (r *Registry) Registerer() prometheus.Registerer { return r.reg }

// Gatherer exposes the registry for tests and custom exporters.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Runtime returns the actor.Metrics view of the registry.
func (r *Registry) Runtime() *Runtime { return r.runtime }

// Service returns the tracker.Metrics view of the registry.
func (r *Registry) Service() *Service { return r.service }

// ---- HTTP-side counters ----

// WebhookReceived counts one webhook request. kind is the event kind it
// carried ("sent", "status", "inbound", or "none"); result is what the
// handler answered ("new", "duplicate", "ignored", "bad_signature",
// "malformed", "too_large", "error").
func (r *Registry) WebhookReceived(provider, kind, result string) {
	r.webhooks.WithLabelValues(provider, kind, result).Inc()
}

// SignatureFailure counts a webhook whose signature did not verify.
func (r *Registry) SignatureFailure(provider string) { r.sigFailures.WithLabelValues(provider).Inc() }

// SSEClientOpened counts an event stream that started.
func (r *Registry) SSEClientOpened() { r.sseClients.Inc() }

// SSEClientClosed counts an event stream that ended.
func (r *Registry) SSEClientClosed() { r.sseClients.Dec() }

// SSEResync counts a stream that fell behind the live hub (or saw a gap)
// and caught up from the journal.
func (r *Registry) SSEResync() { r.sseResyncs.Inc() }

// ObserveRequest records one HTTP request's duration under its route
// pattern (never the raw path, which carries ids and numbers). The caller
// must pass a bounded set of routes; methods outside the standard ones
// are recorded as "other", and codes outside 100–599 as "other", so a
// client cannot create series at will.
func (r *Registry) ObserveRequest(route, method string, code int, d time.Duration) {
	r.reqDuration.WithLabelValues(route, MethodLabel(method), codeLabel(code)).Observe(d.Seconds())
}

// MethodLabel maps an HTTP method to a metric label: the standard methods
// as they are, anything else (methods are arbitrary tokens) "other".
func MethodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// AuthFailure counts a refused request: reason is "unauthenticated",
// "forbidden" or "cross_origin".
func (r *Registry) AuthFailure(reason string) { r.authFailures.WithLabelValues(reason).Inc() }

// KeyTouchFailed counts a failed best-effort write of a key's last use.
func (r *Registry) KeyTouchFailed() { r.touchFailures.Inc() }

// ---- recipients by status ----

// WatchRecipients registers a gauge family crewcast_recipients{status}
// computed by count (store.CountByStatus: one aggregate over the
// deliveries, never the per-row reads of a full summary). A scrape reuses
// the last figures when they are younger than ttl (at least 1 s), so
// frequent scrapes cost at most one count per ttl. A failed count is
// reported as a scrape error for this family only.
func (r *Registry) WatchRecipients(count func(context.Context) (map[crewcast.Status]int, error), ttl time.Duration, now func() time.Time) error {
	if ttl < time.Second {
		ttl = time.Second
	}
	if now == nil {
		now = time.Now
	}
	return r.reg.Register(&recipientsCollector{
		count: count, ttl: ttl, now: now,
		desc: prometheus.NewDesc(namespace+"_recipients", "Recipients of all groups by current status.", []string{"status"}, nil),
	})
}

type recipientsCollector struct {
	count func(context.Context) (map[crewcast.Status]int, error)
	ttl   time.Duration
	now   func() time.Time
	desc  *prometheus.Desc

	mu   sync.Mutex
	at   time.Time
	last map[crewcast.Status]int
}

func (c *recipientsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *recipientsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.at.IsZero() || now.Sub(c.at) >= c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		counts, err := c.count(ctx)
		cancel()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.desc, err)
			return
		}
		c.last, c.at = counts, now
	}
	for _, st := range crewcast.AllStatuses {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.last[st]), string(st))
	}
}

// ---- actor.Metrics ----

// Runtime implements actor.Metrics on a Registry.
type Runtime struct{ r *Registry }

var _ actor.Metrics = (*Runtime)(nil)

// ActorActivated counts an actor that came into memory.
func (m *Runtime) ActorActivated(kind string) {
	m.r.activations.WithLabelValues(kind).Inc()
	m.r.active.WithLabelValues(kind).Inc()
}

// ActorPassivated counts a virtual actor that left memory.
func (m *Runtime) ActorPassivated(kind string) {
	m.r.passivations.WithLabelValues(kind).Inc()
	m.r.active.WithLabelValues(kind).Dec()
}

// ActorStopped counts an actor that terminated otherwise.
func (m *Runtime) ActorStopped(kind string) {
	m.r.stops.WithLabelValues(kind).Inc()
	m.r.active.WithLabelValues(kind).Dec()
}

// ActorRestarted counts a supervisor restart (the actor stays in memory).
func (m *Runtime) ActorRestarted(kind string) { m.r.restarts.WithLabelValues(kind).Inc() }

// MessagesProcessed counts n messages handled in one batch.
func (m *Runtime) MessagesProcessed(kind string, n int) {
	m.r.messages.WithLabelValues(kind).Add(float64(n))
}

// MailboxDepth observes a mailbox length.
func (m *Runtime) MailboxDepth(kind string, depth int) {
	m.r.mailboxDepth.WithLabelValues(kind).Observe(float64(depth))
}

// DeadLetter counts an undeliverable message.
func (m *Runtime) DeadLetter(reason string) { m.r.deadLetters.WithLabelValues(reason).Inc() }

// TimerFired counts a scheduler callback that ran.
func (m *Runtime) TimerFired() { m.r.timersFired.Inc() }

// TimerPanicked counts a recovered scheduler callback panic.
func (m *Runtime) TimerPanicked() { m.r.timerPanics.Inc() }

// TimersPending sets the scheduler's heap size.
func (m *Runtime) TimersPending(n int) { m.r.timersPending.Set(float64(n)) }

// CommitBatch records one store commit's size, latency and failure.
func (m *Runtime) CommitBatch(units int, latency time.Duration, err error) {
	m.r.commitUnits.Observe(float64(units))
	m.r.commitLatency.Observe(latency.Seconds())
	if err != nil {
		m.r.commitErrors.Inc()
	}
}

// StoreError counts a failed store call outside a commit.
func (m *Runtime) StoreError(op string, _ error) { m.r.storeErrors.WithLabelValues(op).Inc() }

// ---- tracker.Metrics ----

// Service implements tracker.Metrics on a Registry.
type Service struct{ r *Registry }

var (
	_ tracker.Metrics         = (*Service)(nil)
	_ tracker.ParkedMetrics   = (*Service)(nil)
	_ tracker.LeaseMetrics    = (*Service)(nil)
	_ tracker.ProviderMetrics = (*Service)(nil)
)

// ProviderUp sets crewcast_provider_up for a provider: 0 while its circuit
// is open.
func (m *Service) ProviderUp(provider string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.r.providerUp.WithLabelValues(provider).Set(v)
}

// LeaseLost counts shard leases lost (tracker.LeaseLost* reasons).
func (m *Service) LeaseLost(reason string, shards int) {
	m.r.leaseLost.WithLabelValues(reason).Add(float64(shards))
}

// ParkedExpired counts a parked receipt acknowledged as expired.
func (m *Service) ParkedExpired(provider string) {
	m.r.parkedExpired.WithLabelValues(provider).Inc()
}

// WebhookIngested counts a webhook made durable, replayed or failing.
func (m *Service) WebhookIngested(provider, result string) {
	m.r.ingested.WithLabelValues(provider, result).Inc()
}

// SendOutcome counts one provider send.
func (m *Service) SendOutcome(provider, result string, class crewcast.ErrorClass) {
	m.r.sends.WithLabelValues(provider, result, string(class)).Inc()
}

// StatusChanged counts a recipient moving into a status.
func (m *Service) StatusChanged(to crewcast.Status) {
	m.r.transitions.WithLabelValues(string(to)).Inc()
}

// TimeToDelivered observes acceptance-to-delivery time.
func (m *Service) TimeToDelivered(d time.Duration) { m.r.timeToDelivered.Observe(d.Seconds()) }
