// Package server assembles crewcast: the store (SQLite or PostgreSQL), the
// provider (Telnyx, Twilio, or the in-process demo simulator), the group
// tracker, the HTTP API with its webhook endpoints, and the web board — with
// one lifecycle (Start, Stop). Tests boot it on 127.0.0.1:0.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/httpapi"
	"github.com/crewcast/crewcast/metrics"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
	"github.com/crewcast/crewcast/store/sqlite"
	"github.com/crewcast/crewcast/tracker"
	"github.com/crewcast/crewcast/web"
	"github.com/crewcast/crewcast/webhookout"
)

// Providers crewcast can send through.
const (
	ProviderDemo   = "demo"
	ProviderTelnyx = "telnyx"
	ProviderTwilio = "twilio"
)

// Config is the server's configuration (docs/design.md §10 names the flags and
// environment variables that fill it). Zero fields take the stated defaults.
type Config struct {
	// Addr is the listen address. Default "127.0.0.1:8080".
	Addr string
	// DB is a SQLite path or a postgres:// URL. Default "./crewcast.db".
	DB string
	// DBSchema, for PostgreSQL, is the schema to use (tests isolate with it).
	DBSchema string
	// Cluster makes this server one of several nodes on one PostgreSQL
	// (cluster.go); its zero value is a single node.
	Cluster ClusterConfig
	// Provider is demo, telnyx or twilio. Default demo.
	Provider string
	// PublicURL is the origin providers post webhooks to, when crewcast is
	// behind a proxy (Twilio signs the URL it posted to). Default: the
	// listen address.
	PublicURL string
	// SMTPURL (CREWCAST_SMTP_URL) and EmailFrom (CREWCAST_EMAIL_FROM)
	// send the email steps of follow-up ladders (mailer.go); empty: none.
	SMTPURL   string
	EmailFrom string

	TelnyxAPIKey             string
	TelnyxPublicKey          string // base64, 32 bytes
	TelnyxAPIBase            string // default https://api.telnyx.com
	TelnyxMessagingProfileID string
	// TelnyxTeXMLConnectionID is the TeXML application connection a
	// ladder's voice calls go through; "" means no voice steps on Telnyx.
	TelnyxTeXMLConnectionID string
	// TelnyxIdempotencyKeys sends claim keys as Idempotency-Key (only the
	// simulator honours them).
	TelnyxIdempotencyKeys bool

	TwilioAccountSID string
	TwilioAuthToken  string
	TwilioAPIBase    string // default https://api.twilio.com

	// AdminKey, when set, is registered as an admin API key at start, so a
	// fresh server can be driven by scripts. It must be estimated at
	// apikey.MinAdminKeyBits (128) bits or more, or New refuses it.
	AdminKey string
	// TrustedProxies are the proxies (--trusted-proxies) whose
	// X-Forwarded-For or Forwarded header names the client, for sign-in
	// throttling and the audit trail. Default none: the TCP peer.
	TrustedProxies []netip.Prefix
	// SegmentPrice is the price of one SMS segment, a decimal ("0.0079");
	// the preview's cost uses it. Empty: no cost in the preview.
	SegmentPrice string
	// SendRate is messages per second per sender number; 0 = no pacing.
	SendRate float64
	// SendRates overrides SendRate per sender number (E.164).
	SendRates map[string]float64
	// SendWorkers bounds concurrent provider calls (tracker default 64).
	SendWorkers int
	// QuietHours is the default quiet hours of new groups ("21:00-07:00";
	// "" or "off": none), read in each recipient's zone (docs/design.md §12).
	QuietHours string
	// OptOutReply is what crewcast sends on an opt-out ("provider": the
	// provider's own confirmation, crewcast sends nothing; "off"; or a
	// text) and HelpReply the text sent on HELP/INFO ("": none); see
	// tracker.Config.
	OptOutReply, HelpReply string
	// DefaultTimezone is the IANA zone of recipients without one (UTC).
	DefaultTimezone string
	// Settings are the policies of new groups (group.DefaultSettings).
	Settings group.Settings
	// Retention is the data retention policy (tracker.DefaultRetention),
	// applied every RetentionInterval (default 1h; negative: never).
	Retention         tracker.RetentionPolicy
	RetentionInterval time.Duration
	// DemoFaults configure the demo simulator (default sim.DemoFaults).
	DemoFaults *sim.Faults
	// DemoSeed makes the demo simulator deterministic.
	DemoSeed *int64
	// ProviderTimeout bounds one provider API call; a call that times out
	// is an uncertain send (unconfirmed). Default 30s.
	ProviderTimeout time.Duration

	// Logger receives structured logs. Default: discard.
	Logger *slog.Logger
	// Clock drives the tracker (tests inject a manual clock). Default real.
	Clock actor.Clock
	// IdleTimeout passivates idle groups (tracker default).
	IdleTimeout time.Duration
	// SweepInterval re-routes unprocessed webhooks (tracker default).
	SweepInterval time.Duration
	// ParkedTTL expires receipts for unknown message ids (tracker default).
	ParkedTTL time.Duration
	// Heartbeat is the SSE keep-alive interval (httpapi default).
	Heartbeat time.Duration
	// StreamMaxLifetime ends each event stream after this long; the client
	// reconnects and is authenticated again (httpapi default, 15 min).
	StreamMaxLifetime time.Duration
	// WriteTimeout bounds the time to write one response, so a client that
	// never reads cannot hold a connection and its buffers for long; event
	// streams extend it write by write. Default 60 s.
	WriteTimeout time.Duration

	// AllowUnregistered lets groups send from 10DLC and toll-free senders
	// whose registration is not approved (docs/design.md §16).
	AllowUnregistered bool

	// WebhookAllowPrivate lets outbound webhooks reach loopback, private
	// and link-local addresses (tests, private deployments).
	WebhookAllowPrivate bool
	// WebhookSecretKey seals endpoint signing secrets in the database
	// (CREWCAST_WEBHOOK_SECRET_KEY); empty stores them in clear.
	WebhookSecretKey string
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8080"
	}
	if c.DB == "" {
		c.DB = "./crewcast.db"
	}
	if c.Provider == "" {
		c.Provider = ProviderDemo
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = actor.RealClock()
	}
	if c.ProviderTimeout <= 0 {
		c.ProviderTimeout = 30 * time.Second
	}
	if c.RetentionInterval == 0 {
		c.RetentionInterval = time.Hour
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	return c
}

