package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/bench/internal/callgrind"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/tracker"
)

// instrWorkload is one workload of the instructions scenario.
type instrWorkload struct {
	name   string // -instr-worker value
	result string // RESULT name
	unit   string
	n      func(c config) int // units the total is divided by
}

var instrWorkloads = []instrWorkload{
	{"ingest", "ingest_instructions_per_webhook", "instructions/webhook", func(c config) int { return c.instrIngestN }},
	{"e2e", "e2e_instructions_per_event", "instructions/event", func(c config) int { return c.instrE2EN }},
	{"fanout", "fanout_instructions_per_recipient", "instructions/recipient", func(c config) int { return c.instrFanoutN }},
}

// benchInstructions (`make bench-instructions`; not in the default run)
// counts the instructions crewcast executes per unit of work, a figure
// that does not move with the load of the machine: each workload runs in
// a child process of this program under valgrind --tool=callgrind
// --instr-atstart=no, with GOMAXPROCS and asynchronous preemption fixed,
// from the same fixed inputs. The child sets everything up
// uninstrumented, turns the instrumentation on (a client request,
// package callgrind) just before the measured phase and off after it, so
// the profile holds only that phase, on every thread: crewcast, the
// simulator and the benchmark's own HTTP clients alike, all in the one
// process. The total ("Ir", instructions executed) divided by the
// workload's units is the figure. Each workload runs c.instrRuns times;
// the figure is the smallest total, and the run fails unless the next
// smallest is within c.instrTolerance of it (instrSpread).
func benchInstructions(ctx context.Context, c config, rep harness.Reporter) error {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return fmt.Errorf("instructions: valgrind is needed: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	for _, w := range instrWorkloads {
		if !slices.Contains(c.instrOnly, w.name) {
			continue
		}
		n := w.n(c)
		var totals []uint64
		for run := range c.instrRuns {
			dir := filepath.Join(c.tmp, fmt.Sprintf("instr-%s-%d", w.name, run))
			start := time.Now()
			total, err := callgrindRun(ctx, exe, dir, w.name, n, c.instrProcs)
			if err != nil {
				return fmt.Errorf("instructions %s: %w", w.name, err)
			}
			rep.Progress("instructions %s run %d: %d instructions for %d (%.0f each), %s under valgrind",
				w.name, run+1, total, n, float64(total)/float64(n), time.Since(start).Round(time.Second))
			totals = append(totals, total)
		}
		lo, spread := instrSpread(totals)
		if spread > c.instrTolerance {
			return fmt.Errorf("instructions %s: totals %v: the two smallest differ by %.2f%% (tolerance %.2f%%)", w.name, totals, 100*spread, 100*c.instrTolerance)
		}
		rep.Progress("instructions %s: the two smallest of %d runs within %.2f%%", w.name, len(totals), 100*spread)
		rep.Result(w.result, float64(lo)/float64(n), w.unit)
	}
	return nil
}

// instrSpread returns the smallest total and how far the next smallest
// is above it, as a fraction of it. Work the wall clock drives inside the
// process (an open event stream's periodic recheck, timers, the
// runtime's background threads) only adds instructions to a run Valgrind
// stretched further (a busier machine), so the floor is the figure, and
// it counts as repeatable when two runs agree on it.
func instrSpread(totals []uint64) (lo uint64, spread float64) {
	if len(totals) == 0 {
		return 0, 0
	}
	s := slices.Clone(totals)
	slices.Sort(s)
	if len(s) < 2 || s[0] == 0 {
		return s[0], 0
	}
	return s[0], float64(s[1]-s[0]) / float64(s[0])
}

// callgrindRun runs workload name of size n in a child process under
// callgrind and returns the instructions of its measured phase.
func callgrindRun(ctx context.Context, exe, dir, name string, n, procs int) (uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	out := filepath.Join(dir, "callgrind.out")
	cmd := exec.CommandContext(ctx, "valgrind", "--tool=callgrind", "--instr-atstart=no",
		"--callgrind-out-file="+out, exe,
		"-instr-worker", name, "-instr-n", strconv.Itoa(n), "-tmp", dir)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs), "GODEBUG=asyncpreemptoff=1")
	var log safeBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%w; its output ends: %s", err, log.tail(2000))
	}
	f, err := os.Open(out)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	total, err := callgrind.Totals(f, "Ir")
	if err == nil && total == 0 {
		err = errors.New("no instructions counted (did the child ask for instrumentation?)")
	}
	return total, err
}

