package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

// benchScale seeds SQLite databases of scaleSmall and scaleN hibernated
// groups through the store API, then runs crewcast on each and posts
// status webhooks at a fixed rate, each to a different random group, all
// hibernated when it arrives. It reports the routing latency (POST until
// the group's change is committed and published: route lookup, activation
// from the journal, apply, commit) at both sizes and crewcast's resident
// memory while it works.
//
// Every step runs in a child process of this program, so the seeding's
// memory does not count against the server's and each size is measured
// from a fresh process.
func benchScale(ctx context.Context, c config, rep harness.Reporter) error {
	type sizeResult struct {
		label string
		seed  seedReport
		run   runReport
	}
	var results []sizeResult
	for _, n := range []int{c.scaleSmall, c.scaleN} {
		label := sizeLabel(n)
		db := filepath.Join(c.tmp, "scale-"+label+".db")
		rep.Progress("scale %s: seeding %d hibernated groups", label, n)
		var sr seedReport
		seedArgs := []string{"-worker", "seed", "-db", db, "-n", strconv.Itoa(n), "-scale-batch", strconv.Itoa(c.scaleBatch)}
		if c.profile != "" {
			seedArgs = append(seedArgs, "-profile", c.profile)
		}
		if err := child(ctx, c, rep, seedArgs, &sr); err != nil {
			return fmt.Errorf("seed %s: %w", label, err)
		}
		rep.Progress("scale %s: seeded in %.1fs, database %.0f MB", label, sr.Seconds, sr.DBMB)
		var rr runReport
		args := []string{"-worker", "run", "-db", db, "-n", strconv.Itoa(n),
			"-scale-webhooks", strconv.Itoa(c.scaleWebhooks), "-scale-rate", strconv.FormatFloat(c.scaleRate, 'f', -1, 64)}
		if c.profile != "" {
			args = append(args, "-profile", c.profile)
		}
		rep.Progress("scale %s: %d webhooks at %.0f/s to random groups", label, c.scaleWebhooks, c.scaleRate)
		if err := child(ctx, c, rep, args, &rr); err != nil {
			return fmt.Errorf("run %s: %w", label, err)
		}
		results = append(results, sizeResult{label, sr, rr})
		_ = os.Remove(db)
		_ = os.Remove(db + "-wal")
		_ = os.Remove(db + "-shm")
	}
	route := make([][]time.Duration, len(results))
	for i, r := range results {
		if got := len(r.run.LatencyNS); got != c.scaleWebhooks {
			return fmt.Errorf("run %s: %d latencies for %d webhooks", r.label, got, c.scaleWebhooks)
		}
		rep.Result("scale_seed_"+r.label, r.seed.Seconds, "s")
		rep.Result("scale_db_"+r.label, r.seed.DBMB, "MB")
		rep.Result("scale_open_"+r.label, r.run.OpenSeconds, "s")
		vs, err := rep.Latency("scale_route", "_"+r.label, r.run.latencies(), 0.5, 0.99)
		if err != nil {
			return err
		}
		route[i] = vs
		rep.Result("scale_rss_start_"+r.label, r.run.RSSStartMB, "MB")
		rep.Result("scale_rss_"+r.label, r.run.RSSMaxMB, "MB")
	}
	small, large := results[0].label, results[1].label
	rep.Result("scale_route_ratio_"+large+"_"+small, float64(route[1][0])/float64(route[0][0]), "ratio")
	rep.Result("scale_route_p99_ratio_"+large+"_"+small, float64(route[1][1])/float64(route[0][1]), "ratio")
	return nil
}

// sizeLabel names a group count: 10000 → "10k", 1000000 → "1m".
func sizeLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "m"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// childEnv marks a child process of child, so that a test binary standing
// in for this program knows to run a step instead of its tests.
const childEnv = "CREWCAST_BENCH_CHILD"

// child runs this program with args and decodes the JSON object it prints
// as its last stdout line into v; its stderr is passed through.
func child(ctx context.Context, c config, rep harness.Reporter, args []string, v any) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = rep.Log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var last []byte
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		last = append(last[:0], sc.Bytes()...)
	}
	if err := cmd.Wait(); err != nil {
		return err
	}
	if err := decodeChild(last, v); err != nil {
		return fmt.Errorf("child output %q: %w", last, err)
	}
	return nil
}

