package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/httpapi"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

func init() {
	register(command{name: "serve", summary: "run the crewcast server (API, webhooks, board)", run: runServe})
}

// serverFlags binds the server's flags, each filled from its CREWCAST_*
// environment variable when not given (docs/design.md §10; flags win).
type serverFlags struct {
	fs                                              *flag.FlagSet
	addr, db, provider, publicURL, logLevel         string
	telnyxKey, telnyxPub, telnyxBase, telnyxProfile string
	telnyxTeXML                                     string
	telnyxIdem                                      bool
	twilioSID, twilioToken, twilioBase              string
	adminKey                                        string
	smtpURL, emailFrom                              string
	sendRate                                        float64
	sendRates                                       string
	segmentPrice                                    string
	sendWorkers                                     int
	quietHours, defaultTZ                           string
	optOutReply, helpReply                          string
	checkAfter, deadline, providerTimeout           time.Duration
	redactAfter, hashAfter, deleteAfter             time.Duration
	auditAfter                                      time.Duration
	replayAfter                                     time.Duration
	retentionInterval                               time.Duration
	hashKey                                         string
	logFormat                                       string // json or text (logging.go)
	webhookAllowPrivate, allowUnregistered          bool
	webhookSecretKey                                string
	parkedTTL                                       time.Duration
	nodeID, advertiseURL                            string // several nodes (server/cluster.go)
	leaseTTL                                        time.Duration
	trustedProxies                                  string
	streamMaxLifetime                               time.Duration
}

// serverFlagDocs lists serve's flags by section for -h, each with the
// environment variable that fills it. A flag missing here is still shown
// (under "Other"), but is not read from the environment.
var serverFlagDocs = []flagSection{
	{"Server", []envBinding{
		{"addr", "CREWCAST_ADDR"}, {"public-url", "CREWCAST_PUBLIC_URL"}, {"admin-key", "CREWCAST_ADMIN_KEY"},
		{"log-level", "CREWCAST_LOG_LEVEL"}, {"log-format", "CREWCAST_LOG_FORMAT"},
		{"trusted-proxies", "CREWCAST_TRUSTED_PROXIES"},
		{"stream-max-lifetime", "CREWCAST_STREAM_MAX_LIFETIME"},
	}},
	{"Storage", []envBinding{{"db", "CREWCAST_DB"}}},
	{"Several nodes (PostgreSQL)", []envBinding{
		{"node-id", "CREWCAST_NODE_ID"}, {"advertise-url", "CREWCAST_ADVERTISE_URL"}, {"lease-ttl", "CREWCAST_LEASE_TTL"},
	}},
	{"Provider", []envBinding{
		{"provider", "CREWCAST_PROVIDER"}, {"provider-timeout", "CREWCAST_PROVIDER_TIMEOUT"},
		{"telnyx-api-key", "CREWCAST_TELNYX_API_KEY"}, {"telnyx-public-key", "CREWCAST_TELNYX_PUBLIC_KEY"},
		{"telnyx-messaging-profile", "CREWCAST_TELNYX_MESSAGING_PROFILE_ID"}, {"telnyx-api-base", "CREWCAST_TELNYX_API_BASE"},
		{"telnyx-idempotency-keys", "CREWCAST_TELNYX_IDEMPOTENCY_KEYS"},
		{"telnyx-texml-connection", "CREWCAST_TELNYX_TEXML_CONNECTION_ID"},
		{"twilio-account-sid", "CREWCAST_TWILIO_ACCOUNT_SID"}, {"twilio-auth-token", "CREWCAST_TWILIO_AUTH_TOKEN"},
		{"twilio-api-base", "CREWCAST_TWILIO_API_BASE"},
	}},
	{"Sending", []envBinding{
		{"send-rate", "CREWCAST_SEND_RATE"}, {"send-rates", "CREWCAST_SEND_RATES"}, {"send-workers", "CREWCAST_SEND_WORKERS"},
		{"check-after", "CREWCAST_CHECK_AFTER"}, {"check-deadline", "CREWCAST_CHECK_DEADLINE"},
		{"quiet-hours", "CREWCAST_QUIET_HOURS"}, {"default-timezone", "CREWCAST_DEFAULT_TIMEZONE"},
		{"parked-ttl", "CREWCAST_PARKED_TTL"}, {"segment-price", "CREWCAST_SEGMENT_PRICE"},
		{"opt-out-reply", "CREWCAST_OPT_OUT_REPLY"}, {"help-reply", "CREWCAST_HELP_REPLY"},
		{"allow-unregistered", "CREWCAST_ALLOW_UNREGISTERED"},
	}},
	{"Email (follow-up ladders)", []envBinding{{"smtp-url", "CREWCAST_SMTP_URL"}, {"email-from", "CREWCAST_EMAIL_FROM"}}},
	{"Retention", []envBinding{
		{"redact-after", "CREWCAST_REDACT_AFTER"}, {"hash-after", "CREWCAST_HASH_AFTER"},
		{"delete-after", "CREWCAST_DELETE_AFTER"}, {"hash-key", "CREWCAST_HASH_KEY"},
		{"audit-after", "CREWCAST_AUDIT_AFTER"}, {"replay-after", "CREWCAST_REPLAY_AFTER"},
		{"retention-interval", "CREWCAST_RETENTION_INTERVAL"},
	}},
	{"Outbound webhooks", []envBinding{
		{"webhook-allow-private", "CREWCAST_WEBHOOK_ALLOW_PRIVATE"}, {"webhook-secret-key", "CREWCAST_WEBHOOK_SECRET_KEY"},
	}},
}