// safeBuffer collects a child's output.
type safeBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *safeBuffer) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b[max(0, len(s.b)-n):])
}

// Warm-up units each worker runs uninstrumented first (connections,
// caches, the group actors' first activation).
const instrWarmup = 20

// instrWorker runs one workload in this process (the child side of
// benchInstructions; natively, the instrumentation requests are no-ops).
func instrWorker(ctx context.Context, c config) error {
	if c.instrN <= 0 {
		return fmt.Errorf("instructions: -instr-n %d", c.instrN)
	}
	switch c.instrWorker {
	case "ingest":
		return instrIngest(ctx, c, c.instrIngestClients)
	case "e2e":
		return instrE2E(ctx, c)
	case "fanout":
		return instrFanout(ctx, c)
	}
	return fmt.Errorf("unknown instructions workload %q", c.instrWorker)
}

// measured runs f between callgrind.Start and callgrind.Stop, after a
// garbage collection, so that every run's phase starts from the same heap
// (a collection more or less inside a small phase moves its total by
// percents).
func measured(f func() error) error {
	runtime.GC()
	callgrind.Start()
	defer callgrind.Stop()
	return f()
}

// instrStart boots crewcast for a workload: no periodic sweep inside the
// measured phase (its count would follow the wall clock, which Valgrind
// stretches).
func instrStart(ctx context.Context, c config, signer *harness.Signer) (*harness.Crewcast, error) {
	o := harness.Options{DB: filepath.Join(c.tmp, "instr.db"), Signer: signer, SweepInterval: time.Hour}
	if signer == nil {
		o.DemoFaults = sim.Faults{}
	}
	cc, err := harness.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	// Under Valgrind on a busy machine a request can outlast the
	// harness client's 30 s (a 100-recipient group's POST did).
	cc.Client.Timeout = 0
	return cc, nil
}

// instrIngest: signed "delivered" webhooks, one per recipient of four
// sent groups, posted by clients concurrent keep-alive clients; the
// measured phase ends when every one has been applied by its group (its
// status.observed change published).
func instrIngest(ctx context.Context, c config, clients int) error {
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	cc, err := instrStart(ctx, c, signer)
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, harness.Reporter{Out: os.Stderr, Log: os.Stderr})
	const groups = 4
	targets, err := cc.SentGroups(ctx, groups, (c.instrN+instrWarmup+groups-1)/groups, 5_000_000)
	if err != nil {
		return err
	}
	hooks, err := harness.SignStatuses(signer, targets, instrWarmup+c.instrN, "instr", "delivered")
	if err != nil {
		return err
	}
	sub := cc.Server.Tracker().Hub().Subscribe("")
	defer sub.Close()
	client := harness.NewClient(clients)
	client.Timeout = 0 // see instrStart
	defer client.CloseIdleConnections()
	post := func(hooks []harness.Webhook) error {
		if err := postAll(ctx, client, cc.WebhookURL(), hooks, clients); err != nil {
			return err
		}
		return waitObserved(ctx, sub, len(hooks))
	}
	if err := post(hooks[:instrWarmup]); err != nil {
		return err
	}
	return measured(func() error { return post(hooks[instrWarmup:]) })
}

