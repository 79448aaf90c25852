// Package httpapi is crewcast's HTTP interface: the JSON API under /v1,
// server-sent event streams, provider webhooks, health, metrics, debug
// endpoints and the OpenAPI document. It turns requests into calls on a
// Service (the delivery tracker) and reads report projections straight
// from the store.
//
// Every route is listed once in the route table (routes.go), which both
// registers the handlers and lets a test compare them with
// docs/openapi.yaml. Errors become HTTP responses in one place
// (publicError): validation, not-found, state and idempotency errors are
// shown to the client; everything else is logged and answered with a
// generic 503, so internal error text never leaks.
//
// Webhooks follow docs/design.md §5: the body is read with a 1 MiB limit,
// verified by the provider before it is parsed, made durable through
// Service.Ingest, and only then answered with 2xx.
//
// Concurrency: the handler is safe for concurrent use. Event streams
// subscribe to the Service's hub before replaying the journal and skip
// what the replay already sent, so a client sees every event once, in
// journal order, with no gap.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/metrics"
	"github.com/crewcast/crewcast/password"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
	"github.com/crewcast/crewcast/webhookout"
)

// Service is what the API asks of the delivery tracker (*tracker.Tracker
// implements it). Errors: tracker.ErrNotFound and group.ErrNoRecipient
// (404), *tracker.ValidationError (400), tracker.ErrIdempotencyMismatch
// (422), group.ErrState (409); anything else is answered with 503.
type Service interface {
	// Create starts a group message; created is false when an earlier
	// request with the same idempotency key and body already made it.
	Create(ctx context.Context, req group.Request, opts tracker.CreateOptions) (id string, created bool, err error)
	// Cancel cancels every recipient not yet claimed.
	Cancel(ctx context.Context, id, by string) error
	// Resolve records an operator's verdict on an unconfirmed recipient;
	// outcome is group.ResolveDelivered or group.ResolveNotDelivered.
	Resolve(ctx context.Context, id, number, outcome, by string) error
	// Retry asks for a new attempt for a failed recipient.
	Retry(ctx context.Context, id, number, by string) error
	// Resume restarts a paused group.
	Resume(ctx context.Context, id, by string) error
	// Ingest makes one verified webhook's events durable in the inbox (all
	// events share events[0].EventID) and returns whether it was new. Only
	// after it returns nil may the handler answer 2xx.
	Ingest(ctx context.Context, events []crewcast.Event) (isNew bool, err error)
	// Hub is where committed changes are published for live streams.
	Hub() *tracker.Hub
}

// Suppressor is implemented by a Service that must see every suppression
// added through the API (tracker.Tracker: it orders sends in flight
// against the commit). Without it, suppressions go to the Store directly.
// The audit entries commit with the suppression (store.Suppressions).
type Suppressor interface {
	AddSuppression(ctx context.Context, s store.Suppression, audit ...store.AuditEntry) error
}

// Store is what the API reads and writes directly (the tracker, Service,
// makes every change to a group): the journal and snapshots a group view
// is rebuilt from, the projections behind the reports, and the records the
// API manages itself (keys, users and sessions, the audit trail,
// suppressions, webhook endpoints, contacts, crews and templates, consent,
// senders, leases for /debug/cluster), and the engine's health. Every
// engine's store.Store is one; inbox, routes, reminders, retention,
// erasure and the server's keys are not the API's.
type Store interface {
	actor.Journal
	actor.SnapshotStore
	store.Projections
	store.Suppressions
	store.Keys
	store.Leases
	store.Users
	store.Sessions
	store.Audit
	store.Webhooks
	store.Directory
	store.Consents
	store.Senders
	store.EmailOptOuts
	Engine() string
	MigrationVersion(ctx context.Context) (int64, error)
	Ping(ctx context.Context) error
}

var _ Store = store.Store(nil)

