// Command chaos is crewcast's reliability harness (docs/reliability.md,
// docs/testing.md T1, T2, T5, T6, T7, T10, T11, T14 (kill -9 while follow-ups fire), T18 (kill -9 while callouts fill), T17 (two providers: outages and kill -9 under a pool group), T19 (kill -9 while calls are placed and mail is sent) and, with several
// nodes, T8, T12, T13; T16 on a PostgreSQL primary/standby pair). It builds crewcast, runs the
// provider simulator and the server as separate processes on loopback,
// kills, corrupts and starves the server, and checks from the outside —
// the simulator's ledger, the webhooks the server acknowledged, the API —
// that no acknowledged webhook is lost and no recipient is sent twice.
//
// It ends with one line:
//
//	CHAOS iterations=<n> acked_webhooks=<n> lost=<n> duplicate_sends=<n> unconfirmed=<n> p99_ack_ms=<n>
//
// and exits non-zero when any check failed. `make chaos` runs the short
// version; CREWCAST_CHAOS_ITERATIONS and CREWCAST_CHAOS_SOAK lengthen it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the run's configuration: flags, each defaulting to an
// environment variable.
type config struct {
	bin        string
	moduleRoot string
	workDir    string
	keep       bool
	seed       int64
	iterations int
	soak       time.Duration
	only       map[string]bool
	race       bool
	pgURL      string
	timeout    time.Duration
	allowSkip  bool // a scenario that cannot run here is reported, not failed
}

// scenarios in the order they run.
var scenarios = []struct {
	name string
	run  func(context.Context, *harness) scenarioResult
}{
	{"T1", runT1},
	{"T2", runT2},
	{"T5", runT5},
	{"T11", runT11},
	{"T14", runT14},
	{"T18", runT18},
	{"T17", runT17},
	{"T19", runT19},
	{"T6", runT6},
	{"T7", runT7},
	{"T10", runT10},
	{"T8", runT8},
	{"T12", runT12},
	{"T13", runT13},
	{"T16", runT16},
}

