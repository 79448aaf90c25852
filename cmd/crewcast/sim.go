package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
)

func init() {
	register(command{name: "sim", summary: "run the Telnyx/Twilio provider simulator (signed webhooks, fault knobs, ledger)", run: runSim})
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim", stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "listen address (env CREWCAST_SIM_ADDR)")
	smtpAddr := fs.String("smtp-addr", "", "also run an SMTP server here that keeps every mail (listed at /sim/mail); empty: none")
	telnyxAddr := fs.String("telnyx-addr", "", `also serve the Telnyx API alone here, so that a "refuse" outage refuses connections for real`)
	twilioAddr := fs.String("twilio-addr", "", `also serve the Twilio API alone here, so that a "refuse" outage refuses connections for real`)
	telnyxURL := fs.String("telnyx-webhook-url", "", "Telnyx messaging profile webhook URL (a send's webhook_url wins)")
	telnyxFailover := fs.String("telnyx-failover-url", "", "Telnyx failover webhook URL, after 3 failed attempts on the first")
	twilioURL := fs.String("twilio-webhook-url", "", "Twilio status callback and inbound URL (a send's StatusCallback wins)")
	seed := fs.Int64("seed", 0, "seed for every decision, id and key (unset: random per run)")
	telnyxKey := fs.String("telnyx-api-key", "", "Telnyx API key to accept (default: derived from --seed, or random)")
	signingSeed := fs.String("telnyx-signing-seed", "", "base64 32-byte Ed25519 seed for Telnyx webhook signatures (default: derived from --seed, or random)")
	twilioSID := fs.String("twilio-account-sid", "", "Twilio account SID to accept (default: derived from --seed, or random)")
	twilioToken := fs.String("twilio-auth-token", "", "Twilio auth token to accept and sign with (default: derived from --seed, or random)")
	webhookTimeout := fs.Duration("webhook-timeout", 2*time.Second, "timeout of one webhook attempt")
	retryBackoff := fs.Duration("retry-backoff", 250*time.Millisecond, "wait before retrying a failed webhook attempt")
	acceptHold := fs.Duration("accept-timeout-hold", 30*time.Second, "how long an accept-timeout send holds the request before closing the connection (0: close at once; keep it above the client's timeout)")
	demo := fs.Bool("demo", false, "start from the lifelike demo preset instead of 'deliver everything' (fault flags still win)")
	verbose := fs.Bool("verbose", false, "log every webhook attempt")
	token := fs.String("token", "", fmt.Sprintf("bearer token the /sim/* control routes require, at least %d characters (env CREWCAST_SIM_TOKEN; default: a random one, printed)", sim.MinControlToken))

	def := sim.DefaultFaults()
	knobs := addFaultFlags(fs, def)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := applyEnv(fs, []envBinding{{"addr", "CREWCAST_SIM_ADDR"}, {"token", "CREWCAST_SIM_TOKEN"}}); err != nil {
		return err
	}
	if *token != "" && len(*token) < sim.MinControlToken {
		return usagef("--token (CREWCAST_SIM_TOKEN): at least %d characters", sim.MinControlToken)
	}

	faults := def
	if *demo {
		faults = sim.DemoFaults()
	}
	cfg := sim.Config{
		TelnyxWebhookURL:  *telnyxURL,
		TelnyxFailoverURL: *telnyxFailover,
		TwilioWebhookURL:  *twilioURL,
		TelnyxAPIKey:      *telnyxKey,
		TwilioAccountSID:  *twilioSID,
		TwilioAuthToken:   *twilioToken,
		WebhookTimeout:    *webhookTimeout,
		RetryBackoff:      *retryBackoff,
		AcceptTimeoutHold: *acceptHold,
		ControlToken:      *token,
	}
	var flagErr error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "seed":
			cfg.Seed = seed
		case "telnyx-signing-seed":
			b, err := base64.StdEncoding.DecodeString(*signingSeed)
			if err != nil || len(b) != ed25519.SeedSize {
				flagErr = fmt.Errorf("--telnyx-signing-seed: want base64 of %d bytes", ed25519.SeedSize)
				return
			}
			cfg.TelnyxSigningKey = ed25519.NewKeyFromSeed(b)
		default:
			if err := knobs.apply(f.Name, &faults); err != nil {
				flagErr = err
			}
		}
	})
	if flagErr != nil {
		fmt.Fprintln(stderr, flagErr)
		return errUsage
	}
	cfg.Faults = faults
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	s, err := sim.New(cfg)
	if err != nil {
		return err
	}
	return serveSim(ctx, s, simListen{addr: *addr, smtp: *smtpAddr, telnyx: *telnyxAddr, twilio: *twilioAddr}, *token == "", stdout)
}

// simListen is where `crewcast sim` listens: its shared address, and the
// optional SMTP and per-provider listeners ("" for none).
type simListen struct{ addr, smtp, telnyx, twilio string }