// postAll posts hooks from clients goroutines, each taking the next one.
func postAll(ctx context.Context, client *http.Client, url string, hooks []harness.Webhook, clients int) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, clients)
	)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(hooks); i = int(next.Add(1) - 1) {
				if err := harness.PostWebhook(ctx, client, url, hooks[i]); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitObserved reads sub until n "delivered" status.observed events came.
func waitObserved(ctx context.Context, sub *tracker.Subscription, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for got := 0; got < n; {
		select {
		case ch := <-sub.C:
			k, err := countDelivered(ch.Events)
			if err != nil {
				return err
			}
			got += k
		case <-ctx.Done():
			return fmt.Errorf("%d of %d webhooks applied: %w", got, n, ctx.Err())
		}
		if sub.Lagged() {
			return errors.New("the change subscription lagged")
		}
	}
	return nil
}

// countDelivered counts the "delivered" status.observed events of evs.
func countDelivered(evs []tracker.EventView) (int, error) {
	n := 0
	for _, ev := range evs {
		if ev.Type != group.TypeObserved {
			continue
		}
		var obs group.Observed
		if err := json.Unmarshal(ev.Data, &obs); err != nil {
			return 0, fmt.Errorf("status.observed: %w", err)
		}
		if obs.Status == "delivered" {
			n++
		}
	}
	return n, nil
}

// instrE2E: one group; one signed "delivered" webhook at a time, each
// posted once the previous one's change arrived on the group's event
// stream (SSE over loopback), so every event crosses the whole path
// alone.
func instrE2E(ctx context.Context, c config) error {
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	cc, err := instrStart(ctx, c, signer)
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, harness.Reporter{Out: os.Stderr, Log: os.Stderr})
	targets, err := cc.SentGroups(ctx, 1, instrWarmup+c.instrN, 6_000_000)
	if err != nil {
		return err
	}
	groupID := targets[0].GroupID
	row, err := cc.Store().GetGroup(ctx, groupID)
	if err != nil {
		return err
	}
	hooks, err := harness.SignStatuses(signer, targets, len(targets), "instr-e2e", "delivered")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := harness.OpenStream(sctx, cc.Client, cc.URL+"/v1/groups/"+groupID+"/stream?after="+strconv.FormatUint(row.Seq, 10))
	if err != nil {
		return err
	}
	defer stream.Close()
	client := harness.NewClient(1)
	client.Timeout = 0 // see instrStart
	defer client.CloseIdleConnections()
	one := func(i int) error {
		if err := harness.PostWebhook(ctx, client, cc.WebhookURL(), hooks[i]); err != nil {
			return err
		}
		return awaitStreamed(stream, targets[i].MessageID)
	}
	for i := range instrWarmup {
		if err := one(i); err != nil {
			return err
		}
	}
	return measured(func() error {
		for i := instrWarmup; i < len(hooks); i++ {
			if err := one(i); err != nil {
				return err
			}
		}
		return nil
	})
}

// awaitStreamed reads stream until a "delivered" status.observed change
// for messageID.
func awaitStreamed(stream *harness.Stream, messageID string) error {
	for {
		ev, err := stream.Next()
		if err != nil {
			return err
		}
		if ev.Event != "change" {
			continue
		}
		var change struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(ev.Data), &change); err != nil {
			return fmt.Errorf("stream event: %w", err)
		}
		if change.Type != group.TypeObserved {
			continue
		}
		var obs group.Observed
		if err := json.Unmarshal(change.Data, &obs); err != nil {
			return fmt.Errorf("stream event data: %w", err)
		}
		if obs.MessageID == messageID && obs.Status == "delivered" {
			return nil
		}
	}
}

// instrFanout: one group of n recipients through the demo simulator
// (pacing off, no faults), from its POST until every recipient is final
// (sent, then delivered by the simulator's receipts); a group of
// instrWarmup recipients goes first, unmeasured.
func instrFanout(ctx context.Context, c config) error {
	cc, err := instrStart(ctx, c, nil)
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, harness.Reporter{Out: os.Stderr, Log: os.Stderr})
	sub := cc.Server.Tracker().Hub().Subscribe("")
	defer sub.Close()
	one := func(base, n int) error {
		id, err := cc.CreateGroup(ctx, harness.SenderNumber, harness.Numbers(base, n), harness.GroupText)
		if err != nil {
			return err
		}
		return waitAllFinal(ctx, cc, sub, id, n)
	}
	if err := one(7_000_000, instrWarmup); err != nil {
		return err
	}
	return measured(func() error { return one(7_100_000, c.instrN) })
}

// waitAllFinal waits until every one of group id's n recipients is final,
// reading the group's row whenever the changes published so far are read.
func waitAllFinal(ctx context.Context, cc *harness.Crewcast, sub *tracker.Subscription, id string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for {
		row, err := cc.Store().GetGroup(ctx, id)
		if err != nil {
			return err
		}
		final := 0
		for s, k := range row.Counts {
			if crewcast.Status(s).Final() {
				final += k
			}
		}
		if final == n {
			return nil
		}
		select {
		case <-sub.C:
		case <-ctx.Done():
			return fmt.Errorf("group %s: %d of %d final: %w", id, final, n, ctx.Err())
		}
		for len(sub.C) > 0 {
			<-sub.C
		}
	}
}