func bindServerFlags(fs *flag.FlagSet, defaultDB string) *serverFlags {
	f := &serverFlags{fs: fs}
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&f.db, "db", defaultDB, "SQLite path or postgres:// URL")
	fs.StringVar(&f.provider, "provider", "demo", "demo, telnyx or twilio (demo sends nothing real)")
	fs.StringVar(&f.smtpURL, "smtp-url", "", "SMTP server for the email steps of follow-up ladders: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465; empty: no email steps")
	fs.StringVar(&f.emailFrom, "email-from", "", "the From address of email steps (crewcast@example.org)")
	fs.StringVar(&f.publicURL, "public-url", "", "the origin providers post webhooks to (https://crew.example.com); default: the listen address")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.telnyxKey, "telnyx-api-key", "", "Telnyx API key")
	fs.StringVar(&f.telnyxPub, "telnyx-public-key", "", "Telnyx webhook public key, base64 (Mission Control → Keys & Credentials)")
	fs.StringVar(&f.telnyxBase, "telnyx-api-base", "", "Telnyx API origin (default https://api.telnyx.com; a simulator's URL in tests)")
	fs.StringVar(&f.telnyxProfile, "telnyx-messaging-profile", "", "Telnyx messaging profile id")
	fs.StringVar(&f.telnyxTeXML, "telnyx-texml-connection", "", "Telnyx TeXML application connection id the voice steps of follow-up ladders call through; empty: no voice steps on Telnyx")
	fs.BoolVar(&f.telnyxIdem, "telnyx-idempotency-keys", false, "send claim keys as Idempotency-Key (only the simulator honours them)")
	fs.StringVar(&f.twilioSID, "twilio-account-sid", "", "Twilio account SID")
	fs.StringVar(&f.twilioToken, "twilio-auth-token", "", "Twilio auth token")
	fs.StringVar(&f.twilioBase, "twilio-api-base", "", "Twilio API origin (default https://api.twilio.com)")
	fs.StringVar(&f.adminKey, "admin-key", "", "register this admin API key at start (the first key of a fresh server; at least 128 bits, e.g. openssl rand -base64 32)")
	fs.StringVar(&f.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs of the proxies whose X-Forwarded-For/Forwarded names the client (default none: the TCP peer)")
	fs.Float64Var(&f.sendRate, "send-rate", 10, "messages per second per sender number; 0 = no pacing")
	fs.StringVar(&f.sendRates, "send-rates", "", "per-sender overrides, e.g. +18005550100=20,+15550100000=0.5")
	fs.BoolVar(&f.allowUnregistered, "allow-unregistered", false, "let groups send from 10DLC and toll-free senders whose registration is not approved")
	fs.StringVar(&f.segmentPrice, "segment-price", "", "price of one SMS segment, a decimal such as 0.0079; the preview shows the cost of a send (default: no cost shown)")
	fs.IntVar(&f.sendWorkers, "send-workers", 64, "concurrent provider calls")
	fs.StringVar(&f.quietHours, "quiet-hours", "", `default quiet hours of new groups, e.g. 21:00-07:00, in each recipient's time zone ("" or off: none)`)
	fs.StringVar(&f.optOutReply, "opt-out-reply", "provider", "on STOP: provider (the provider confirms, crewcast sends nothing), off, or the text crewcast sends once")
	fs.StringVar(&f.helpReply, "help-reply", "", `text crewcast sends once on HELP/INFO ("": none)`)
	fs.StringVar(&f.defaultTZ, "default-timezone", "UTC", "IANA time zone of recipients without one, for quiet hours")
	d := group.DefaultSettings()
	fs.DurationVar(&f.checkAfter, "check-after", d.CheckAfter, "first provider status check of a sent recipient without a receipt")
	fs.DurationVar(&f.deadline, "check-deadline", d.Deadline, "mark a sent recipient unknown after this long without a final receipt")
	fs.DurationVar(&f.providerTimeout, "provider-timeout", 30*time.Second, "bound on one provider call (a timed-out send is unconfirmed)")
	fs.DurationVar(&f.parkedTTL, "parked-ttl", tracker.DefaultParkedTTL, "acknowledge receipts for message ids crewcast never sent as expired after this long")
	r := tracker.DefaultRetention()
	fs.DurationVar(&f.redactAfter, "redact-after", r.RedactAfter, "empty message and reply bodies after this long; negative: never")
	fs.DurationVar(&f.hashAfter, "hash-after", r.HashAfter, "replace phone numbers by a keyed hash after this long (needs --hash-key)")
	fs.DurationVar(&f.deleteAfter, "delete-after", r.DeleteAfter, "delete whole groups after this long; negative: never")
	fs.StringVar(&f.hashKey, "hash-key", "", "secret key for hashing numbers")
	fs.DurationVar(&f.auditAfter, "audit-after", r.AuditAfter, "delete audit log entries after this long; negative: never")
	fs.DurationVar(&f.replayAfter, "replay-after", 0, "refuse a processed webhook posted again for this long after it was first seen (the replay record); 0: delete-after + 7 days; negative: for ever")
	fs.DurationVar(&f.retentionInterval, "retention-interval", time.Hour, "run retention this often (the first pass soon after start); 0: only on request (crewcast retention run)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: json (one object per line) or text")
	fs.BoolVar(&f.webhookAllowPrivate, "webhook-allow-private", false, "let outbound webhooks reach loopback, private and link-local addresses")
	fs.StringVar(&f.webhookSecretKey, "webhook-secret-key", "", "server key that seals webhook endpoint secrets in the database")
	fs.StringVar(&f.nodeID, "node-id", "", "this node's id; set it (or --advertise-url) to run as one of several nodes on PostgreSQL")
	fs.StringVar(&f.advertiseURL, "advertise-url", "", "how the other nodes reach this one (http://10.0.0.5:8080)")
	fs.DurationVar(&f.streamMaxLifetime, "stream-max-lifetime", 15*time.Minute, "end each event stream after this long; the client reconnects and is authenticated again")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", 10*time.Second, "shard lease time to live; a node that cannot renew stops before it ends")
	fs.Usage = func() { serveUsage(fs) }
	return f
}