func (c Config) validate() error {
	switch c.Provider {
	case ProviderDemo:
	case ProviderTelnyx:
		if c.TelnyxAPIKey == "" || c.TelnyxPublicKey == "" {
			return errors.New("provider telnyx needs CREWCAST_TELNYX_API_KEY and CREWCAST_TELNYX_PUBLIC_KEY")
		}
	case ProviderTwilio:
		if c.TwilioAccountSID == "" || c.TwilioAuthToken == "" {
			return errors.New("provider twilio needs CREWCAST_TWILIO_ACCOUNT_SID and CREWCAST_TWILIO_AUTH_TOKEN")
		}
	default:
		return fmt.Errorf("unknown provider %q (demo, telnyx or twilio)", c.Provider)
	}
	if c.Provider != ProviderDemo {
		// A second provider is configured with both parts or none.
		if (c.TelnyxAPIKey != "") != (c.TelnyxPublicKey != "") {
			return errors.New("telnyx needs both CREWCAST_TELNYX_API_KEY and CREWCAST_TELNYX_PUBLIC_KEY")
		}
		if (c.TwilioAccountSID != "") != (c.TwilioAuthToken != "") {
			return errors.New("twilio needs both CREWCAST_TWILIO_ACCOUNT_SID and CREWCAST_TWILIO_AUTH_TOKEN")
		}
	}
	if c.SendRate < 0 {
		return fmt.Errorf("send rate must be ≥ 0, got %v", c.SendRate)
	}
	for n, r := range c.SendRates {
		if r < 0 {
			return fmt.Errorf("send rate for %s must be ≥ 0, got %v", n, r)
		}
	}
	if _, err := c.policyDefaults(); err != nil {
		return err
	}
	if c.AdminKey != "" {
		if err := apikey.CheckAdminKeyStrength(c.AdminKey); err != nil {
			return err
		}
	}
	return nil
}