// serveSim starts s on its listeners, prints what a server needs to use it
// (the environment lines, and the control token when it was generated),
// and serves until ctx is done.
func serveSim(ctx context.Context, s *sim.Sim, at simListen, printToken bool, stdout io.Writer) error {
	url, err := s.Start(ctx, at.addr)
	if err != nil {
		stopErr := s.Stop(context.Background())
		if stopErr != nil {
			return fmt.Errorf("%w (and stop: %v)", err, stopErr)
		}
		return err
	}
	tnxBase, twBase, err := startProviderListeners(ctx, s, url, at.telnyx, at.twilio)
	if err != nil {
		return errors.Join(err, s.Stop(context.Background()))
	}
	smtpURL := ""
	if at.smtp != "" {
		got, err := s.StartSMTP(at.smtp)
		if err != nil {
			return errors.Join(fmt.Errorf("--smtp-addr: %w", err), s.Stop(context.Background()))
		}
		smtpURL = "smtp://" + got
	}
	k := s.Keys()
	fmt.Fprintf(stdout, "crewcast sim listening on %s (ledger: %s/sim/ledger, faults: %s/sim/faults)\n", url, url, url)
	if smtpURL != "" {
		fmt.Fprintf(stdout, "CREWCAST_SMTP_URL=%s\n", smtpURL)
	}
	fmt.Fprintf(stdout, "CREWCAST_TELNYX_API_BASE=%s\nCREWCAST_TELNYX_API_KEY=%s\nCREWCAST_TELNYX_PUBLIC_KEY=%s\n", tnxBase, k.TelnyxAPIKey, k.TelnyxPublicKey)
	fmt.Fprintf(stdout, "CREWCAST_TWILIO_API_BASE=%s\nCREWCAST_TWILIO_ACCOUNT_SID=%s\nCREWCAST_TWILIO_AUTH_TOKEN=%s\n", twBase, k.TwilioAccountSID, k.TwilioAuthToken)
	if printToken {
		// The /sim/* routes need it (Authorization: Bearer); one given by
		// flag or environment is known to its owner and not repeated.
		fmt.Fprintf(stdout, "CREWCAST_SIM_TOKEN=%s\n", s.ControlToken())
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Stop(sctx)
}

// faultFlags are the fault knobs of `crewcast sim`: a flag given on the
// command line overrides the preset's value (apply), one not given leaves
// it.
type faultFlags struct {
	failRate, unknownRate, duplicateRate, rateLimitRate, error5xxRate, acceptTimeoutRate, dropRate, replyRate *float64
	failCodes, twilioFailCodes, delay, replyTexts                                                             *string
	reorder                                                                                                   *bool
}

func addFaultFlags(fs *flag.FlagSet, def sim.Faults) faultFlags {
	return faultFlags{
		failRate:          fs.Float64("fail-rate", 0, "probability a recipient's delivery fails with a code from --fail-codes"),
		failCodes:         fs.String("fail-codes", strings.Join(sim.DefaultFailCodes, ","), "Telnyx delivery error codes a failure draws from"),
		twilioFailCodes:   fs.String("twilio-fail-codes", strings.Join(sim.DefaultTwilioFailCodes, ","), "Twilio ErrorCodes a failure draws from"),
		unknownRate:       fs.Float64("unknown-rate", 0, "probability the outcome stays unknown (delivery_unconfirmed / unknown)"),
		duplicateRate:     fs.Float64("duplicate-rate", 0, "probability a webhook is posted twice"),
		reorder:           fs.Bool("reorder", false, "let the final webhook arrive before the sent one"),
		delay:             fs.String("delay-ms", fmt.Sprintf("%d,%d", def.DelayMS[0], def.DelayMS[1]), "min,max delay in ms before each webhook event"),
		rateLimitRate:     fs.Float64("rate-limit-rate", 0, "probability a send gets 429 (Telnyx 10011, Twilio 20429); nothing recorded"),
		error5xxRate:      fs.Float64("error-5xx-rate", 0, "probability a send gets 500; nothing recorded"),
		acceptTimeoutRate: fs.Float64("accept-timeout-rate", 0, "probability a send is recorded but its connection is closed without an answer"),
		dropRate:          fs.Float64("drop-rate", 0, "probability a webhook is never posted"),
		replyRate:         fs.Float64("reply-rate", 0, "probability a delivered recipient replies with one of --reply-texts"),
		replyTexts:        fs.String("reply-texts", strings.Join(sim.DefaultReplyTexts, ","), "comma-separated replies"),
	}
}

// apply sets the fault of the flag named name (given on the command line);
// other flags' names change nothing.
func (k faultFlags) apply(name string, faults *sim.Faults) error {
	switch name {
	case "fail-rate":
		faults.FailRate = *k.failRate
	case "fail-codes":
		faults.FailCodes = splitList(*k.failCodes)
	case "twilio-fail-codes":
		faults.TwilioFailCodes = splitList(*k.twilioFailCodes)
	case "unknown-rate":
		faults.UnknownRate = *k.unknownRate
	case "duplicate-rate":
		faults.DuplicateRate = *k.duplicateRate
	case "reorder":
		faults.Reorder = *k.reorder
	case "delay-ms":
		d, err := sim.ParseDelay(*k.delay)
		if err != nil {
			return fmt.Errorf("--delay-ms: %w", err)
		}
		faults.DelayMS = d
	case "rate-limit-rate":
		faults.RateLimitRate = *k.rateLimitRate
	case "error-5xx-rate":
		faults.Error5xxRate = *k.error5xxRate
	case "accept-timeout-rate":
		faults.AcceptTimeoutRate = *k.acceptTimeoutRate
	case "drop-rate":
		faults.DropRate = *k.dropRate
	case "reply-rate":
		faults.ReplyRate = *k.replyRate
	case "reply-texts":
		faults.ReplyTexts = splitList(*k.replyTexts)
	}
	return nil
}

// startProviderListeners starts the providers' own listeners that were
// asked for and returns each provider's API base (the shared URL when it
// has none).
func startProviderListeners(ctx context.Context, s *sim.Sim, shared, telnyxAddr, twilioAddr string) (string, string, error) {
	bases := [2]string{shared, shared}
	for i, p := range [2][2]string{{"telnyx", telnyxAddr}, {"twilio", twilioAddr}} {
		if p[1] == "" {
			continue
		}
		u, err := s.StartProvider(ctx, p[0], p[1])
		if err != nil {
			return "", "", fmt.Errorf("--%s-addr: %w", p[0], err)
		}
		bases[i] = u
	}
	return bases[0], bases[1], nil
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
