// Command peers compares crewcast with other projects in one run, on the
// same harness, and prints "RESULT <name> <value> <unit>" lines on
// stdout; progress goes to stderr. It is its own Go module so that
// crewcast does not depend on what it is compared with.
//
//	cd bench/peers && go run .                 # both comparisons
//	cd bench/peers && go run . -run actors     # actor runtime vs protoactor-go
//	cd bench/peers && go run . -run river      # webhook jobs: crewcast vs River (PostgreSQL)
//
// The River comparison needs CREWCAST_TEST_POSTGRES (a postgres:// URL);
// it works in two fresh schemas and drops them at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
)

type config struct {
	run     []string
	profile string // directory for CPU profiles; "" = none

	tellN      int
	tellRounds int
	idleN      int

	riverN       int
	riverClients int
	riverWorkers int
	pgURL        string

	// worker measures one runtime's idle actors in a child process.
	worker string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runList := fs.String("run", "actors,river", "comparisons to run, comma-separated")
	fs.StringVar(&c.profile, "profile", "", "write CPU profiles of each runtime's single-sender tell rounds to this directory")
	fs.IntVar(&c.tellN, "tell-n", 2_000_000, "messages per tell round")
	fs.IntVar(&c.tellRounds, "tell-rounds", 3, "tell rounds per runtime (the best counts)")
	fs.IntVar(&c.idleN, "idle-n", 100_000, "idle actors whose memory is measured")
	fs.IntVar(&c.riverN, "river-n", 10_000, "webhooks (and recipients) per side of the River comparison")
	fs.IntVar(&c.riverClients, "river-clients", 64, "concurrent webhook clients in the River comparison")
	fs.IntVar(&c.riverWorkers, "river-workers", 50, "River queue workers")
	fs.StringVar(&c.pgURL, "postgres", os.Getenv("CREWCAST_TEST_POSTGRES"), "PostgreSQL URL for the River comparison (env CREWCAST_TEST_POSTGRES)")
	fs.StringVar(&c.worker, "worker", "", "internal: measure idle actors of one runtime (ours|protoactor)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	known := []string{"actors", "river"}
	for _, s := range strings.Split(*runList, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(known, s) {
			return c, fmt.Errorf("unknown comparison %q (want %s)", s, strings.Join(known, ", "))
		}
		c.run = append(c.run, s)
	}
	return c, nil
}

// reporter prints RESULT lines and progress.
type reporter struct {
	out, log io.Writer
}

func (r reporter) result(name string, value float64, unit string) {
	fmt.Fprintf(r.out, "RESULT %s %s %s\n", name, strconv.FormatFloat(value, 'f', prec(value), 64), unit)
}

// prec keeps about three significant digits below 100 and none above.
func prec(v float64) int {
	switch a := max(v, -v); {
	case a >= 100:
		return 0
	case a >= 10:
		return 1
	case a >= 1:
		return 2
	default:
		return 3
	}
}

func (r reporter) progress(format string, args ...any) {
	fmt.Fprintf(r.log, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep := reporter{out: stdout, log: stderr}
	if c.worker != "" {
		return idleWorker(c, stdout)
	}
	for _, s := range c.run {
		start := time.Now()
		rep.progress("%s: start", s)
		var err error
		switch s {
		case "actors":
			err = compareActors(ctx, c, rep)
		case "river":
			err = compareRiver(ctx, c, rep)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		rep.progress("%s: done in %s", s, time.Since(start).Round(time.Second))
	}
	return nil
}

// profiled runs fn under the CPU profiler when dir is set, writing
// <dir>/<name>.pprof.
func profiled(dir, name string, fn func() error) error {
	if dir == "" {
		return fn()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	err = fn()
	pprof.StopCPUProfile()
	return err
}