// policyDefaults reads QuietHours and DefaultTimezone.
func (c Config) policyDefaults() (group.PolicyDefaults, error) {
	q, err := group.ParseQuietHours(c.QuietHours)
	if err != nil {
		return group.PolicyDefaults{}, fmt.Errorf("quiet hours: %w", err)
	}
	tz := c.DefaultTimezone
	if tz == "" {
		tz = "UTC"
	}
	if _, err := group.LoadZone(tz); err != nil {
		return group.PolicyDefaults{}, fmt.Errorf("default time zone: %w", err)
	}
	return group.PolicyDefaults{Quiet: q, Timezone: tz}, nil
}

// Server is a running crewcast.
type Server struct {
	cfg     Config
	ln      net.Listener
	url     string
	st      store.Store
	dbLock  *sqlite.ServeLock // a SQLite database's one-server hold (nil on PostgreSQL)
	sim     *sim.Sim
	client  *http.Client // provider API calls
	tr      *tracker.Tracker
	ret     *tracker.Retainer // retention passes: schedule, API, last report
	reg     *metrics.Registry
	http    *http.Server
	done    chan struct{} // ends event streams
	served  chan error
	wg      sync.WaitGroup
	stopped bool

	// retention is canceled by Stop, which ends a retention run in progress.
	retention     context.Context
	stopRetention context.CancelFunc

	// hooks delivers outbound webhooks until stopHooks; hooksDone closes
	// when it has returned.
	hooks     *webhookout.Worker
	stopHooks context.CancelFunc
	hooksDone chan struct{}
}

// New checks cfg; Start brings the server up.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, done: make(chan struct{}), served: make(chan error, 1)}
	s.retention, s.stopRetention = context.WithCancel(context.Background())
	return s, nil
}

// OpenStore opens the store a DB setting names: a postgres:// URL or a
// SQLite path. Opening applies pending migrations.
func OpenStore(ctx context.Context, db, schema string, now func() time.Time, log *slog.Logger) (store.Store, error) {
	if isPostgresURL(db) {
		return postgres.Open(ctx, postgres.Config{URL: db, Schema: schema, Now: now, Logger: log})
	}
	return sqlite.Open(ctx, sqlite.Config{Path: db, Now: now, Logger: log})
}

func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Start listens, opens the store, starts the provider, the tracker and the
// HTTP server. On error everything started is stopped again.
func (s *Server) Start(ctx context.Context) (err error) {
	cfg := s.cfg // startTracker sets cfg.Retention.HashKey on this copy
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.Stop(sctx)
		}
	}()
	public, err := s.listenAndOpen(ctx, &cfg)
	if err != nil {
		return err
	}
	prov, providers, err := s.provider(ctx, public)
	if err != nil {
		return err
	}
	sealer, err := s.startMetricsAndHooks(ctx, &cfg)
	if err != nil {
		return err
	}
	policy, err := cfg.policyDefaults()
	if err != nil {
		return err
	}
	keys, err := s.startTracker(ctx, &cfg, prov, providers, policy, public)
	if err != nil {
		return err
	}
	if err := s.serveHTTP(&cfg, providers, policy, sealer, keys); err != nil {
		return err
	}
	s.startBackground(&cfg)
	cfg.Logger.Info("crewcast listening", "url", s.url, "provider", cfg.Provider, "store", s.st.Engine())
	return nil
}

