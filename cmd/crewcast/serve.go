package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/tracker"
)

func init() {
	register(command{name: "serve", summary: "run the crewcast server (API, webhooks, board)", run: runServe})
}

// serverFlags binds the server's flags, each defaulting to its CREWCAST_*
// environment variable (design.md §10); flags win over the environment.
type serverFlags struct {
	addr, db, provider, publicURL, logLevel         string
	telnyxKey, telnyxPub, telnyxBase, telnyxProfile string
	telnyxIdem                                      bool
	twilioSID, twilioToken, twilioBase              string
	adminKey                                        string
	sendRate                                        float64
	sendRates                                       string
	sendWorkers                                     int
	checkAfter, deadline, providerTimeout           time.Duration
	redactAfter, hashAfter, deleteAfter             time.Duration
	hashKey                                         string
	parkedTTL                                       time.Duration
}

func bindServerFlags(fs *flag.FlagSet, defaultDB string) *serverFlags {
	f := &serverFlags{}
	fs.StringVar(&f.addr, "addr", envOr("CREWCAST_ADDR", "127.0.0.1:8080"), "listen address (CREWCAST_ADDR)")
	fs.StringVar(&f.db, "db", envOr("CREWCAST_DB", defaultDB), "SQLite path or postgres:// URL (CREWCAST_DB)")
	fs.StringVar(&f.provider, "provider", envOr("CREWCAST_PROVIDER", "demo"), "demo, telnyx or twilio (CREWCAST_PROVIDER)")
	fs.StringVar(&f.publicURL, "public-url", envOr("CREWCAST_PUBLIC_URL", ""), "origin providers post webhooks to, when behind a proxy (CREWCAST_PUBLIC_URL)")
	fs.StringVar(&f.logLevel, "log-level", envOr("CREWCAST_LOG_LEVEL", "info"), "debug, info, warn or error (CREWCAST_LOG_LEVEL)")
	fs.StringVar(&f.telnyxKey, "telnyx-api-key", envOr("CREWCAST_TELNYX_API_KEY", ""), "Telnyx API key (CREWCAST_TELNYX_API_KEY)")
	fs.StringVar(&f.telnyxPub, "telnyx-public-key", envOr("CREWCAST_TELNYX_PUBLIC_KEY", ""), "Telnyx webhook public key, base64 (CREWCAST_TELNYX_PUBLIC_KEY)")
	fs.StringVar(&f.telnyxBase, "telnyx-api-base", envOr("CREWCAST_TELNYX_API_BASE", ""), "Telnyx API origin; the simulator's URL in tests (CREWCAST_TELNYX_API_BASE)")
	fs.StringVar(&f.telnyxProfile, "telnyx-messaging-profile", envOr("CREWCAST_TELNYX_MESSAGING_PROFILE_ID", ""), "Telnyx messaging profile id (CREWCAST_TELNYX_MESSAGING_PROFILE_ID)")
	fs.BoolVar(&f.telnyxIdem, "telnyx-idempotency-keys", envBool("CREWCAST_TELNYX_IDEMPOTENCY_KEYS"), "send claim keys as Idempotency-Key (only the simulator honours them)")
	fs.StringVar(&f.twilioSID, "twilio-account-sid", envOr("CREWCAST_TWILIO_ACCOUNT_SID", ""), "Twilio account SID (CREWCAST_TWILIO_ACCOUNT_SID)")
	fs.StringVar(&f.twilioToken, "twilio-auth-token", envOr("CREWCAST_TWILIO_AUTH_TOKEN", ""), "Twilio auth token (CREWCAST_TWILIO_AUTH_TOKEN)")
	fs.StringVar(&f.twilioBase, "twilio-api-base", envOr("CREWCAST_TWILIO_API_BASE", ""), "Twilio API origin (CREWCAST_TWILIO_API_BASE)")
	fs.StringVar(&f.adminKey, "admin-key", envOr("CREWCAST_ADMIN_KEY", ""), "register this admin API key at start (CREWCAST_ADMIN_KEY)")
	fs.Float64Var(&f.sendRate, "send-rate", envFloat("CREWCAST_SEND_RATE", 10), "messages per second per sender number; 0 = no pacing (CREWCAST_SEND_RATE)")
	fs.StringVar(&f.sendRates, "send-rates", envOr("CREWCAST_SEND_RATES", ""), "per-sender overrides, e.g. +18005550100=20,+15550100000=0.5 (CREWCAST_SEND_RATES)")
	fs.IntVar(&f.sendWorkers, "send-workers", envInt("CREWCAST_SEND_WORKERS", 64), "concurrent provider calls (CREWCAST_SEND_WORKERS)")
	d := group.DefaultSettings()
	fs.DurationVar(&f.checkAfter, "check-after", envDuration("CREWCAST_CHECK_AFTER", d.CheckAfter), "first provider status check of a sent recipient (CREWCAST_CHECK_AFTER)")
	fs.DurationVar(&f.deadline, "check-deadline", envDuration("CREWCAST_CHECK_DEADLINE", d.Deadline), "mark a sent recipient unknown after this long without a final receipt (CREWCAST_CHECK_DEADLINE)")
	fs.DurationVar(&f.parkedTTL, "parked-ttl", envDuration("CREWCAST_PARKED_TTL", tracker.DefaultParkedTTL), "acknowledge receipts for unknown message ids as expired after this long (CREWCAST_PARKED_TTL)")
	fs.DurationVar(&f.providerTimeout, "provider-timeout", envDuration("CREWCAST_PROVIDER_TIMEOUT", 30*time.Second), "bound on one provider call (CREWCAST_PROVIDER_TIMEOUT)")
	r := tracker.DefaultRetention()
	fs.DurationVar(&f.redactAfter, "redact-after", envDuration("CREWCAST_REDACT_AFTER", r.RedactAfter), "empty message and reply bodies after (CREWCAST_REDACT_AFTER; negative: never)")
	fs.DurationVar(&f.hashAfter, "hash-after", envDuration("CREWCAST_HASH_AFTER", r.HashAfter), "replace phone numbers by a keyed hash after (CREWCAST_HASH_AFTER; needs CREWCAST_HASH_KEY)")
	fs.DurationVar(&f.deleteAfter, "delete-after", envDuration("CREWCAST_DELETE_AFTER", r.DeleteAfter), "delete whole groups after (CREWCAST_DELETE_AFTER; negative: never)")
	fs.StringVar(&f.hashKey, "hash-key", envOr("CREWCAST_HASH_KEY", ""), "secret key for hashing numbers (CREWCAST_HASH_KEY)")
	return f
}

