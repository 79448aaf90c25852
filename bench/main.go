// Command bench runs crewcast's service benchmarks in-process over
// loopback HTTP and prints one "RESULT <name> <value> <unit>" line per
// figure on stdout; progress goes to stderr.
//
//	go run ./bench                       # everything, as `make bench` runs it
//	go run ./bench -run ingest,e2e       # some scenarios
//	go run ./bench -scale-n 100000       # a quicker scale step
//	go run ./bench -profile /tmp/prof    # CPU profiles of the measured windows
//	go run ./bench -run cluster -pgcost  # + PostgreSQL's cost per webhook of each side
//
// Scenarios: ingest (signed webhooks, durably acknowledged, against a bare
// net/http ceiling), e2e (webhook to event-stream latency at a fixed rate),
// fanout (a 10,000-recipient group against the simulator, pacing off),
// webhookout (outbound webhooks to a local endpoint: delivery rate and
// commit-to-delivery lag), scale (hibernated groups seeded through the store API; routing latency
// and memory at a small and a large group count; the database steps run
// in child processes of this program so each one's memory is its own),
// crews (a 50,000-row contacts import and a 100,000-person group created
// from one crew).
// pool (a pool group over 10 numbers of both providers, pacing on),
// failover (circuit open → first send through the other provider),
// cluster (webhook ingest through three nodes on one PostgreSQL ÷ through
// one, issue 15).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/crewcast/crewcast/bench/internal/harness"
)