// Config configures New. Zero fields take the defaults stated on each.
type Config struct {
	// Store serves reports, keys, suppressions and the journal. Required.
	Store Store
	// Service is the delivery tracker. Required.
	Service Service
	// Providers are the webhook verifiers by name ("telnyx", "twilio"); a
	// webhook for a provider not listed is answered 404.
	Providers map[string]crewcast.Provider
	// SendingProvider names the provider messages are sent through
	// ("demo", "telnyx", "twilio"), reported by GET /v1/version.
	SendingProvider string
	// PolicyDefaults are the server's default quiet hours and time zone
	// (what new groups get), reported by GET /v1/version.
	PolicyDefaults group.PolicyDefaults
	// PublicURL is the origin providers post to (e.g.
	// "https://crewcast.example.com"), used to rebuild the URL Twilio
	// signed when crewcast runs behind a proxy, to mark session cookies
	// Secure, and as a trusted origin for cookie-authenticated requests.
	// Default: derived from each request.
	PublicURL string
	// AnswerKey signs and verifies the answer links of email steps
	// (answerlink.go); empty: /a/{token} answers 404.
	AnswerKey []byte
	// VoiceKey signs the callback URLs of ladders' calls
	// (tracker.VoiceCallbackToken); Telnyx callbacks need it.
	VoiceKey []byte
	// Logger receives request failures (never keys, numbers or bodies).
	// Default: discard.
	Logger *slog.Logger
	// Now is the clock for sessions and key last-use times. Default time.Now.
	Now func() time.Time
	// Metrics receives HTTP metrics and serves /metrics. Default: a
	// private registry.
	Metrics *metrics.Registry
	// DebugActors and DebugDeadLetters return JSON-encodable runtime
	// snapshots for /debug/actors and /debug/deadletters (admin only);
	// nil answers 404.
	DebugActors, DebugDeadLetters func() any
	// Privacy serves /v1/retention and /v1/erasure (privacy.go); nil
	// answers 404 there.
	Privacy Privacy
	// Node and AdvertiseURL name this node in GET /debug/cluster (several
	// nodes on one PostgreSQL, docs/design.md §9).
	Node, AdvertiseURL string
	// Router, when set (several nodes), sends each group command to the
	// node that owns the group; ClusterSecret authenticates the forwarded
	// request (CREWCAST_CLUSTER_SECRET). Without a secret, a command for a
	// group owned elsewhere is answered 503 with Retry-After.
	Router        GroupRouter
	ClusterSecret string
	// ClusterNodes, when set, lists the members (nodes table, as of this
	// node's last heartbeat) for GET /debug/cluster.
	ClusterNodes func() []store.Node
	// SenderHealth reports each sender's health and volume in GET
	// /v1/senders; nil reports every sender healthy with nothing sent.
	SenderHealth SenderHealth
	// ProviderStates answers GET /v1/providers (providers.go); nil: every
	// provider unconfigured with a closed circuit.
	ProviderStates ProviderStates
	// AllowUnregistered lets groups send from 10DLC and toll-free senders
	// whose registration is not approved (--allow-unregistered).
	AllowUnregistered bool
	// SendersChanged, when set, is called after a sender was added,
	// changed or removed (the sending side reloads them).
	SendersChanged func(ctx context.Context)
	// Board is the web board, mounted at "/"; nil answers 404 there.
	Board http.Handler
	// Done, when closed, ends every open event stream (close it before
	// http.Server.Shutdown, which waits for handlers to return).
	Done <-chan struct{}
	// Heartbeat is the interval of SSE keep-alive comments. Default 15 s.
	Heartbeat time.Duration
	// StreamWriteTimeout bounds each write to an event stream and each
	// page of a CSV export, which replace the server's WriteTimeout with
	// these per-write deadlines, so a stuck client is cut off while a slow
	// but steady one is not. Default 30 s.
	StreamWriteTimeout time.Duration
	// StreamRecheck is how often an open event stream checks again that
	// its key or session still allows it (not revoked, expired, disabled,
	// signed out or lowered below the stream's scope); a stream that lost
	// its access ends. Default 2 s.
	StreamRecheck time.Duration
	// StreamMaxLifetime ends an event stream after this long (less up to a
	// tenth, so streams opened together do not all reconnect together),
	// with a retry hint: the client reconnects with Last-Event-ID, loses
	// nothing and is authenticated again. Default 15 min.
	StreamMaxLifetime time.Duration
	// MaxStreams caps open event streams in all; one more is answered 503
	// with Retry-After. Default 1000.
	MaxStreams int
	// MaxStreamsPerKey caps the event streams of one API key (a board's
	// sessions share their key's); one more is answered 429 with
	// Retry-After. Default 100.
	MaxStreamsPerKey int
	// SessionTTL is how long a board session lasts at most. Default 12 h.
	SessionTTL time.Duration
	// SessionIdle ends a board session unused for this long. Default 1 h.
	SessionIdle time.Duration
	// Throttle slows repeated failed sign-ins (per account and client,
	// and per client) and repeated bad API keys (per client).
	Throttle ThrottleConfig
	// TrustedProxies are the proxies whose X-Forwarded-For or Forwarded
	// header names the client (clientaddr.go). Default none: the client is
	// the TCP peer.
	TrustedProxies []netip.Prefix
	// PasswordParams are argon2id's costs for users' passwords. Default
	// password.DefaultParams; tests lower them.
	PasswordParams password.Params
	// MinMigrationVersion is the schema version /readyz requires. Default 1.
	MinMigrationVersion int64
	// MaxBodyBytes limits API request bodies. Default 2 MiB (a
	// 10,000-recipient group fits).
	MaxBodyBytes int64
	// SegmentPrice is the price of one SMS segment as a decimal
	// ("0.0079", see ParseSegmentPrice); the preview's cost is
	// segments_total times it. Empty: the preview has no cost.
	SegmentPrice string
	// MaxCreateBodyBytes limits POST /v1/groups bodies. Default 8 MiB:
	// 100,000 named recipients (docs/design.md §11) fit.
	MaxCreateBodyBytes int64
	// MaxImportBytes limits POST /v1/contacts/import bodies. Default 32
	// MiB: a 50,000-row file with several fields fits.
	MaxImportBytes int64
	// MaxWebhookBytes limits webhook bodies. Default 1 MiB.
	MaxWebhookBytes int64
	// KeyTouchInterval throttles writes of a key's last use. Default 1 min.
	KeyTouchInterval time.Duration
	// WebhookWorker, when set, is told about endpoint changes (docs/design.md §13).
	WebhookWorker *webhookout.Worker
	// WebhookSealer seals endpoint secrets (nil: stored in clear).
	WebhookSealer *webhookout.Sealer
	// WebhookAllowPrivate accepts endpoint URLs with private addresses.
	WebhookAllowPrivate bool
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Metrics == nil {
		c.Metrics = metrics.New()
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.StreamWriteTimeout <= 0 {
		c.StreamWriteTimeout = 30 * time.Second
	}
	if c.StreamRecheck <= 0 {
		c.StreamRecheck = 2 * time.Second
	}
	if c.StreamMaxLifetime <= 0 {
		c.StreamMaxLifetime = 15 * time.Minute
	}
	if c.MaxStreams <= 0 {
		c.MaxStreams = 1000
	}
	if c.MaxStreamsPerKey <= 0 {
		c.MaxStreamsPerKey = 100
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = 12 * time.Hour
	}
	if c.SessionIdle <= 0 {
		c.SessionIdle = time.Hour
	}
	if c.MinMigrationVersion <= 0 {
		c.MinMigrationVersion = 1
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 2 << 20
	}
	if c.MaxCreateBodyBytes <= 0 {
		c.MaxCreateBodyBytes = 8 << 20
	}
	if c.MaxImportBytes <= 0 {
		c.MaxImportBytes = 32 << 20
	}
	if c.MaxWebhookBytes <= 0 {
		c.MaxWebhookBytes = 1 << 20
	}
	return c
}

func (c Config) validate() error {
	if c.Store == nil {
		return errors.New("httpapi: Config.Store is required")
	}
	if c.Service == nil {
		return errors.New("httpapi: Config.Service is required")
	}
	if c.SegmentPrice != "" {
		if _, err := ParseSegmentPrice(c.SegmentPrice); err != nil {
			return fmt.Errorf("httpapi: Config.SegmentPrice: %w", err)
		}
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("httpapi: Config.PublicURL %q is not an absolute http(s) URL", c.PublicURL)
		}
	}
	for name, p := range c.Providers {
		if p == nil {
			return fmt.Errorf("httpapi: provider %q is nil", name)
		}
	}
	return nil
}