// listenAndOpen listens on cfg.Addr, takes the SQLite file's serve lock
// (one node), opens the store, and returns the public base URL.
func (s *Server) listenAndOpen(ctx context.Context, cfg *Config) (public string, err error) {
	s.ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	s.url = "http://" + s.ln.Addr().String()
	public = strings.TrimRight(cfg.PublicURL, "/")
	if public == "" {
		public = s.url
	}
	if !isPostgresURL(cfg.DB) {
		// SQLite means one node: a second server on the file refuses here.
		if s.dbLock, err = sqlite.LockServe(cfg.DB); err != nil {
			return "", err
		}
	}
	if cfg.Cluster.enabled() {
		s.st, err = s.openClusterStore(ctx)
	} else {
		s.st, err = OpenStore(ctx, cfg.DB, cfg.DBSchema, cfg.Clock.Now, cfg.Logger)
	}
	if err != nil {
		return "", fmt.Errorf("open store: %w", err)
	}
	return public, nil
}

// startMetricsAndHooks makes the metrics registry (with the store-backed
// collectors) and the outbound webhook worker, whose endpoints it loads;
// the worker runs from startBackground.
func (s *Server) startMetricsAndHooks(ctx context.Context, cfg *Config) (*webhookout.Sealer, error) {
	s.reg = metrics.New()
	// The recipients gauge is one GROUP BY per 15 s at most, however
	// often /metrics is scraped.
	if err := s.reg.WatchRecipients(s.st.CountByStatus, 15*time.Second, time.Now); err != nil {
		return nil, err
	}
	s.reg.Registerer().MustRegister(newOpsCollector(s.st, time.Now)) // inbox age, paused groups (opsmetrics.go)
	sealer, err := webhookout.NewSealer(cfg.WebhookSecretKey)
	if err != nil {
		return nil, err
	}
	if !sealer.Keyed() {
		cfg.Logger.Warn("webhook endpoint secrets are stored in clear; set " + webhookout.SecretKeyEnv + " to seal them")
	}
	s.hooks = webhookout.New(webhookout.Config{Store: s.st, Sealer: sealer, AllowPrivate: cfg.WebhookAllowPrivate,
		Logger: cfg.Logger, Registerer: s.reg.Registerer(), Now: cfg.Clock.Now})
	if err := s.hooks.Refresh(ctx); err != nil {
		return nil, fmt.Errorf("webhook endpoints: %w", err)
	}
	return sealer, nil
}

// startTracker reads the hash keys, sets up the mailer, and makes and
// starts the tracker and its retainer (and the cluster's lease keeper
// when clustered); then it makes sure of the bootstrap admin key. It
// returns the keys answer links and voice callbacks are signed with.
func (s *Server) startTracker(ctx context.Context, cfg *Config, prov crewcast.Provider, providers map[string]crewcast.Provider,
	policy group.PolicyDefaults, public string) (linkKeys, error) {
	var none linkKeys
	var pastKeys [][]byte
	var err error
	if cfg.Retention.HashKey, pastKeys, err = s.hashKey(ctx); err != nil {
		return none, err
	}
	mailer, answerKey, err := s.mailer(ctx, public)
	if err != nil {
		return none, err
	}
	callr, voiceKey, err := s.caller(ctx, providers, public)
	if err != nil {
		return none, err
	}
	s.tr, err = tracker.New(tracker.Config{
		Mailer:   mailer,
		Caller:   callr,
		Webhooks: s.hooks,
		Store:    s.st, Provider: prov, Providers: providers, Logger: cfg.Logger, Clock: cfg.Clock,
		Metrics: s.reg.Service(), RuntimeMetrics: s.reg.Runtime(),
		Settings: cfg.Settings, SendRate: cfg.SendRate, SendRates: cfg.SendRates, SendWorkers: cfg.SendWorkers,
		SendTimeout: cfg.ProviderTimeout, IdleTimeout: cfg.IdleTimeout, SweepInterval: cfg.SweepInterval,
		HashKey: cfg.Retention.HashKey, PastHashKeys: pastKeys,
		PolicyDefaults: policy, ResolveCrews: crewNumbers(s.st),
		ParkedTTL: cfg.ParkedTTL, OptOutReply: cfg.OptOutReply, HelpReply: cfg.HelpReply,
		Clustered: cfg.Cluster.enabled(), // owns nothing until startCluster
	})
	if err != nil {
		return none, err
	}
	for name := range providers {
		s.reg.Service().ProviderUp(name, true) // crewcast_provider_up: a circuit starts closed
	}
	s.ret = s.tr.NewRetainer(cfg.Retention, cfg.RetentionInterval)
	s.reg.Registerer().MustRegister(newRetentionCollector(s.ret)) // privacy.go
	// Senders before the start: a group resumed at start sends through
	// its sender's provider, at its pace (docs/design.md §16).
	if err := s.tr.LoadSenders(ctx); err != nil {
		return none, err
	}
	if err := s.tr.Start(ctx); err != nil {
		return none, err
	}
	if cfg.Cluster.enabled() {
		if err := s.startCluster(); err != nil {
			return none, err
		}
	}
	if cfg.AdminKey != "" {
		if _, err := apikey.EnsureBootstrap(ctx, s.st, cfg.AdminKey, cfg.Clock.Now()); err != nil {
			return none, fmt.Errorf("bootstrap admin key: %w", err)
		}
	}
	return linkKeys{answer: answerKey, voice: voiceKey}, nil
}

