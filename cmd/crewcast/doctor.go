package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
	"github.com/crewcast/crewcast/store/sqlite"
)

func init() {
	register(command{name: "doctor", summary: "check a server configuration without starting it", run: runDoctor})
	register(command{name: "healthcheck", summary: "exit 0 when a running server answers /readyz (container HEALTHCHECK)", run: runHealthcheck})
}

// finding is one line of the doctor's report.
type finding struct {
	level string // "ok", "warn" or "FAIL"
	area  string
	text  string
}

// runDoctor checks what serve would run with (the same flags and
// environment): the configuration itself, the database (reachable,
// migrated, sound), the provider credentials (one read-only API call), the
// webhook signing key, and the public URL (reachable from here). It starts
// nothing, sends nothing and changes nothing, and exits non-zero when it
// finds a problem.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("doctor", stderr)
	f := bindServerFlags(fs, "./crewcast.db")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on each network check")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d := &doctor{client: &http.Client{Timeout: *timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	cfg, err := f.config(io.Discard)
	if err == nil {
		_, err = server.New(cfg) // validates only; starts nothing
	}
	if err != nil {
		d.fail("configuration", err.Error())
	} else {
		d.ok("configuration", fmt.Sprintf("provider %s, database %s", cfg.Provider, redactURL(cfg.DB)))
	}
	d.database(ctx, f.db)
	d.hashKey(ctx, f.db, []byte(f.hashKey))
	d.provider(ctx, cfg)
	d.publicURL(ctx, cfg)

	problems := 0
	for _, x := range d.found {
		fmt.Fprintf(stdout, "%-5s %-13s %s\n", x.level, x.area+":", x.text)
		if x.level == "FAIL" {
			problems++
		}
	}
	if problems > 0 {
		return fmt.Errorf("%d problem(s) found", problems)
	}
	fmt.Fprintln(stdout, "no problems found")
	return nil
}

type doctor struct {
	client *http.Client
	found  []finding
}

func (d *doctor) ok(area, text string)   { d.found = append(d.found, finding{"ok", area, text}) }
func (d *doctor) warn(area, text string) { d.found = append(d.found, finding{"warn", area, text}) }
func (d *doctor) fail(area, text string) { d.found = append(d.found, finding{"FAIL", area, text}) }

func (d *doctor) database(ctx context.Context, db string) {
	if isPostgresURL(db) {
		d.postgres(ctx, db)
		return
	}
	if _, err := os.Stat(db); errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(db)
		probe, err := os.CreateTemp(dir, ".crewcast-doctor-*")
		if err != nil {
			d.fail("database", fmt.Sprintf("%s does not exist and its directory %s is not writable (%v): serve could not create it", db, dir, err))
			return
		}
		probe.Close()
		os.Remove(probe.Name())
		d.warn("database", fmt.Sprintf("%s does not exist yet; serve (or crewcast migrate) will create it", db))
		return
	}
	info, err := sqlite.Inspect(ctx, db)
	if err != nil {
		d.fail("database", fmt.Sprintf("cannot read %s: %v", db, err))
		return
	}
	switch {
	case info.Integrity != "ok":
		d.fail("database", fmt.Sprintf("%s is damaged (integrity check: %s); restore the last backup", db, info.Integrity))
	case info.Version == 0:
		d.fail("database", fmt.Sprintf("%s is not a migrated crewcast database; run crewcast migrate --db %s (or check the path)", db, db))
	case info.Version < info.Latest:
		d.fail("database", fmt.Sprintf("%s is at schema version %d, this build needs %d; run crewcast migrate", db, info.Version, info.Latest))
	case info.Version > info.Latest:
		d.fail("database", fmt.Sprintf("%s is at schema version %d, newer than this build knows (%d); run the newer crewcast", db, info.Version, info.Latest))
	default:
		open := ""
		if busy, err := sqlite.InUse(db); err == nil && busy {
			open = "; a process (the server?) has it open"
		}
		d.ok("database", fmt.Sprintf("SQLite %s, schema version %d (current), integrity ok, %d groups%s", db, info.Version, info.Groups, open))
	}
}