// api is the handler state shared by all routes.
type api struct {
	cfg       Config
	store     Store
	svc       Service
	log       *slog.Logger
	now       func() time.Time
	metrics   *metrics.Registry
	auth      *apikey.Authenticator
	sessions  *sessions
	throttle  *throttle        // sign-in attempts
	hasher    *password.Hasher // users' passwords
	streams   *streamCaps
	feed      *feed // the all-groups streams' shared journal reader
	csrf      *http.CrossOriginProtection
	publicURL string // without trailing slash
	done      <-chan struct{}
	mux       *http.ServeMux
	// metricsHTTP serves /metrics.
	metricsHTTP http.Handler
}

// New validates cfg and returns the HTTP handler of the whole API.
func New(cfg Config) (http.Handler, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	a := &api{
		cfg:       cfg,
		store:     cfg.Store,
		svc:       cfg.Service,
		log:       cfg.Logger,
		now:       cfg.Now,
		metrics:   cfg.Metrics,
		auth:      apikey.NewAuthenticator(cfg.Store, cfg.Now, cfg.KeyTouchInterval),
		sessions:  newSessions(cfg.Store, cfg.Now, cfg.SessionTTL),
		streams:   newStreamCaps(cfg.MaxStreams, cfg.MaxStreamsPerKey),
		feed:      newFeed(cfg.Service.Hub(), cfg.Store, cfg.Logger),
		csrf:      http.NewCrossOriginProtection(),
		publicURL: strings.TrimRight(cfg.PublicURL, "/"),
		done:      cfg.Done,
		mux:       http.NewServeMux(),
	}
	a.sessions.idle = cfg.SessionIdle
	a.sessions.touchFailed = func(ctx context.Context, err error) {
		a.log.WarnContext(ctx, "recording session use failed", "err", err.Error())
	}
	a.throttle = newThrottle(cfg.Throttle)
	a.hasher = password.NewHasher(cfg.PasswordParams, 2)
	a.metricsHTTP = a.metrics.Handler()
	if a.done == nil {
		a.done = make(chan struct{}) // never closed: streams end with their clients
	}
	if a.publicURL != "" {
		u, _ := url.Parse(a.publicURL) // validated above
		if err := a.csrf.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("httpapi: trusted origin: %w", err)
		}
	}
	if err := a.register(); err != nil {
		return nil, err
	}
	a.log = slog.New(LogHandler(a.log.Handler())) // request ids (WithRequestID) into logs
	return a.mux, nil
}