func parseConfig(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var only string
	fs.StringVar(&c.bin, "bin", os.Getenv("CREWCAST_CHAOS_BIN"), "crewcast binary to test (default: build one) (CREWCAST_CHAOS_BIN)")
	fs.StringVar(&c.workDir, "dir", os.Getenv("CREWCAST_CHAOS_DIR"), "work directory for databases and logs (default: a new temp dir) (CREWCAST_CHAOS_DIR)")
	fs.BoolVar(&c.keep, "keep", envBool("CREWCAST_CHAOS_KEEP"), "keep the work directory even when every check passed (CREWCAST_CHAOS_KEEP)")
	fs.Int64Var(&c.seed, "seed", envInt64("CREWCAST_CHAOS_SEED", time.Now().UnixNano()%1_000_000), "seed for kill points, sizes and the simulator (CREWCAST_CHAOS_SEED)")
	fs.IntVar(&c.iterations, "iterations", int(envInt64("CREWCAST_CHAOS_ITERATIONS", 20)), "T1 kill -9 iterations (CREWCAST_CHAOS_ITERATIONS)")
	fs.DurationVar(&c.soak, "soak", envDuration("CREWCAST_CHAOS_SOAK", 60*time.Second), "T10 soak duration (CREWCAST_CHAOS_SOAK)")
	fs.StringVar(&only, "only", os.Getenv("CREWCAST_CHAOS_ONLY"), "comma-separated scenarios to run, e.g. T1,T6 (CREWCAST_CHAOS_ONLY; default all)")
	fs.BoolVar(&c.race, "race", envBool("CREWCAST_CHAOS_RACE"), "build crewcast with the race detector (CREWCAST_CHAOS_RACE)")
	fs.StringVar(&c.pgURL, "postgres", envOr("CREWCAST_TEST_POSTGRES", "postgres://root@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server for T7; a fresh database is created on it (CREWCAST_TEST_POSTGRES)")
	fs.DurationVar(&c.timeout, "timeout", envDuration("CREWCAST_CHAOS_TIMEOUT", 0), "hard limit for the whole run (default: scaled to iterations and soak)")
	fs.BoolVar(&c.allowSkip, "allow-skip", envBool("CREWCAST_CHAOS_ALLOW_SKIP"), "report a scenario this machine cannot run as NOT RUN and still exit 0 (default: it fails the run) (CREWCAST_CHAOS_ALLOW_SKIP)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.iterations < 0 || c.soak < 0 {
		return c, fmt.Errorf("iterations and soak must not be negative")
	}
	if only != "" {
		c.only = map[string]bool{}
		for s := range strings.SplitSeq(only, ",") {
			if s = strings.ToUpper(strings.TrimSpace(s)); s != "" {
				c.only[s] = true
			}
		}
	}
	if c.timeout == 0 {
		// + 2 minutes for T17 (its own simulator and server, 4 iterations
		// of a 7-13 s pool fan-out and their settling).
		c.timeout = 8*time.Minute + time.Duration(c.iterations)*20*time.Second + 2*c.soak
		if c.only == nil || c.only["T16"] { // T16's failovers take about 9 s each
			c.timeout += time.Duration(envInt64("CREWCAST_CHAOS_HA_ITERATIONS", 20)) * 15 * time.Second
		}
	}
	root, err := moduleRoot()
	if err != nil && c.bin == "" {
		return c, err
	}
	c.moduleRoot = root
	return c, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	cfg, err := parseConfig(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	h, err := newHarness(cfg, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
		return 2
	}
	// Every exit path, a panic included, ends the processes started.
	defer h.cleanup()
	defer func() {
		if r := recover(); r != nil {
			h.cleanup()
			panic(r)
		}
	}()
	h.logf("chaos run: seed=%d iterations=%d soak=%s dir=%s", cfg.seed, cfg.iterations, cfg.soak, h.dir)
	if err := h.build(ctx); err != nil {
		fmt.Fprintln(stderr, "chaos: build:", err)
		return 2
	}
	if err := h.startSim(ctx); err != nil {
		fmt.Fprintln(stderr, "chaos: simulator:", err)
		return 2
	}
	for _, sc := range scenarios {
		if cfg.only != nil && !cfg.only[sc.name] {
			continue
		}
		if ctx.Err() != nil {
			h.results = append(h.results, scenarioResult{name: sc.name, problems: []string{"not started: " + context.Cause(ctx).Error()}})
			continue
		}
		start := time.Now()
		h.logf("== %s", sc.name)
		res := sc.run(ctx, h)
		res.name, res.took = sc.name, time.Since(start)
		h.results = append(h.results, res)
		verdict := "PASS"
		switch {
		case !res.ran:
			verdict = "NOT RUN"
		case len(res.problems) > 0:
			verdict = "FAIL"
		}
		h.logf("== %s %s in %s", sc.name, verdict, res.took.Round(time.Millisecond))
	}

	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	line, problems := h.summary(sctx)
	failed := len(problems) > 0
	fmt.Fprintln(stdout, "\nscenario results:")
	var notRun []string
	for _, r := range h.results {
		verdict, bad := verdictOf(r, cfg.allowSkip)
		failed = failed || bad
		if !r.ran {
			notRun = append(notRun, r.name)
		}
		fmt.Fprintf(stdout, "  %-4s %-8s %6.1fs\n", r.name, verdict, r.took.Seconds())
		for _, n := range r.notes {
			fmt.Fprintf(stdout, "         %s\n", n)
		}
		for i, p := range r.problems {
			if i == 30 {
				fmt.Fprintf(stdout, "         … and %d more problems\n", len(r.problems)-30)
				break
			}
			fmt.Fprintf(stdout, "         ! %s\n", p)
		}
	}
	if len(notRun) > 0 {
		fmt.Fprintf(stdout, "NOT RUN on this machine: %s (%s)\n", strings.Join(notRun, ", "), skipPolicy(cfg.allowSkip))
	}
	for _, p := range problems {
		fmt.Fprintf(stdout, "  ! %s\n", p)
	}
	h.dumpRecords()
	if failed || cfg.keep {
		fmt.Fprintf(stdout, "logs and databases kept in %s\n", h.dir)
	}
	h.cleanup()
	if !failed && !cfg.keep && cfg.workDir == "" {
		_ = os.RemoveAll(h.dir)
	}
	fmt.Fprintln(stdout, line)
	if failed {
		return 1
	}
	return 0
}

// verdictOf is a scenario's line in the summary and whether it fails the
// run. A scenario this machine could not run fails it unless skipping was
// asked for (-allow-skip): a run by hand without PostgreSQL or root must not
// read as a pass.
func verdictOf(r scenarioResult, allowSkip bool) (string, bool) {
	switch {
	case !r.ran && allowSkip:
		return "NOT RUN", false
	case !r.ran:
		return "NOT RUN (fails: no -allow-skip)", true
	case len(r.problems) > 0:
		return "FAIL", true
	}
	return "PASS", false
}

func skipPolicy(allowSkip bool) string {
	if allowSkip {
		return "allowed by -allow-skip"
	}
	return "this fails the run; pass -allow-skip or CREWCAST_CHAOS_ALLOW_SKIP=1 to skip knowingly"
}

// moduleRoot finds the directory holding crewcast's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run from inside the crewcast module (or pass -bin)")
	}
	return filepath.Dir(mod), nil
}

// runCmd runs a command in dir, passing its output through on failure.
func runCmd(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envBool(name string) bool {
	v, _ := strconv.ParseBool(os.Getenv(name))
	return v
}

func envInt64(name string, def int64) int64 {
	if v, err := strconv.ParseInt(strings.TrimSpace(os.Getenv(name)), 10, 64); err == nil {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return def
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d
	}
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second
	}
	return def
}
