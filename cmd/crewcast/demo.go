package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/tracker"
)

func init() {
	register(command{name: "demo", summary: "run crewcast with the built-in demo provider and an example group", run: runDemo})
}

// demoFrom is the demo's sender number (a fictional 555-01xx number).
const demoFrom = "+15550100000"

// demoCrew is the example group: a field crew, with a few fates fixed so the
// board always shows every outcome (the rest follow the simulator's rates).
var demoCrew = []struct {
	number, name, fate string
}{
	{"+15550100101", "Ana Ruiz (foreman)", "reply:YES"},
	{"+15550100102", "Ben Okafor", "reply:YES, on my way"},
	{"+15550100103", "Chen Li", "fail:40008"},
	{"+15550100104", "Dana Kowalski", "reply:NO"},
	{"+15550100105", "Eli Haddad", "unknown"},
	{"+15550100106", "Fatima Noor", "reply:running late"},
	{"+15550100107", "Gus Petersen", "accept_timeout:silent"},
	{"+15550100108", "Hana Sato", "deliver"},
	{"+15550100109", "Ivan Morales", ""},
	{"+15550100110", "Jo Whitfield", ""},
	{"+15550100111", "Kai Mensah", ""},
	{"+15550100112", "Lena Brandt", ""},
}

// demoWalkthrough are the numbers the README's walkthrough sends to: the
// demo always delivers to them (the first also replies), so the
// walkthrough ends the same way every time. Other numbers outside the
// example crew follow the simulator's rates.
var demoWalkthrough = map[string]string{"+15550100001": "reply:YES", "+15550100002": "deliver"}

// DemoFaults returns the demo simulator's behaviour: lifelike rates plus
// the scripted fates of the example crew and the walkthrough's numbers.
func demoFaults() sim.Faults {
	f := sim.DemoFaults()
	f.Script = map[string]string{}
	for _, c := range demoCrew {
		if c.fate != "" {
			f.Script[c.number] = c.fate
		}
	}
	for n, fate := range demoWalkthrough {
		f.Script[n] = fate
	}
	return f
}

// The demo's timing (shown by demo -h, so it must match what runDemo sets).
const (
	demoCheckAfter      = 20 * time.Second
	demoDeadline        = 90 * time.Second
	demoProviderTimeout = 5 * time.Second
)

// demoFlagDocs are the demo's flags for -h, with their environment
// variables.
var demoFlagDocs = []flagSection{{"Flags", []envBinding{
	{"data", ""}, {"addr", "CREWCAST_ADDR"}, {"admin-key", "CREWCAST_ADMIN_KEY"}, {"no-example", ""},
	{"log-level", "CREWCAST_LOG_LEVEL"}, {"log-format", "CREWCAST_LOG_FORMAT"}, {"db", ""},
}}}

func demoUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintf(w, `Usage: crewcast demo [flags]

Runs the server with the built-in demo provider: nothing real is sent. A
simulator of Telnyx answers each send and posts signed webhooks back, as
Telnyx would: a receipt 0.5 to 2.5 s after the send; about 8%% of messages
fail, 5%% end "unknown" (the carrier reports no final outcome), 60%% of
recipients reply. A send the simulator holds open is "unconfirmed" after %s.
Status checks start %s after sending; a recipient still without a receipt
after %s is marked unknown. Every outcome shows within about 6 seconds.

The example crew (+15550100101 to +15550100112) has fixed fates, so the
board shows every outcome; +15550100001 (replies YES) and +15550100002 are
always delivered; any other number follows the rates above.

It prints the board URL, an admin key, and two lines to paste into another
terminal so that client commands (send, status, ...) talk to it:
  export CREWCAST_URL=http://127.0.0.1:8080
  export CREWCAST_KEY=cc_...

It also prints the simulator's address and control token: its /sim/...
routes (GET /sim/ledger, POST /sim/inbound to text a reply as a recipient,
/sim/faults) answer only with "Authorization: Bearer <token>", only JSON
bodies, and no requests from web pages of other origins.

Without --data the database lives in a temporary directory that is removed
when the demo stops. With --data DIR the database and the admin key stay in
DIR and the next run with the same DIR starts where this one stopped.

`, demoProviderTimeout, demoCheckAfter, demoDeadline)
	printFlagSections(w, fs, demoFlagDocs)
	fmt.Fprint(w, `Examples:
  crewcast demo                          # a throw-away demo
  crewcast demo --data ./crewcast-demo   # keep its data and key across runs
`)
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	data := fs.String("data", "", "keep the database and admin key in this directory across runs (default: a temporary one, removed on exit)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	adminKey := fs.String("admin-key", "", "use this admin key (default: a new one, kept in --data when given)")
	noExample := fs.Bool("no-example", false, "do not create the example group")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	logFormat := fs.String("log-format", "text", "log format: json (one object per line, the banner too) or text")
	db := fs.String("db", "", "a SQLite path or postgres:// URL instead of the one in --data")
	fs.Usage = func() { demoUsage(fs) }
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := applyEnv(fs, sectionBindings(demoFlagDocs)); err != nil {
		return err
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return usagef("%v", err)
	}
	stdout = bannerWriter(stdout, *logFormat)
	dir, temporary := *data, *data == ""
	if temporary {
		removeStaleDemoDirs(bannerWriter(stderr, *logFormat))
		d, err := os.MkdirTemp("", demoTempPrefix)
		if err != nil {
			return err
		}
		dir = d
		defer os.RemoveAll(dir)
		if err := os.WriteFile(filepath.Join(dir, demoPIDFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if *db == "" {
		*db = filepath.Join(dir, "crewcast.db")
	}
	_, statErr := os.Stat(*db)
	fresh := errors.Is(statErr, os.ErrNotExist) || isPostgres(*db)
	key := *adminKey
	if key == "" {
		var err error
		if key, err = demoAdminKey(dir, temporary); err != nil {
			return err
		}
	}
	faults := demoFaults()
	cfg := server.Config{
		Addr: *addr, DB: *db, Provider: server.ProviderDemo, AdminKey: key, DemoFaults: &faults,
		// Demo pacing off and quick checks: outcomes show within seconds.
		SendRate: 0, ProviderTimeout: demoProviderTimeout,
		Settings: group.Settings{CheckAfter: demoCheckAfter, Deadline: demoDeadline},
		Logger:   logger,
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return portInUse(err, *addr)
	}
	where := "kept in " + dir + " (run again with --data " + dir + " to continue)"
	if temporary {
		where = "temporary: removed when the demo stops (--data DIR keeps it)"
	}
	fmt.Fprintln(stdout, "crewcast demo is running. DEMO PROVIDER: nothing real is sent; a built-in simulator answers.")
	fmt.Fprintf(stdout, "\n  board:     %s/\n  admin key: %s\n  database:  %s\n             %s\n", srv.URL(), key, dbLabel(cfg.DB), where)
	if sm := srv.Sim(); sm != nil {
		fmt.Fprintf(stdout, "  simulator: %s (control token %s)\n", sm.URL(), sm.ControlToken())
	}
	if err := demoFirstRun(ctx, srv, stdout, fresh, !*noExample); err != nil {
		_ = srv.Stop(context.Background())
		return err
	}
	fmt.Fprintf(stdout, "\nFor the command line (crewcast send, status, ...), paste into another terminal:\n\n")
	fmt.Fprintf(stdout, "export CREWCAST_URL=%s\nexport CREWCAST_KEY=%s\n\n", srv.URL(), key)
	fmt.Fprintln(stdout, "Sign in to the board with the admin key. Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down…")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return srv.Stop(sctx)
}

// demoFirstRun sets up what a fresh database gets (a sender pool on both
// simulated providers, docs/design.md §16, and the example group) and
// says what it did.
func demoFirstRun(ctx context.Context, srv *server.Server, stdout io.Writer, fresh, example bool) error {
	if fresh {
		if err := srv.EnsureDemoPool(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  sender pool: %q (2 Telnyx + 2 Twilio numbers; send with \"pool\":%q)\n", server.DemoPool, server.DemoPool)
	}
	if example && fresh {
		req := group.Request{From: demoFrom, Mode: crewcast.ModeIndividual,
			Text: "Crew call: site B, 7:00 tomorrow. Reply YES if you can make it, NO if not."}
		for _, c := range demoCrew {
			req.Recipients = append(req.Recipients, group.RecipientInput{Number: c.number, Name: c.name})
		}
		id, _, err := srv.Tracker().Create(ctx, req, tracker.CreateOptions{By: "demo"})
		if err != nil {
			return fmt.Errorf("create the example group: %w", err)
		}
		fmt.Fprintf(stdout, "  example group: %s/#/groups/%s\n", srv.URL(), id)
	} else if example {
		fmt.Fprintln(stdout, "  example group: created on the first run with this database (see the board)")
	}
	return nil
}

// demoAdminKey returns the demo's admin key: with --data the one kept in
// the directory (made on the first run, readable only by its owner), else
// a new one.
func demoAdminKey(dir string, temporary bool) (string, error) {
	path := filepath.Join(dir, demoKeyFile)
	if !temporary {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b)), nil
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("read the demo's admin key: %w", err)
		}
	}
	key, _, err := apikey.Generate(rand.Reader, "demo admin", []apikey.Scope{apikey.ScopeAdmin}, time.Now())
	if err != nil {
		return "", err
	}
	if !temporary {
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("keep the demo's admin key: %w", err)
		}
	}
	return key, nil
}

// Files of the demo's directory.
const (
	demoTempPrefix = "crewcast-demo-"
	demoPIDFile    = "demo.pid"
	demoKeyFile    = "admin-key"
)

// removeStaleDemoDirs removes the temporary directories of earlier demos
// that did not get to clean up (killed): those whose recorded process is
// gone. A directory without a readable pid is left alone.
func removeStaleDemoDirs(stderr io.Writer) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), demoTempPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, demoPIDFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if os.RemoveAll(d) == nil {
			fmt.Fprintf(stderr, "removed %s, left behind by an earlier demo\n", d)
		}
	}
}

// portInUse explains a listen address that is taken (most often by a demo
// already running) and suggests the next port; other errors stay as they
// are.
func portInUse(err error, addr string) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	host, port, splitErr := net.SplitHostPort(addr)
	n, atoiErr := strconv.Atoi(port)
	if splitErr != nil || atoiErr != nil || n <= 0 || n >= 65535 {
		return fmt.Errorf("%s is in use — is another crewcast demo running? Use --addr with another port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return fmt.Errorf("port %d is in use — is another crewcast demo running? Use --addr %s", n, net.JoinHostPort(host, strconv.Itoa(n+1)))
}