func (f *serverFlags) config(stderr io.Writer) (server.Config, error) {
	if err := applyEnv(f.fs, sectionBindings(serverFlagDocs)); err != nil {
		return server.Config{}, err
	}
	logger, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return server.Config{}, usagef("%v", err)
	}
	rates, err := parseSendRates(f.sendRates)
	if err != nil {
		return server.Config{}, usagef("--send-rates: %v", err)
	}
	if f.segmentPrice != "" {
		if _, err := httpapi.ParseSegmentPrice(f.segmentPrice); err != nil {
			return server.Config{}, usagef("--segment-price (CREWCAST_SEGMENT_PRICE) %q: %v", f.segmentPrice, err)
		}
	}
	if strings.TrimSpace(f.optOutReply) == "" {
		return server.Config{}, usagef(`--opt-out-reply (CREWCAST_OPT_OUT_REPLY): provider, off or a text, not ""`)
	}
	proxies, err := httpapi.ParseTrustedProxies(f.trustedProxies)
	if err != nil {
		return server.Config{}, usagef("--trusted-proxies (CREWCAST_TRUSTED_PROXIES) %q: %v", f.trustedProxies, err)
	}
	return server.Config{
		TrustedProxies: proxies,
		SendRates:      rates,
		SegmentPrice:   f.segmentPrice,
		Addr:           f.addr, DB: f.db, Provider: f.provider, PublicURL: f.publicURL, SMTPURL: f.smtpURL, EmailFrom: f.emailFrom,
		TelnyxAPIKey: f.telnyxKey, TelnyxPublicKey: f.telnyxPub, TelnyxAPIBase: f.telnyxBase,
		TelnyxMessagingProfileID: f.telnyxProfile, TelnyxIdempotencyKeys: f.telnyxIdem, TelnyxTeXMLConnectionID: f.telnyxTeXML,
		TwilioAccountSID: f.twilioSID, TwilioAuthToken: f.twilioToken, TwilioAPIBase: f.twilioBase,
		AdminKey: f.adminKey, SendRate: f.sendRate, SendWorkers: f.sendWorkers, ProviderTimeout: f.providerTimeout,
		QuietHours: f.quietHours, DefaultTimezone: f.defaultTZ,
		OptOutReply: f.optOutReply, HelpReply: strings.TrimSpace(f.helpReply),
		Settings: group.Settings{CheckAfter: f.checkAfter, Deadline: f.deadline},
		Retention: tracker.RetentionPolicy{RedactAfter: f.redactAfter, HashAfter: f.hashAfter, DeleteAfter: f.deleteAfter, HashKey: []byte(f.hashKey),
			AuditAfter: f.auditAfter, ReplayAfter: f.replayAfter},
		ParkedTTL:         f.parkedTTL,
		StreamMaxLifetime: f.streamMaxLifetime,
		RetentionInterval: retentionInterval(f.retentionInterval),
		Logger:            logger,

		AllowUnregistered:   f.allowUnregistered,
		WebhookAllowPrivate: f.webhookAllowPrivate, WebhookSecretKey: f.webhookSecretKey,
		Cluster: server.ClusterConfig{NodeID: f.nodeID, AdvertiseURL: f.advertiseURL, LeaseTTL: f.leaseTTL,
			Secret: os.Getenv("CREWCAST_CLUSTER_SECRET")}, // environment only: a secret has no flag
	}, nil
}