func (d *doctor) postgres(ctx context.Context, db string) {
	ctx, cancel := context.WithTimeout(ctx, d.client.Timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		d.fail("database", fmt.Sprintf("cannot connect to PostgreSQL at %s: %v", redactURL(db), err))
		return
	}
	defer conn.Close(context.Background())
	latest, err := postgres.LatestMigration()
	if err != nil {
		d.fail("database", err.Error())
		return
	}
	var v int64
	err = conn.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v)
	switch {
	case err != nil && strings.Contains(err.Error(), "goose_db_version"):
		d.fail("database", "PostgreSQL answers but holds no crewcast schema; run crewcast migrate")
	case err != nil:
		d.fail("database", fmt.Sprintf("PostgreSQL answers but reading the schema version failed: %v", err))
	case v < latest:
		d.fail("database", fmt.Sprintf("PostgreSQL schema at version %d, this build needs %d; run crewcast migrate", v, latest))
	case v > latest:
		d.fail("database", fmt.Sprintf("PostgreSQL schema at version %d, newer than this build knows (%d); run the newer crewcast", v, latest))
	default:
		d.ok("database", fmt.Sprintf("PostgreSQL %s, schema version %d (current)", redactURL(db), v))
	}
}

// hashKey says where the key of the number hash (which keeps an erased
// person's opt-out) comes from, reading the database's stored key.
func (d *doctor) hashKey(ctx context.Context, db string, configured []byte) {
	var stored []byte
	var err error
	if isPostgresURL(db) {
		stored, err = d.postgresServerKey(ctx, db)
	} else if _, serr := os.Stat(db); serr == nil {
		stored, err = sqlite.StoredServerKey(ctx, db, store.HashKeyName)
	}
	if err != nil {
		d.warn("hash key", fmt.Sprintf("cannot read the stored hash key: %v", err))
		return
	}
	switch source, differs := server.HashKeySource(configured, stored); {
	case differs:
		d.warn("hash key", "configured (CREWCAST_HASH_KEY), and it differs from the one stored in the database: opt-outs kept under the stored key still block sends, but new hashes no longer match old ones; leave CREWCAST_HASH_KEY unset to use the stored key")
	case source == server.HashKeyConfigured:
		d.ok("hash key", "configured (CREWCAST_HASH_KEY)")
	case source == server.HashKeyStored:
		d.ok("hash key", "generated and stored in the database (in every backup; shared by every node)")
	default:
		d.warn("hash key", "missing: the server generates one and stores it in the database on its first start")
	}
}

// postgresServerKey reads the stored hash key over a connection of its
// own; nil when none is stored or the schema has no server_keys table.
func (d *doctor) postgresServerKey(ctx context.Context, db string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, d.client.Timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return nil, nil // the database check already says so
	}
	defer conn.Close(context.Background())
	var key []byte
	err = conn.QueryRow(ctx, `SELECT value FROM server_keys WHERE name = $1`, store.HashKeyName).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "server_keys")) {
		return nil, nil
	}
	return key, err
}