// decodeChild decodes a child's report b, a JSON object, into the struct
// v points to. Every field of v must be in b and not null, and b may hold
// no other: a figure the child did not report is an error, never a 0.
func decodeChild(b []byte, v any) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	t := reflect.TypeOf(v).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if raw, ok := fields[name]; !ok || string(raw) == "null" {
			return fmt.Errorf("no %q", name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// seedReport is what the seed step prints.
type seedReport struct {
	Seconds float64 `json:"seconds"`
	DBMB    float64 `json:"db_mb"`
}

// Seeded groups check their recipients at the provider only after this
// long, so no status lookup happens during a benchmark.
const seedCheckAfter = 12 * time.Hour

// seedWorker writes c.n hibernated groups into a new database at c.db,
// scaleBatch groups per Commit (one transaction, one fsync): per group the
// journal of a one-recipient group created, claimed and accepted by the
// provider (group.created, send.claimed, send.outcomes — built by the
// group package's own decisions), its group and delivery rows, its
// provider-message and conversation routes, and its status-check
// reminder: what the tracker itself commits for such a group. No snapshot
// is written (a passivating group would save one; activation then replays
// the three events instead).
func seedWorker(ctx context.Context, c config, rep harness.Reporter) error {
	start := time.Now()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: c.db})
	if err != nil {
		return err
	}
	defer st.Close()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	settings := group.Settings{CheckAfter: seedCheckAfter, Deadline: 4 * seedCheckAfter}.WithDefaults()
	type batch struct {
		units []actor.Unit
		err   error
	}
	// Units are built on every core, a few batches ahead of the commits,
	// which go to the store one batch after the other, in order.
	workers := runtime.GOMAXPROCS(0)
	ahead := make(chan chan batch, 2*workers)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(ahead)
		sem := make(chan struct{}, workers)
		for lo := 0; lo < c.n; lo += c.scaleBatch {
			hi := min(lo+c.scaleBatch, c.n)
			slot := make(chan batch, 1)
			select {
			case ahead <- slot:
			case <-sctx.Done():
				return
			}
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				units := make([]actor.Unit, 0, hi-lo)
				for i := lo; i < hi; i++ {
					u, err := seedUnit(i, settings, at)
					if err != nil {
						slot <- batch{err: err}
						return
					}
					units = append(units, u)
				}
				slot <- batch{units: units}
			}()
		}
		for range workers {
			sem <- struct{}{}
		}
	}()
	batches := make(chan batch)
	go func() {
		defer close(batches)
		for slot := range ahead {
			select {
			case batches <- <-slot:
			case <-sctx.Done():
			}
		}
	}()
	done, lastLog := 0, time.Now()
	if err := harness.Profiled(c.profile, "seed-"+sizeLabel(c.n), func() error {
		for b := range batches {
			if b.err != nil {
				return b.err
			}
			res, err := st.Commit(ctx, b.units)
			if err != nil {
				return fmt.Errorf("commit seed batch: %w", err)
			}
			for i, e := range res {
				if e != nil {
					return fmt.Errorf("seed unit %s: %w", b.units[i].Key, e)
				}
			}
			done += len(b.units)
			if time.Since(lastLog) > 10*time.Second {
				rep.Progress("seed: %d of %d groups (%.0f/s)", done, c.n, float64(done)/time.Since(start).Seconds())
				lastLog = time.Now()
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if done != c.n {
		return fmt.Errorf("seeded %d groups, want %d", done, c.n)
	}
	if err := st.Close(); err != nil {
		return err
	}
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(c.db + suffix); err == nil {
			size += fi.Size()
		}
	}
	return json.NewEncoder(os.Stdout).Encode(seedReport{Seconds: time.Since(start).Seconds(), DBMB: float64(size) / (1 << 20)})
}

// Seeded group i: its id, recipient number and provider message id.
func seedGroupID(i int) string   { return fmt.Sprintf("grp_seed%08d", i) }
func seedNumber(i int) string    { return fmt.Sprintf("+1556%07d", i) }
func seedMessageID(i int) string { return fmt.Sprintf("40385f64-5717-4562-b3fc-%012d", i) }

// seedCreated is what group.Plan makes of a request for group i (a test
// holds them equal); built directly, because parsing a million phone
// numbers would be most of the seeding's work.
func seedCreated(i int, settings group.Settings, at time.Time) group.Created {
	return group.Created{ID: seedGroupID(i), From: harness.SenderNumber, Text: harness.GroupText,
		Mode: crewcast.ModeIndividual, At: at, Settings: settings,
		Recipients: []group.RosterEntry{{Number: seedNumber(i)}}}
}

// seedUnit builds group i's commit.
func seedUnit(i int, settings group.Settings, at time.Time) (actor.Unit, error) {
	id := seedGroupID(i)
	created := seedCreated(i, settings, at)
	g := &group.Group{}
	events := []group.Event{created}
	if err := g.Apply(created); err != nil {
		return actor.Unit{}, err
	}
	claimed, ok := g.Claim(at, 0)
	if !ok {
		return actor.Unit{}, errors.New("seed: nothing to claim")
	}
	if err := g.Apply(claimed); err != nil {
		return actor.Unit{}, err
	}
	events = append(events, claimed)
	out := group.Outcomes{At: at, Outcomes: []group.Outcome{
		g.Outcome(claimed.Sends[0], crewcast.SendResult{MessageID: seedMessageID(i)}, nil, at)}}
	if err := g.Apply(out); err != nil {
		return actor.Unit{}, err
	}
	events = append(events, out)
	u := actor.Unit{Key: id}
	for k, e := range events {
		typ, data, err := group.Encode(e)
		if err != nil {
			return actor.Unit{}, err
		}
		u.Events = append(u.Events, actor.Event{Seq: uint64(k + 1), Type: typ, Data: data, Time: at})
	}
	r := g.Recipients[0]
	if r.Status != crewcast.StatusSent || r.NextCheckAt.IsZero() {
		return actor.Unit{}, fmt.Errorf("seed group %d: recipient is %s, want sent with a check due", i, r.Status)
	}
	// The tracker names check reminders "c:<recipient index>" and routes
	// "m:<provider>:<message id>" and "c:<our number>:<their number>".
	u.Reminders = []actor.ReminderOp{{Name: "c:0", Due: r.NextCheckAt}}
	u.Effects = []any{store.Effects{
		Group: &store.GroupRow{ID: id, Status: g.Status, From: g.From, Mode: g.Mode, Text: g.Text,
			CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt, Counts: g.Counts(), Seq: uint64(len(events))},
		Deliveries: []store.DeliveryRow{{GroupID: id, Number: r.Number, Status: r.Status, Attempts: r.Attempts,
			ProviderMessageID: r.MessageID, ClaimedAt: r.ClaimedAt, SentAt: r.SentAt, UpdatedAt: g.UpdatedAt}},
		Routes: []store.Route{
			{Key: "m:telnyx:" + r.MessageID, Value: id},
			{Key: "c:" + g.From + ":" + r.Number, Value: id, ExpiresAt: at.Add(30 * 24 * time.Hour)},
		},
	}}
	return u, nil
}

// runReport is what the run step prints.
type runReport struct {
	OpenSeconds float64 `json:"open_seconds"`
	// LatencyNS has one routing latency per webhook, in nanoseconds: the
	// parent computes the quantiles, under the same rules as every
	// scenario's.
	LatencyNS  []int64 `json:"latency_ns"`
	RSSStartMB float64 `json:"rss_start_mb"`
	RSSMaxMB   float64 `json:"rss_max_mb"`
	RSSEndMB   float64 `json:"rss_end_mb"`
}

// nanos is s in nanoseconds, for runReport.LatencyNS.
func nanos(s harness.Samples) []int64 {
	ns := make([]int64, len(s))
	for i, d := range s {
		ns[i] = int64(d)
	}
	return ns
}

// latencies are the run's samples.
func (r runReport) latencies() harness.Samples {
	s := make(harness.Samples, len(r.LatencyNS))
	for i, ns := range r.LatencyNS {
		s[i] = time.Duration(ns)
	}
	return s
}

// scaleRunWorker starts crewcast on the seeded database c.db and posts
// scaleWebhooks message.finalized "delivered" webhooks at scaleRate, each
// to a different random seeded group, measuring from each webhook's
// scheduled time until the tracker publishes the group's committed change.
// Resident memory is sampled every 100 ms from the start of the webhooks
// until the last change.
func scaleRunWorker(ctx context.Context, c config, rep harness.Reporter) error {
	if c.scaleWebhooks > c.n {
		return fmt.Errorf("%d webhooks need at least as many groups, have %d", c.scaleWebhooks, c.n)
	}
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	openStart := time.Now()
	cc, err := harness.Start(ctx, harness.Options{DB: c.db, Signer: signer})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	open := time.Since(openStart)

	rng := rand.New(rand.NewPCG(uint64(c.n), 7))
	picked := make(map[int]bool, c.scaleWebhooks)
	order := make([]int, 0, c.scaleWebhooks)
	for len(order) < c.scaleWebhooks {
		if i := rng.IntN(c.n); !picked[i] {
			picked[i] = true
			order = append(order, i)
		}
	}
	now := time.Now()
	hooks := make([]harness.Webhook, len(order))
	slot := make(map[string]int, len(order))
	for k, i := range order {
		body, err := harness.StatusBody(harness.Status{EventID: fmt.Sprintf("scale-%08d", k), MessageID: seedMessageID(i),
			From: harness.SenderNumber, To: seedNumber(i), Text: harness.GroupText, Status: "delivered", At: now})
		if err != nil {
			return err
		}
		hooks[k] = signer.Sign(body, now)
		slot[seedGroupID(i)] = k
	}

	// Whatever the benchmark itself allocated so far is garbage now.
	runtime.GC()
	debug.FreeOSMemory()
	rssStart, err := harness.RSSBytes()
	if err != nil {
		return err
	}

	sub := cc.Server.Tracker().Hub().Subscribe("")
	defer sub.Close()
	var (
		mu     sync.Mutex
		sentAt = make([]time.Time, len(hooks))
		lat    harness.Samples
		got    = make([]bool, len(hooks))
		rssMax = rssStart
	)
	allDone := make(chan struct{})
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if v, err := harness.RSSBytes(); err == nil {
					mu.Lock()
					rssMax = max(rssMax, v)
					mu.Unlock()
				}
			}
		}
	}()
	go func() {
		n := 0
		for change := range sub.C {
			t := time.Now()
			k, ok := slot[change.GroupID]
			if !ok {
				continue
			}
			mu.Lock()
			if !got[k] {
				got[k] = true
				lat = append(lat, t.Sub(sentAt[k]))
				n++
			}
			mu.Unlock()
			if n == len(hooks) {
				close(allDone)
				return
			}
		}
	}()
	client := harness.NewClient(64)
	defer client.CloseIdleConnections()
	if err := postPaced(ctx, client, cc, hooks, c.scaleRate, c.profile, "scale-"+sizeLabel(c.n), func(k int, at time.Time) {
		mu.Lock()
		sentAt[k] = at
		mu.Unlock()
	}); err != nil {
		return err
	}
	select {
	case <-allDone:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("only %d of %d webhooks reached their groups within 2 minutes", len(lat), len(hooks))
	}
	close(stopSampling)
	sampling.Wait()
	rssEnd, err := harness.RSSBytes()
	if err != nil {
		return err
	}
	rep.Progress("scale %s: %d actors in memory after the webhooks, RSS %.0f MB (max %.0f MB, %.0f MB before the webhooks)",
		sizeLabel(c.n), len(cc.Server.Tracker().System().Actors()), float64(rssEnd)/(1<<20), float64(rssMax)/(1<<20), float64(rssStart)/(1<<20))
	mu.Lock()
	defer mu.Unlock()
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	return json.NewEncoder(os.Stdout).Encode(runReport{
		OpenSeconds: open.Seconds(), LatencyNS: nanos(lat),
		RSSStartMB: mb(rssStart), RSSMaxMB: mb(rssMax), RSSEndMB: mb(rssEnd),
	})
}
