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

	"github.com/crewcast/crewcast/bench/internal/harness"
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
	var err error
	c.run, err = harness.Scenarios(*runList, "comparison", []string{"actors", "river"})
	return c, err
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep := harness.Reporter{Out: stdout, Log: stderr}
	if c.worker != "" {
		return idleWorker(c, stdout)
	}
	steps := map[string]func(context.Context, config, harness.Reporter) error{
		"actors": compareActors, "river": compareRiver,
	}
	return rep.RunEach(c.run, func(s string) error { return steps[s](ctx, c, rep) })
}