// provider checks the signing key's form and makes one read-only API call
// (fetch a message that does not exist): 404 means the credentials were
// accepted, 401/403 that they were not.
func (d *doctor) provider(ctx context.Context, cfg server.Config) {
	switch cfg.Provider {
	case server.ProviderTelnyx:
		if _, err := telnyx.ParsePublicKey(cfg.TelnyxPublicKey); err != nil {
			d.fail("signing key", fmt.Sprintf("CREWCAST_TELNYX_PUBLIC_KEY is not a Telnyx webhook public key (%v); copy it from the Telnyx portal (Keys & Credentials → Public Key)", err))
		} else {
			d.ok("signing key", "CREWCAST_TELNYX_PUBLIC_KEY is a well-formed Ed25519 public key")
		}
		if cfg.TelnyxAPIKey == "" {
			d.fail("provider", "CREWCAST_TELNYX_API_KEY is not set")
			return
		}
		base := strings.TrimRight(orDefault(cfg.TelnyxAPIBase, telnyx.DefaultAPIBase), "/")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v2/messages/00000000-0000-0000-0000-000000000000", nil)
		if err != nil {
			d.fail("provider", fmt.Sprintf("Telnyx API base %q: %v", base, err))
			return
		}
		req.Header.Set("Authorization", "Bearer "+cfg.TelnyxAPIKey)
		d.credentials(req, "Telnyx", "CREWCAST_TELNYX_API_KEY")
	case server.ProviderTwilio:
		if len(cfg.TwilioAuthToken) != 32 || !isHex(cfg.TwilioAuthToken) {
			d.warn("signing key", "CREWCAST_TWILIO_AUTH_TOKEN is not 32 hexadecimal characters, the form Twilio issues; webhooks signed with the real token will fail")
		} else {
			d.ok("signing key", "CREWCAST_TWILIO_AUTH_TOKEN has the form Twilio issues")
		}
		if cfg.TwilioAccountSID == "" {
			d.fail("provider", "CREWCAST_TWILIO_ACCOUNT_SID is not set")
			return
		}
		base := strings.TrimRight(orDefault(cfg.TwilioAPIBase, twilio.DefaultAPIBase), "/")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			base+"/2010-04-01/Accounts/"+url.PathEscape(cfg.TwilioAccountSID)+"/Messages/SM00000000000000000000000000000000.json", nil)
		if err != nil {
			d.fail("provider", fmt.Sprintf("Twilio API base %q: %v", base, err))
			return
		}
		req.SetBasicAuth(cfg.TwilioAccountSID, cfg.TwilioAuthToken)
		d.credentials(req, "Twilio", "CREWCAST_TWILIO_ACCOUNT_SID and CREWCAST_TWILIO_AUTH_TOKEN")
	case server.ProviderDemo:
		d.ok("provider", "demo: the in-process simulator, nothing to check (it sends no real messages)")
	}
}

func (d *doctor) credentials(req *http.Request, name, vars string) {
	resp, err := d.client.Do(req)
	if err != nil {
		d.fail("provider", fmt.Sprintf("cannot reach the %s API at %s: %v", name, req.URL.Host, err))
		return
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusOK:
		d.ok("provider", fmt.Sprintf("%s accepted the credentials (read-only call to %s)", name, req.URL.Host))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		d.fail("provider", fmt.Sprintf("%s refused the credentials (%s): check %s", name, resp.Status, vars))
	default:
		d.fail("provider", fmt.Sprintf("%s answered %s to a read-only call; cannot tell whether the credentials work", name, resp.Status))
	}
}

// publicURL checks that the origin providers post webhooks to reaches a
// crewcast (/healthz), from this machine.
func (d *doctor) publicURL(ctx context.Context, cfg server.Config) {
	if cfg.PublicURL == "" {
		if cfg.Provider == server.ProviderDemo {
			d.ok("public URL", "not set; the demo simulator posts to the listen address")
		} else {
			d.warn("public URL", fmt.Sprintf("not set: webhooks must reach the listen address %s directly; set --public-url when a proxy or load balancer is in front", cfg.Addr))
		}
		return
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.fail("public URL", fmt.Sprintf("%q is not an absolute http(s) URL such as https://crewcast.example.com", cfg.PublicURL))
		return
	}
	if u.Scheme == "http" && cfg.Provider != server.ProviderDemo && !isLoopbackHost(u.Hostname()) {
		d.warn("public URL", "uses http: providers' webhooks and sign-in cookies travel unencrypted; use https")
	}
	target := strings.TrimRight(cfg.PublicURL, "/") + "/healthz"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		d.fail("public URL", err.Error())
		return
	}
	resp, err := d.client.Do(req)
	if err != nil {
		d.fail("public URL", fmt.Sprintf("cannot reach %s from here (%v): providers post webhooks there; check DNS, TLS, the proxy, and that crewcast is running", target, err))
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		d.fail("public URL", fmt.Sprintf("%s answered %s: does the proxy route to crewcast?", target, resp.Status))
		return
	}
	d.ok("public URL", target+" answers")
}

func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("healthcheck", stderr)
	target := fs.String("url", "http://127.0.0.1:8080/readyz", "readiness URL of the server")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *target, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("not ready: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("not ready: %s answered %s", *target, resp.Status)
	}
	fmt.Fprintln(stdout, "ready")
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func isLoopbackHost(h string) bool {
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// redactURL hides a password in a database URL.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