// retentionInterval maps the flag to server.Config.RetentionInterval, where
// zero means the default: 0 or less turns the schedule off.
func retentionInterval(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func serveUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `Usage: crewcast serve [flags]

Runs the crewcast server: the HTTP API, the provider webhooks and the live
board. Every flag may instead be given by its environment variable (shown
after it); a flag on the command line wins. A value that does not parse
stops start-up.

`)
	printFlagSections(w, fs, serverFlagDocs)
	fmt.Fprint(w, `Examples:
  # Try it without a provider account (nothing real is sent):
  crewcast keys create --db ./crewcast.db --scope admin --name me   # prints the first key
  crewcast serve

  # Against Telnyx, behind https://crew.example.com:
  CREWCAST_TELNYX_API_KEY=… CREWCAST_TELNYX_PUBLIC_KEY=… CREWCAST_ADMIN_KEY=… \
    crewcast serve --provider telnyx --public-url https://crew.example.com
  # then set the Messaging Profile's webhook URL in Telnyx to
  #   https://crew.example.com/webhooks/telnyx

  # Against Twilio, on PostgreSQL:
  CREWCAST_TWILIO_ACCOUNT_SID=AC… CREWCAST_TWILIO_AUTH_TOKEN=… \
    crewcast serve --provider twilio --db postgres://crewcast@db/crewcast --public-url https://crew.example.com
`)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	f := bindServerFlags(fs, "./crewcast.db")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := f.config(stderr)
	if err != nil {
		return err
	}
	stdout = bannerWriter(stdout, f.logFormat) // --log-format json: every line JSON
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "crewcast serving on %s (provider %s, store %s)\n", srv.URL(), cfg.Provider, srv.Store().Engine())
	fmt.Fprintf(stdout, "  board:    %s/\n  database: %s\n\n", srv.URL(), dbLabel(cfg.DB))
	printProviderNotes(stdout, cfg, srv.URL())
	printSignIn(ctx, stdout, srv.Store(), cfg)
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down…")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Stop(sctx)
}

