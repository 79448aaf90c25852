package main

import (
	"context"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseSendRates(t *testing.T) {
	got, err := parseSendRates(" +1 800 555 0100=20, 5550100000=0.5,+15550100009=0 ")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"+18005550100": 20, "+15550100000": 0.5, "+15550100009": 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if m, err := parseSendRates(""); err != nil || m != nil {
		t.Fatalf("empty: %v %v", m, err)
	}
	for _, bad := range []string{"+15550100000", "+15550100000=fast", "+15550100000=-1", "nonsense=3"} {
		if _, err := parseSendRates(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// An environment value that does not parse fails start-up naming the
// variable, instead of falling back to the default (issue 12, finding 15).
func TestServerEnvironmentMustParse(t *testing.T) {
	for name, value := range map[string]string{
		"CREWCAST_DELETE_AFTER":            "-1",
		"CREWCAST_REDACT_AFTER":            "30 days",
		"CREWCAST_HASH_AFTER":              "x",
		"CREWCAST_CHECK_AFTER":             "5",
		"CREWCAST_CHECK_DEADLINE":          "soon",
		"CREWCAST_PROVIDER_TIMEOUT":        "1 minute",
		"CREWCAST_SEND_RATE":               "abc",
		"CREWCAST_SEND_WORKERS":            "many",
		"CREWCAST_TELNYX_IDEMPOTENCY_KEYS": "yes please",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			fs := newFlagSet("serve", io.Discard)
			f := bindServerFlags(fs, "")
			if err := fs.Parse(nil); err != nil {
				t.Fatal(err)
			}
			_, err := f.config(io.Discard)
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), strconv.Quote(value)) {
				t.Fatalf("%s=%q: config error %v, want one naming the variable and its value", name, value, err)
			}
			// The whole command refuses to start, as a usage error.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			code, _, stderr := runCLI(ctx, "serve", "--addr", "127.0.0.1:0", "--db", t.TempDir()+"/c.db")
			if code != 2 || !strings.Contains(stderr, name) {
				t.Fatalf("serve with %s=%q: exit %d, stderr %q", name, value, code, stderr)
			}
		})
	}
	// A value given by flag wins: the environment is not consulted for it.
	t.Setenv("CREWCAST_SEND_RATE", "abc")
	fs := newFlagSet("serve", io.Discard)
	f := bindServerFlags(fs, "")
	if err := fs.Parse([]string{"--send-rate", "3"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := f.config(io.Discard); err != nil || cfg.SendRate != 3 {
		t.Fatalf("flag over bad env: %v %v", cfg.SendRate, err)
	}
	// Valid values still work, including a negative duration ("never").
	t.Setenv("CREWCAST_SEND_RATE", "2.5")
	t.Setenv("CREWCAST_DELETE_AFTER", "-1h")
	fs = newFlagSet("serve", io.Discard)
	f = bindServerFlags(fs, "")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg, err := f.config(io.Discard); err != nil || cfg.SendRate != 2.5 || cfg.Retention.DeleteAfter != -time.Hour {
		t.Fatalf("valid env: %v %v %v", cfg.SendRate, cfg.Retention.DeleteAfter, err)
	}
}

// --retention-interval / CREWCAST_RETENTION_INTERVAL: parsed strictly, the
// flag wins, 0 turns the schedule off.
func TestRetentionIntervalFlagAndEnv(t *testing.T) {
	parse := func(args ...string) (time.Duration, error) {
		t.Helper()
		fs := newFlagSet("serve", io.Discard)
		f := bindServerFlags(fs, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(io.Discard)
		return cfg.RetentionInterval, err
	}
	if d, err := parse(); err != nil || d != time.Hour {
		t.Fatalf("default = %v, %v", d, err)
	}
	t.Setenv("CREWCAST_RETENTION_INTERVAL", "2s")
	if d, err := parse(); err != nil || d != 2*time.Second {
		t.Fatalf("env 2s = %v, %v", d, err)
	}
	if d, err := parse("--retention-interval", "5m"); err != nil || d != 5*time.Minute {
		t.Fatalf("flag over env = %v, %v", d, err)
	}
	if d, err := parse("--retention-interval", "0"); err != nil || d >= 0 {
		t.Fatalf("0 must turn the schedule off: %v, %v", d, err)
	}
	t.Setenv("CREWCAST_RETENTION_INTERVAL", "hourly")
	if _, err := parse(); err == nil || !strings.Contains(err.Error(), "CREWCAST_RETENTION_INTERVAL") {
		t.Fatalf("bad env: %v", err)
	}
}

// A weak CREWCAST_ADMIN_KEY stops start-up with a message saying how to
// make a good one; the key itself is never printed. A strong one (made by
// `openssl rand -base64 32`, or a crewcast key) starts.
func TestServeRefusesWeakAdminKey(t *testing.T) {
	for _, weak := range []string{"admin_secret_from_env", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "e2e-admin-key-0123456789abcdef"} {
		t.Setenv("CREWCAST_ADMIN_KEY", weak)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, _, stderr := runCLI(ctx, "serve", "--addr", "127.0.0.1:0", "--db", t.TempDir()+"/c.db")
		cancel()
		if code == 0 || !strings.Contains(stderr, "openssl rand -base64 32") || !strings.Contains(stderr, "CREWCAST_ADMIN_KEY") {
			t.Fatalf("serve with a weak admin key: exit %d, stderr %q", code, stderr)
		}
		if strings.Contains(stderr, weak) {
			t.Fatalf("the weak key is printed: %q", stderr)
		}
	}
}

// --trusted-proxies / CREWCAST_TRUSTED_PROXIES: comma-separated CIDRs (a
// bare address is its own /32 or /128); one that does not parse stops
// start-up naming it.
func TestTrustedProxiesFlagAndEnv(t *testing.T) {
	parse := func(args ...string) ([]string, error) {
		t.Helper()
		fs := newFlagSet("serve", io.Discard)
		f := bindServerFlags(fs, "")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(io.Discard)
		var out []string
		for _, p := range cfg.TrustedProxies {
			out = append(out, p.String())
		}
		return out, err
	}
	if got, err := parse(); err != nil || len(got) != 0 {
		t.Fatalf("default = %v, %v; want none", got, err)
	}
	t.Setenv("CREWCAST_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7,fd00::/8")
	if got, err := parse(); err != nil || strings.Join(got, " ") != "10.0.0.0/8 192.0.2.7/32 fd00::/8" {
		t.Fatalf("env = %v, %v", got, err)
	}
	if got, err := parse("--trusted-proxies", "127.0.0.1"); err != nil || strings.Join(got, " ") != "127.0.0.1/32" {
		t.Fatalf("flag over env = %v, %v", got, err)
	}
	t.Setenv("CREWCAST_TRUSTED_PROXIES", "10.0.0.0/33")
	if _, err := parse(); err == nil || !strings.Contains(err.Error(), "10.0.0.0/33") {
		t.Fatalf("bad env: %v", err)
	}
}

// --stream-max-lifetime (CREWCAST_STREAM_MAX_LIFETIME) reaches the server's
// configuration; the flag wins over the environment.
func TestStreamMaxLifetimeFlagAndEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		args []string
		want time.Duration
	}{
		{"", nil, 15 * time.Minute},
		{"5m", nil, 5 * time.Minute},
		{"5m", []string{"--stream-max-lifetime", "1h"}, time.Hour},
	} {
		t.Setenv("CREWCAST_STREAM_MAX_LIFETIME", c.env)
		fs := newFlagSet("serve", io.Discard)
		f := bindServerFlags(fs, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(io.Discard)
		if err != nil || cfg.StreamMaxLifetime != c.want {
			t.Errorf("env %q args %v: StreamMaxLifetime %v, %v; want %v", c.env, c.args, cfg.StreamMaxLifetime, err, c.want)
		}
	}
}

func TestOptOutAndHelpReplyFlagsAndEnv(t *testing.T) {
	for _, c := range []struct {
		optEnv, helpEnv string
		args            []string
		opt, help       string
		bad             bool
	}{
		{"", "", nil, "provider", "", false},
		{"off", "", nil, "off", "", false},
		{"You are unsubscribed.", "Crew alerts. Reply STOP to end.", nil, "You are unsubscribed.", "Crew alerts. Reply STOP to end.", false},
		{"off", "", []string{"--opt-out-reply", "Bye.", "--help-reply", "Help text"}, "Bye.", "Help text", false},
		{"", "", []string{"--opt-out-reply", "  "}, "", "", true},
	} {
		t.Setenv("CREWCAST_OPT_OUT_REPLY", c.optEnv)
		t.Setenv("CREWCAST_HELP_REPLY", c.helpEnv)
		fs := newFlagSet("serve", io.Discard)
		f := bindServerFlags(fs, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config(io.Discard)
		if c.bad {
			if err == nil {
				t.Errorf("env %q args %v: accepted", c.optEnv, c.args)
			}
			continue
		}
		if err != nil || cfg.OptOutReply != c.opt || cfg.HelpReply != c.help {
			t.Errorf("env %q %q args %v: OptOutReply %q HelpReply %q, %v; want %q %q", c.optEnv, c.helpEnv, c.args, cfg.OptOutReply, cfg.HelpReply, err, c.opt, c.help)
		}
	}
}