// linkKeys are the keys of what crewcast signs for others to bring back:
// email answer links and voice callback URLs.
type linkKeys struct{ answer, voice []byte }

// serveHTTP builds the API and board handler and serves it on the
// listener.
func (s *Server) serveHTTP(cfg *Config, providers map[string]crewcast.Provider, policy group.PolicyDefaults, sealer *webhookout.Sealer, keys linkKeys) error {
	handler, err := httpapi.New(httpapi.Config{
		Store: s.st, Service: s.tr, Providers: providers, SendingProvider: cfg.Provider, PolicyDefaults: policy, PublicURL: cfg.PublicURL, Logger: cfg.Logger,
		Metrics: s.reg, Board: web.Handler(), Done: s.done, Heartbeat: cfg.Heartbeat, StreamMaxLifetime: cfg.StreamMaxLifetime,
		WebhookWorker: s.hooks, WebhookSealer: sealer, WebhookAllowPrivate: cfg.WebhookAllowPrivate,
		DebugActors:      func() any { return s.tr.System().Actors() },
		DebugDeadLetters: func() any { return s.tr.System().DeadLetters() },
		Privacy:          privacy{s},
		// Several nodes (cluster.go); empty for a single node.
		Node: s.cfg.Cluster.NodeID, AdvertiseURL: s.cfg.Cluster.AdvertiseURL,
		Router: s.groupRouter(), ClusterSecret: s.cfg.Cluster.Secret, ClusterNodes: s.clusterNodes(),
		TrustedProxies:    cfg.TrustedProxies,
		SegmentPrice:      cfg.SegmentPrice,
		AllowUnregistered: cfg.AllowUnregistered,
		SenderHealth:      newSenderHealth(providers, s.tr.ProviderUp),
		ProviderStates:    s.providerStates,
		SendersChanged:    s.sendersChanged,
		AnswerKey:         keys.answer,
		VoiceKey:          keys.voice,
	})
	if err != nil {
		return err
	}
	handler = httpapi.WithRequestID(handler, cfg.Logger) // X-Request-Id, request_id in logs
	s.http = newHTTPServer(handler, *cfg)
	go func() {
		err := s.http.Serve(s.ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.served <- err
	}()
	return nil
}

// startBackground starts the retention loop (when scheduled), the
// primary watch and the webhook worker.
func (s *Server) startBackground(cfg *Config) {
	if cfg.RetentionInterval > 0 {
		s.wg.Add(1)
		go s.retentionLoop()
	}
	s.startPrimaryWatch() // crewcast_store_failovers_total (failover.go)
	hctx, stop := context.WithCancel(context.Background())
	s.stopHooks, s.hooksDone = stop, make(chan struct{})
	go func() {
		defer close(s.hooksDone)
		s.hooks.Run(hctx)
	}()
}

// newHTTPServer is the http.Server of handler with crewcast's timeouts.
func newHTTPServer(handler http.Handler, cfg Config) *http.Server {
	return &http.Server{
		Handler: handler,
		// Slow clients are cut off so they cannot starve good webhooks.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		// A client that never reads is cut off; event streams extend
		// their own deadline write by write (httpapi).
		WriteTimeout:   cfg.WriteTimeout,
		IdleTimeout:    60 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
}

// providerClient is the HTTP client for provider API calls: bounded by the
// provider timeout, and keeping as many idle connections per host as there
// are send workers (Go's default keeps 2, so a busy fan-out would open a new
// connection for nearly every send).
func (s *Server) providerClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	workers := s.cfg.SendWorkers
	if workers <= 0 {
		workers = 64
	}
	tr.MaxIdleConns = 4 * workers
	tr.MaxIdleConnsPerHost = workers
	s.client = &http.Client{Timeout: s.cfg.ProviderTimeout, Transport: tr}
	return s.client
}

// provider builds the sending provider and the webhook verifiers.
func (s *Server) provider(ctx context.Context, public string) (crewcast.Provider, map[string]crewcast.Provider, error) {
	cfg := s.cfg
	switch cfg.Provider {
	case ProviderDemo:
		faults := sim.DemoFaults()
		if cfg.DemoFaults != nil {
			faults = *cfg.DemoFaults
		}
		// The ambiguous send is held open past our timeout, so the client
		// sees a timeout (unconfirmed) rather than a transport-level retry.
		sm, err := sim.New(sim.Config{Faults: faults, Seed: cfg.DemoSeed, Logger: cfg.Logger,
			TelnyxWebhookURL: public + "/webhooks/telnyx", TwilioWebhookURL: public + "/webhooks/twilio",
			AcceptTimeoutHold: cfg.ProviderTimeout + 5*time.Second})
		if err != nil {
			return nil, nil, fmt.Errorf("demo simulator: %w", err)
		}
		s.sim = sm
		simURL, err := sm.Start(ctx, "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("demo simulator: %w", err)
		}
		k := sm.Keys()
		// The demo goes through the real Telnyx adapter both ways: sends
		// over HTTP to the simulator, signed webhooks back to our endpoint.
		// Its calls too (TeXML): the demo shows a whole ladder.
		c, err := telnyx.New(telnyx.Config{APIKey: k.TelnyxAPIKey, PublicKey: k.TelnyxPublicKey, APIBase: simURL,
			SendIdempotencyKey: true, Logger: cfg.Logger, HTTPClient: s.providerClient(), TeXMLConnectionID: "demo"})
		if err != nil {
			return nil, nil, err
		}
		// The simulator serves Twilio too: the demo's pool has numbers on
		// both (docs/design.md §16), each through its real adapter.
		tw, err := twilio.New(twilio.Config{AccountSID: k.TwilioAccountSID, AuthToken: k.TwilioAuthToken, APIBase: simURL,
			StatusCallbackURL: public + "/webhooks/twilio", PublicURL: public, SendIdempotencyKey: true,
			Logger: cfg.Logger, HTTPClient: s.providerClient()})
		if err != nil {
			return nil, nil, err
		}
		return c, map[string]crewcast.Provider{ProviderTelnyx: c, ProviderTwilio: tw}, nil
	}
	// Telnyx or Twilio: the one --provider names is the default; the other
	// is configured too when its credentials are (docs/design.md §16).
	all := map[string]crewcast.Provider{}
	if cfg.Provider == ProviderTelnyx || cfg.hasTelnyx() {
		c, err := telnyx.New(telnyx.Config{APIKey: cfg.TelnyxAPIKey, PublicKey: cfg.TelnyxPublicKey, APIBase: cfg.TelnyxAPIBase,
			MessagingProfileID: cfg.TelnyxMessagingProfileID, SendIdempotencyKey: cfg.TelnyxIdempotencyKeys, Logger: cfg.Logger,
			TeXMLConnectionID: cfg.TelnyxTeXMLConnectionID,
			HTTPClient:        s.providerClient()})
		if err != nil {
			return nil, nil, err
		}
		all[ProviderTelnyx] = c
	}
	if cfg.Provider == ProviderTwilio || cfg.hasTwilio() {
		c, err := twilio.New(twilio.Config{AccountSID: cfg.TwilioAccountSID, AuthToken: cfg.TwilioAuthToken, APIBase: cfg.TwilioAPIBase,
			StatusCallbackURL: public + "/webhooks/twilio", PublicURL: public, Logger: cfg.Logger,
			HTTPClient: s.providerClient()})
		if err != nil {
			return nil, nil, err
		}
		all[ProviderTwilio] = c
	}
	return all[cfg.Provider], all, nil
}

// hasTelnyx and hasTwilio report that a provider's credentials are given
// (both parts: a half-configured second provider is refused by validate).
func (c Config) hasTelnyx() bool { return c.TelnyxAPIKey != "" && c.TelnyxPublicKey != "" }
func (c Config) hasTwilio() bool { return c.TwilioAccountSID != "" && c.TwilioAuthToken != "" }

func (s *Server) retentionLoop() {
	defer s.wg.Done()
	// The interval runs on the injected clock, like every other schedule;
	// the first pass comes soon after start, not an interval later.
	first := min(s.cfg.RetentionInterval, retentionFirstDelay)
	t := s.cfg.Clock.NewTimer(first)
	defer t.Stop()
	s.ret.SetNext(s.cfg.Clock.Now().Add(first))
	for {
		select {
		case <-s.retention.Done():
			return
		case <-t.C():
			ctx, cancel := context.WithTimeout(s.retention, 10*time.Minute)
			run, err := s.ret.Run(ctx, "schedule")
			cancel()
			t.Reset(s.cfg.RetentionInterval)
			s.ret.SetNext(s.cfg.Clock.Now().Add(s.cfg.RetentionInterval))
			if s.retention.Err() != nil {
				return // stopped mid-run; the next start's run picks up the rest
			}
			logRetentionRun(s.cfg.Logger, run, err)
		}
	}
}

// URL is the base URL the server answers on.
func (s *Server) URL() string { return s.url }

// Tracker is the running tracker.
func (s *Server) Tracker() *tracker.Tracker { return s.tr }

// Store is the open store.
func (s *Server) Store() store.Store { return s.st }

// Sim is the demo simulator, or nil outside demo mode.
func (s *Server) Sim() *sim.Sim { return s.sim }

// Stop shuts down in the order that loses nothing: stop taking requests and
// webhooks, let the tracker commit every outcome, stop the simulator, close
// the store. It reports the first problem but always runs every step.
func (s *Server) Stop(ctx context.Context) error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	close(s.done)
	// No database answering (a primary lost, no standby promoted yet):
	// nothing more can be committed, so waiting out the drain timeout
	// for commits would only delay the exit (stopwatch.go).
	ctx, gaveUp, endWatch := s.watchStore(ctx)
	defer endWatch()
	if s.tr != nil {
		// Several nodes: hand every shard off first, each as soon as its
		// sends are recorded, so the others take over in well under a
		// second (cluster.go in package tracker).
		if err := s.tr.Leave(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leave cluster: %w", err))
		}
	}
	s.stopRetention()
	if s.stopHooks != nil {
		s.stopHooks()
		<-s.hooksDone
	}
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if err := <-s.served; err != nil {
			errs = append(errs, err)
		}
	} else if s.ln != nil {
		_ = s.ln.Close()
	}
	s.wg.Wait()
	if s.tr != nil {
		if err := s.tr.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		// Everything is committed: hand every lease off at once.
		if err := s.tr.StopCluster(ctx); err != nil {
			errs = append(errs, fmt.Errorf("leave cluster: %w", err))
		}
	}
	if s.client != nil {
		// Idle keep-alive connections would hold the simulator's
		// Shutdown (and a real provider's) for nothing.
		s.client.CloseIdleConnections()
	}
	if s.sim != nil {
		if err := s.sim.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("demo simulator: %w", err))
		}
	}
	endWatch() // before the store closes under its pings
	if s.st != nil {
		if err := s.closeStore(gaveUp()); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if err := s.dbLock.Release(); err != nil {
		errs = append(errs, fmt.Errorf("release database lock: %w", err))
	}
	if gaveUp() {
		errs = append(errs, errNoDatabase)
	}
	return errors.Join(errs...)
}