// dbLabel shows where the data is without a PostgreSQL URL's password.
func dbLabel(db string) string {
	if isPostgres(db) {
		if u, err := url.Parse(db); err == nil {
			return u.Redacted()
		}
		return "PostgreSQL"
	}
	if abs, err := filepath.Abs(db); err == nil {
		return abs
	}
	return db
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// printProviderNotes says loudly when nothing real is sent, and which
// webhook URL to register with a real provider.
func printProviderNotes(w io.Writer, cfg server.Config, listenURL string) {
	public := strings.TrimRight(cfg.PublicURL, "/")
	if public == "" {
		public = listenURL
	}
	switch cfg.Provider {
	case server.ProviderTelnyx:
		fmt.Fprintf(w, "  Telnyx: set your Messaging Profile's webhook URL to %s/webhooks/telnyx\n", public)
	case server.ProviderTwilio:
		fmt.Fprintf(w, "  Twilio: delivery callbacks go to %s/webhooks/twilio (set on each message);\n", public)
		fmt.Fprintf(w, "          set each sending number's \"A message comes in\" webhook (HTTP POST) to %s/webhooks/twilio\n", public)
	default:
		fmt.Fprintln(w, "  *** DEMO PROVIDER: nothing real is sent. Messages go to a built-in simulator")
		fmt.Fprintln(w, "  *** that invents delivery receipts and replies. For real texts use")
		fmt.Fprintln(w, "  *** --provider telnyx or --provider twilio with its credentials (crewcast serve -h).")
		fmt.Fprintln(w)
		return
	}
	if cfg.PublicURL == "" {
		fmt.Fprintln(w, "  (no --public-url: the provider must reach this server at its listen address;")
		fmt.Fprintln(w, "   behind a proxy or tunnel set --public-url to the https origin it forwards from)")
	}
	fmt.Fprintln(w)
}

// printSignIn says how to sign in to the board and call the API: with the
// configured admin key, or how to make the first one.
func printSignIn(ctx context.Context, w io.Writer, st store.Store, cfg server.Config) {
	if cfg.AdminKey != "" {
		fmt.Fprintln(w, "  Sign in with the admin key given by CREWCAST_ADMIN_KEY (--admin-key).")
		return
	}
	keys, err := st.ListKeys(ctx)
	active := 0
	for _, k := range keys {
		if k.RevokedAt.IsZero() {
			active++
		}
	}
	db := cfg.DB
	if isPostgres(db) {
		db = `"$CREWCAST_DB"`
	}
	if err == nil && active == 0 {
		fmt.Fprintln(w, "  No API key exists yet, so nobody can sign in. Make the first admin key with")
	} else {
		fmt.Fprintln(w, "  Sign in with an API key. A new admin key, straight into the database:")
	}
	fmt.Fprintf(w, "    crewcast keys create --db %s --scope admin --name me\n", db)
	fmt.Fprintln(w, "  or restart with CREWCAST_ADMIN_KEY set to a random secret (openssl rand -base64 32).")
}

// parseSendRates reads "NUMBER=RATE,NUMBER=RATE" (numbers normalized to
// E.164, rates in messages per second, 0 = unpaced).
func parseSendRates(s string) (map[string]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		num, rate, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want NUMBER=RATE", part)
		}
		n, err := group.NormalizeNumber(num)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", num, err)
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if err != nil || r < 0 {
			return nil, fmt.Errorf("%q: rate must be a number ≥ 0", rate)
		}
		out[n] = r
	}
	return out, nil
}