func (f *serverFlags) config(stderr io.Writer) (server.Config, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return server.Config{}, fmt.Errorf("--log-level: %w", err)
	}
	rates, err := parseSendRates(f.sendRates)
	if err != nil {
		return server.Config{}, fmt.Errorf("--send-rates: %w", err)
	}
	return server.Config{
		SendRates: rates,
		Addr:      f.addr, DB: f.db, Provider: f.provider, PublicURL: f.publicURL,
		TelnyxAPIKey: f.telnyxKey, TelnyxPublicKey: f.telnyxPub, TelnyxAPIBase: f.telnyxBase,
		TelnyxMessagingProfileID: f.telnyxProfile, TelnyxIdempotencyKeys: f.telnyxIdem,
		TwilioAccountSID: f.twilioSID, TwilioAuthToken: f.twilioToken, TwilioAPIBase: f.twilioBase,
		AdminKey: f.adminKey, SendRate: f.sendRate, SendWorkers: f.sendWorkers, ProviderTimeout: f.providerTimeout,
		Settings:  group.Settings{CheckAfter: f.checkAfter, Deadline: f.deadline},
		ParkedTTL: f.parkedTTL,
		Retention: tracker.RetentionPolicy{RedactAfter: f.redactAfter, HashAfter: f.hashAfter, DeleteAfter: f.deleteAfter, HashKey: []byte(f.hashKey)},
		Logger:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}, nil
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
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "crewcast serving on %s (provider %s, store %s)\n", srv.URL(), cfg.Provider, srv.Store().Engine())
	fmt.Fprintf(stdout, "  board:    %s/\n  webhooks: %s/webhooks/%s\n", srv.URL(), srv.URL(), webhookPath(cfg.Provider))
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down…")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Stop(sctx)
}

func webhookPath(provider string) string {
	if provider == server.ProviderTwilio {
		return "twilio"
	}
	return "telnyx"
}

func envBool(name string) bool {
	v, _ := strconv.ParseBool(os.Getenv(name))
	return v
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(strings.TrimSpace(os.Getenv(name)), 64); err == nil {
		return v
	}
	return def
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(strings.TrimSpace(os.Getenv(name))); err == nil {
		return v
	}
	return def
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