// setNosniff marks an answer X-Content-Type-Options: nosniff, so that no
// browser reads an answer holding a message text or a name as a page or a
// script. Every handler on the mux sets it (wrapAs for the route table,
// its 404s and 405s; the board sets its own).
func setNosniff(w http.ResponseWriter) { w.Header().Set("X-Content-Type-Options", "nosniff") }

// register mounts the route table, JSON 405s for known paths with other
// methods, JSON 404s under the API prefixes, and the board at "/".
func (a *api) register() error {
	allow := map[string][]string{}
	var order []string
	for _, rt := range routeTable {
		a.mux.Handle(rt.Method+" "+rt.Pattern, a.wrap(rt))
		if _, ok := allow[rt.Pattern]; !ok {
			order = append(order, rt.Pattern)
		}
		allow[rt.Pattern] = append(allow[rt.Pattern], rt.Method)
		if rt.Method == http.MethodGet {
			allow[rt.Pattern] = append(allow[rt.Pattern], http.MethodHead)
		}
	}
	for _, p := range order {
		methods := strings.Join(allow[p], ", ")
		h := a.wrap(route{Pattern: p, Access: public, Handler: func(a *api, w http.ResponseWriter, r *http.Request) error {
			e := newError(http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed here; allowed: "+methods)
			e.Header = http.Header{"Allow": {methods}}
			return e
		}})
		if !literalBesideWildcard[p] {
			a.mux.Handle(p, h)
			continue
		}
		// A method-less pattern here would conflict with the wildcard
		// sibling's method patterns: list the other methods one by one.
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if !slices.Contains(allow[p], m) {
				a.mux.Handle(m+" "+p, h)
			}
		}
	}
	if a.cfg.Router != nil {
		a.mux.HandleFunc("POST "+ClusterErasurePath, func(w http.ResponseWriter, r *http.Request) {
			setNosniff(w)
			a.clusterErase(w, r)
		})
	}
	notFoundRoute := route{Access: public, Handler: func(*api, http.ResponseWriter, *http.Request) error {
		return newError(http.StatusNotFound, codeNotFound, "no such endpoint")
	}}
	for _, prefix := range []string{"/v1/", "/webhooks/", "/debug/"} {
		nf := notFoundRoute
		nf.Pattern = prefix
		a.mux.Handle(prefix, a.wrapAs(nf, unmatchedRoute))
	}
	if a.cfg.Board != nil {
		a.mux.Handle("/", a.cfg.Board)
	} else {
		nf := notFoundRoute
		nf.Pattern = "/"
		a.mux.Handle("/", a.wrapAs(nf, unmatchedRoute))
	}
	return nil
}

// statusWriter remembers the response status for metrics and whether a
// response has started (after which errors cannot be answered).
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush,
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush sends buffered data to the client.
func (w *statusWriter) Flush() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// unmatchedRoute is the metric label of requests that match no route, so
// random paths cannot create metric series.
const unmatchedRoute = "unmatched"

// wrap applies authentication, the route's handler, error mapping and the
// request-duration metric, labelled with the route's pattern.
func (a *api) wrap(rt route) http.Handler { return a.wrapAs(rt, rt.Pattern) }

// wrapAs is wrap with the metric label given: a route-table pattern or
// unmatchedRoute, never anything taken from the request.
func (a *api) wrapAs(rt route, label string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		setNosniff(w)
		sw := &statusWriter{ResponseWriter: w}
		r, err := a.authorize(r, rt)
		if err == nil && a.cfg.Router != nil && isGroupCommand(rt) {
			var done bool
			if done, err = a.forwardToOwner(sw, r); done && err == nil {
				a.metrics.ObserveRequest(label, r.Method, sw.status, time.Since(start))
				return
			}
		}
		if err == nil {
			err = rt.Handler(a, sw, r)
		}
		if err != nil {
			a.writeError(sw, r, rt.Pattern, err)
		}
		status := sw.status
		if !sw.wrote {
			status = http.StatusOK
		}
		a.metrics.ObserveRequest(label, r.Method, status, time.Since(start))
	})
}