// config is every knob of a run.
type config struct {
	run     []string
	profile string // directory for CPU profiles; "" = none
	pgCost  bool   // cluster: report PostgreSQL's cost per webhook
	tmp     string // where databases go

	ingestClients int
	ingestWarmup  time.Duration
	ingestWindow  time.Duration
	ingestGroups  int
	ingestSize    int
	ingestMax     int

	e2eRate  float64
	e2eCount int

	fanoutN        int
	fanoutReceipts bool
	fanoutStops    int

	crewsImportN int
	crewsGroupN  int
	// callout: a callout that fills (callout.go).
	calloutN, calloutNeed, calloutWave int
	// pool, failover: pools and failover (pool.go).
	poolN     int
	poolMPS   float64
	failoverN int

	scaleSmall    int
	scaleN        int
	scaleWebhooks int
	scaleRate     float64
	scaleBatch    int

	webhookN        int
	webhookRate     float64
	webhookLagCount int

	instrOnly          []string
	instrRuns          int
	instrTolerance     float64
	instrProcs         int
	instrIngestN       int
	instrIngestClients int
	instrFanoutN       int
	instrE2EN          int
	instrWorker        string // internal: run one instructions workload under callgrind
	instrN             int

	// worker runs one scale step in a child process ("seed" or "run").
	worker string
	db     string
	n      int
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runList := fs.String("run", "ingest,e2e,fanout,scale,webhookout,crews,callout,pool,failover,cluster", "scenarios to run, comma-separated (cluster needs PostgreSQL: CREWCAST_TEST_POSTGRES)")
	fs.StringVar(&c.profile, "profile", "", "write CPU profiles of the measured windows to this directory")
	fs.BoolVar(&c.pgCost, "pgcost", false, "cluster: report write transactions, WAL and PostgreSQL backend CPU per webhook of each side (the server must run on this machine)")
	fs.StringVar(&c.tmp, "tmp", "", "directory for databases (default: a new temporary directory)")
	fs.IntVar(&c.ingestClients, "ingest-clients", 128, "concurrent keep-alive webhook clients")
	fs.DurationVar(&c.ingestWarmup, "ingest-warmup", time.Second, "unmeasured warm-up per side")
	fs.DurationVar(&c.ingestWindow, "ingest-window", 10*time.Second, "measured window per side")
	fs.IntVar(&c.ingestGroups, "ingest-groups", 20, "groups the ingest webhooks are about")
	fs.IntVar(&c.ingestSize, "ingest-size", 500, "recipients per ingest group")
	fs.IntVar(&c.ingestMax, "ingest-max", 160000, "signed webhooks prepared for the durable side (each event id is used once)")
	fs.Float64Var(&c.e2eRate, "e2e-rate", 200, "webhooks per second in the end-to-end run")
	fs.IntVar(&c.e2eCount, "e2e-count", 2000, "webhooks (and recipients) in the end-to-end run")
	fs.IntVar(&c.fanoutN, "fanout-n", 10000, "recipients of the fan-out group")
	fs.BoolVar(&c.fanoutReceipts, "fanout-receipts", false, "also wait for every delivery receipt of the fan-out group")
	fs.IntVar(&c.fanoutStops, "fanout-stops", 0, "fan-out recipients who text STOP first (never sent: counted apart, not in the rate)")
	fs.IntVar(&c.crewsImportN, "crews-import-n", 50000, "CSV rows of the measured contacts import")
	fs.IntVar(&c.crewsGroupN, "crews-group-n", 100000, "people in the crew of the measured group creation")
	fs.IntVar(&c.calloutN, "callout-n", 10000, "callout: people in the callout")
	fs.IntVar(&c.calloutNeed, "callout-need", 50, "callout: people it needs")
	fs.IntVar(&c.calloutWave, "callout-wave", 200, "callout: people per wave")
	fs.IntVar(&c.poolN, "pool-n", 10000, "pool: people in the pool group (10 numbers)")
	fs.Float64Var(&c.poolMPS, "pool-mps", 100, "pool: messages per second of each of the 10 numbers")
	fs.IntVar(&c.failoverN, "failover-n", 2000, "failover: people in the group whose Telnyx numbers go down")
	fs.IntVar(&c.scaleSmall, "scale-small", 10000, "hibernated groups in the small scale run")
	fs.IntVar(&c.scaleN, "scale-n", envInt("CREWCAST_BENCH_SCALE_N", 1000000), "hibernated groups in the large scale run (env CREWCAST_BENCH_SCALE_N)")
	fs.IntVar(&c.scaleWebhooks, "scale-webhooks", 3000, "webhooks per scale run, each to a different random group")
	fs.Float64Var(&c.scaleRate, "scale-rate", 100, "webhooks per second in the scale runs")
	fs.IntVar(&c.scaleBatch, "scale-batch", 5000, "groups per store commit when seeding")
	fs.IntVar(&c.webhookN, "webhook-n", 20000, "outbound webhooks queued for the delivery-rate run")
	fs.Float64Var(&c.webhookRate, "webhook-rate", 1000, "commits per second, one outbound webhook each, in the lag run")
	fs.IntVar(&c.webhookLagCount, "webhook-lag-count", 5000, "commits in the outbound webhook lag run")
	instrOnly := fs.String("instr-workloads", "ingest,e2e,fanout", "instructions: the workloads to count, comma-separated")
	fs.IntVar(&c.instrRuns, "instr-runs", 3, "instructions: runs of each workload (the two smallest totals must agree within -instr-tolerance)")
	fs.Float64Var(&c.instrTolerance, "instr-tolerance", 0.05, "instructions: largest allowed (second smallest − smallest) ÷ smallest of a workload's totals")
	fs.IntVar(&c.instrProcs, "instr-procs", 1, "instructions: GOMAXPROCS of the measured process")
	fs.IntVar(&c.instrIngestN, "instr-ingest-n", 300, "instructions: webhooks of the ingest workload")
	fs.IntVar(&c.instrIngestClients, "instr-ingest-clients", 8, "instructions: concurrent clients of the ingest workload")
	fs.IntVar(&c.instrFanoutN, "instr-fanout-n", 100, "instructions: recipients of the fan-out workload")
	fs.IntVar(&c.instrE2EN, "instr-e2e-n", 100, "instructions: events of the end-to-end workload")
	fs.StringVar(&c.instrWorker, "instr-worker", "", "internal: run one instructions workload (ingest|fanout|e2e) in this process")
	fs.IntVar(&c.instrN, "instr-n", 0, "internal: the instructions workload's size")
	fs.StringVar(&c.worker, "worker", "", "internal: run one scale step (seed|run) in this process")
	fs.StringVar(&c.db, "db", "", "internal: the scale step's database")
	fs.IntVar(&c.n, "n", 0, "internal: the scale step's group count")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.instrOnly, err = harness.Scenarios(*instrOnly, "instructions workload", []string{"ingest", "e2e", "fanout"}); err != nil {
		return c, err
	}
	c.run, err = harness.Scenarios(*runList, "scenario", []string{"ingest", "e2e", "fanout", "scale", "webhookout", "crews", "callout", "pool", "failover", "cluster", "instructions"})
	return c, err
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep := harness.Reporter{Out: stdout, Log: stderr}
	switch c.worker {
	case "seed":
		return seedWorker(ctx, c, rep)
	case "run":
		return scaleRunWorker(ctx, c, rep)
	case "":
	default:
		return fmt.Errorf("unknown worker %q", c.worker)
	}
	if c.tmp == "" {
		dir, err := os.MkdirTemp("", "crewcast-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.tmp = dir
	}
	if c.instrWorker != "" {
		return instrWorker(ctx, c)
	}
	if c.profile != "" {
		if err := os.MkdirAll(c.profile, 0o755); err != nil {
			return err
		}
	}
	steps := map[string]func(context.Context, config, harness.Reporter) error{
		"ingest": benchIngest, "e2e": benchE2E, "fanout": benchFanout, "scale": benchScale,
		"webhookout": benchWebhookOut, "crews": benchCrews, "callout": benchCallout, "cluster": benchCluster,
		"pool": benchPool, "failover": benchFailover,
		"instructions": benchInstructions,
	}
	return rep.RunEach(c.run, func(s string) error { return steps[s](ctx, c, rep) })
}
