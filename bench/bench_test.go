package main

import (
	"bytes"
	"cmp"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/internal/stats"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/store"
)

// TestMain lets this test binary stand in for the bench program when
// benchScale starts it as a child process.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString("bench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

var resultLine = regexp.MustCompile(`(?m)^RESULT (\S+) (\S+) (\S+)$`)

// mayBeZero are the figures a healthy run may print as 0: the backlog
// drain and the counts of fan-out recipients not accepted.
var mayBeZero = map[string]bool{"ingest_route_backlog_drain": true,
	"fanout_failed": true, "fanout_unconfirmed": true, "fanout_other": true}

// Every scenario, at a tiny size, prints every RESULT line the issue
// names, with a positive value and the named unit.
func TestEveryScenarioPrintsItsResults(t *testing.T) {
	var out, log bytes.Buffer
	err := run([]string{
		"-tmp", t.TempDir(),
		"-ingest-clients", "32", "-ingest-warmup", "100ms", "-ingest-window", "1s",
		"-ingest-groups", "1", "-ingest-size", "5", "-ingest-max", "3000",
		"-e2e-count", "100", "-e2e-rate", "200",
		"-fanout-n", "40", "-crews-import-n", "30", "-crews-group-n", "50",
		"-callout-n", "40", "-callout-need", "3", "-callout-wave", "10",
		"-pool-n", "60", "-pool-mps", "20", "-failover-n", "200",
		"-scale-small", "100", "-scale-n", "200", "-scale-webhooks", "100", "-scale-rate", "200", "-scale-batch", "25",
		"-webhook-n", "50", "-webhook-rate", "200", "-webhook-lag-count", "100",
	}, &out, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	got := map[string]string{}
	values := map[string]float64{}
	for _, m := range resultLine.FindAllStringSubmatch(out.String(), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Errorf("RESULT %s has value %q", m[1], m[2])
		}
		if v <= 0 && !mayBeZero[m[1]] {
			t.Errorf("RESULT %s = %v, want > 0", m[1], v)
		}
		got[m[1]] = m[3]
		values[m[1]] = v
	}
	checkQuantilesOrdered(t, values)
	checkSamples(t, values, log.String())
	for name, unit := range map[string]string{
		"ingest_durable": "req/s", "ingest_ceiling": "req/s", "ingest_ratio": "ratio", "ingest_p99": "ms",
		"e2e_p50": "ms", "e2e_p99": "ms",
		"fanout": "recipients/s", "fanout_accepted": "recipients", "fanout_other": "recipients",
		"webhook_out_rate": "events/s", "webhook_out_lag_p99": "ms",
		// -scale-n 200 stands in for the million: the names carry the size.
		"scale_rss_200": "MB", "scale_route_ratio_200_100": "ratio",
		"scale_route_p99_200": "ms", "webhook_out_lag_p50": "ms", "webhook_out_lag_max": "ms",
		"contacts_import": "rows/s", "group_create_50": "ms", "callout_fill_ms": "ms",
		"pool_fanout_per_s": "recipients/s", "failover_ms": "ms",
		"cluster_ingest_ratio_3v1": "ratio",
	} {
		if got[name] != unit {
			t.Errorf("RESULT %s: unit %q, want %q\n%s", name, got[name], unit, out.String())
		}
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{10000: "10k", 1000000: "1m", 60: "60", 2500: "2500", 3000000: "3m", 100000: "100k"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestUnknownScenarioIsRejected(t *testing.T) {
	var out, log bytes.Buffer
	if err := run([]string{"-run", "ingest,nope"}, &out, &log); err == nil {
		t.Errorf("run accepted an unknown scenario")
	}
	if out.Len() != 0 {
		t.Errorf("printed %q for a rejected run", out.String())
	}
}

// The seeding builds group.created events itself; they must be exactly
// what the group package plans for the same request.
func TestSeedCreatedIsWhatPlanMakes(t *testing.T) {
	at := time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)
	settings := group.Settings{CheckAfter: seedCheckAfter}.WithDefaults()
	for _, i := range []int{0, 7, 999_999} {
		want, errs := group.Plan(seedGroupID(i), group.Request{From: harness.SenderNumber, To: []string{seedNumber(i)},
			Text: harness.GroupText, Mode: crewcast.ModeIndividual}, settings, nil, at)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if got := seedCreated(i, settings, at); !reflect.DeepEqual(got, want) {
			t.Errorf("seedCreated(%d) = %+v, want %+v", i, got, want)
		}
	}
}

// A seeded group is hibernated mid-flight: its one recipient sent, with a
// status check due and the routes the tracker writes.
func TestSeedUnit(t *testing.T) {
	at := time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)
	u, err := seedUnit(42, group.Settings{CheckAfter: seedCheckAfter}.WithDefaults(), at)
	if err != nil {
		t.Fatal(err)
	}
	if u.Key != seedGroupID(42) || u.ExpectSeq != 0 || len(u.Events) != 3 {
		t.Fatalf("unit %s expect %d with %d events", u.Key, u.ExpectSeq, len(u.Events))
	}
	g := &group.Group{}
	for k, e := range u.Events {
		if e.Seq != uint64(k+1) {
			t.Errorf("event %d has seq %d", k, e.Seq)
		}
		ev, err := group.Decode(e.Type, e.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Apply(ev); err != nil {
			t.Fatalf("replaying %s: %v", e.Type, err)
		}
	}
	if r := g.Recipients[0]; r.Status != crewcast.StatusSent || r.MessageID != seedMessageID(42) || !r.NextCheckAt.Equal(at.Add(seedCheckAfter)) {
		t.Errorf("replayed recipient %+v", r)
	}
	eff := u.Effects[0].(store.Effects)
	if eff.Group.Seq != 3 || eff.Group.Status != crewcast.GroupAwaiting || len(eff.Deliveries) != 1 || len(eff.Routes) != 2 {
		t.Errorf("effects %+v", eff)
	}
	if len(u.Reminders) != 1 || u.Reminders[0].Name != "c:0" {
		t.Errorf("reminders %+v", u.Reminders)
	}
}

// A scenario printing fewer samples than a p99 needs fails rather than
// name the maximum a p99.
func TestTooFewSamplesForAP99FailsTheRun(t *testing.T) {
	var out, log bytes.Buffer
	err := run([]string{"-tmp", t.TempDir(), "-run", "webhookout",
		"-webhook-n", "10", "-webhook-rate", "200", "-webhook-lag-count", "99"}, &out, &log)
	if err == nil || !strings.Contains(err.Error(), "at least 100") {
		t.Errorf("run with 99 lag samples: %v", err)
	}
	if strings.Contains(out.String(), "webhook_out_lag") {
		t.Errorf("printed lag figures from 99 samples:\n%s", out.String())
	}
}

var samplesLine = regexp.MustCompile(`(?m)samples (\S+) ([0-9]+)$`)

// checkSamples fails unless every quantile figure is named in a
// "samples" log line with at least stats.MinSamples of its quantile.
func checkSamples(t *testing.T, values map[string]float64, log string) {
	t.Helper()
	from := map[string]int{}
	for _, m := range samplesLine.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[2])
		for _, name := range strings.Split(m[1], ",") {
			from[name] = n
		}
	}
	for name := range values {
		q, ok := figureQuantile(name)
		if !ok {
			continue
		}
		n, ok := from[name]
		if !ok {
			t.Errorf("RESULT %s: no samples line says what it comes from", name)
		} else if n < stats.MinSamples(q) {
			t.Errorf("RESULT %s comes from %d samples, fewer than the %d its quantile needs", name, n, stats.MinSamples(q))
		}
	}
}

// figureQuantile is the quantile a figure's name claims (_pNN, _max).
func figureQuantile(name string) (float64, bool) {
	m := quantileName.FindStringSubmatch(name)
	if m == nil || strings.Contains(name, "ratio") {
		return 0, false
	}
	if m[2] == "max" {
		return 1, true
	}
	p, err := strconv.ParseFloat(m[2][1:], 64)
	return p / 100, err == nil
}

// quantileName splits a latency figure's name into its base and its
// quantile: e2e_p99 → e2e, 0.99; scale_route_max_1m → scale_route_1m, 1.
var quantileName = regexp.MustCompile(`^(.*?)_(p[0-9.]+|max)(_[0-9]+[km]?)?$`)

// checkQuantilesOrdered fails unless, among the figures of one base,
// p50 ≤ p99 ≤ max (every quantile at most the next larger one).
func checkQuantilesOrdered(t *testing.T, values map[string]float64) {
	t.Helper()
	type fig struct {
		name string
		q, v float64
	}
	bases := map[string][]fig{}
	for name, v := range values {
		q, ok := figureQuantile(name)
		if !ok {
			continue
		}
		m := quantileName.FindStringSubmatch(name)
		bases[m[1]+m[3]] = append(bases[m[1]+m[3]], fig{name, q, v})
	}
	for base, figs := range bases {
		slices.SortFunc(figs, func(a, b fig) int { return cmp.Compare(a.q, b.q) })
		for i := 1; i < len(figs); i++ {
			if figs[i-1].v > figs[i].v {
				t.Errorf("%s: %s = %v > %s = %v", base, figs[i-1].name, figs[i-1].v, figs[i].name, figs[i].v)
			}
		}
	}
}

// A field the child did not print must not read as 0.
func TestDecodeChildRefusesMissingFields(t *testing.T) {
	var sr seedReport
	if err := decodeChild([]byte(`{"seconds":1.5,"db_mb":18.3}`), &sr); err != nil || sr.Seconds != 1.5 || sr.DBMB != 18.3 {
		t.Fatalf("complete report: %+v, %v", sr, err)
	}
	for _, b := range []string{`{"seconds":1.5}`, `{"seconds":1.5,"db_mb":null}`, `{"seconds":1.5,"db_mb":1,"extra":2}`, `{}`} {
		var sr seedReport
		if err := decodeChild([]byte(b), &sr); err == nil {
			t.Errorf("decodeChild(%s) = %+v, want an error", b, sr)
		}
	}
}

// The fan-out rate counts only the sends the provider accepted; the
// recipients who texted STOP first are reported apart, and all add up.
func TestFanoutCountsOnlyAcceptedSends(t *testing.T) {
	var out, log bytes.Buffer
	if err := run([]string{"-tmp", t.TempDir(), "-run", "fanout", "-fanout-n", "40", "-fanout-stops", "5"}, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	got := map[string]string{}
	for _, m := range resultLine.FindAllStringSubmatch(out.String(), -1) {
		got[m[1]] = m[2] + " " + m[3]
	}
	for name, want := range map[string]string{
		"fanout_accepted": "35 recipients", "fanout_other": "5 recipients",
		"fanout_failed": "0 recipients", "fanout_unconfirmed": "0 recipients",
	} {
		if got[name] != want {
			t.Errorf("RESULT %s = %q, want %q\n%s", name, got[name], want, out.String())
		}
	}
}

func TestTallyFanoutRefusesCountsThatDoNotAgree(t *testing.T) {
	numbers := harness.Numbers(100, 5)
	row := func(i int, s crewcast.Status) store.DeliveryRow {
		return store.DeliveryRow{Number: numbers[i], Status: s}
	}
	send := func(i int) sim.Send {
		return sim.Send{From: harness.SenderNumber, To: numbers[i], Text: harness.GroupText}
	}
	rows := []store.DeliveryRow{row(0, crewcast.StatusDelivered), row(1, crewcast.StatusSent), row(2, crewcast.StatusFailed),
		row(3, crewcast.StatusUnconfirmed), row(4, crewcast.StatusOptedOut)}
	ledger := []sim.Send{send(0), send(1), {From: harness.SenderNumber, To: numbers[4], Text: "You are unsubscribed"}}
	got, err := tallyFanout(rows, ledger, 5)
	if want := (fanoutTally{accepted: 2, failed: 1, unconfirmed: 1, other: 1}); err != nil || got != want {
		t.Fatalf("tally = %+v, %v; want %+v", got, err, want)
	}
	for name, tc := range map[string]struct {
		rows   []store.DeliveryRow
		ledger []sim.Send
		n      int
	}{
		"sent without a ledger row": {rows, ledger[:1], 5},
		"accepted twice":            {rows, append([]sim.Send{send(0)}, ledger...), 5},
		"accepted yet opted out":    {rows, append([]sim.Send{send(4)}, ledger...), 5},
		"a stranger accepted":       {rows, append([]sim.Send{{From: harness.SenderNumber, To: "+15559999999", Text: harness.GroupText}}, ledger...), 5},
		"a row missing":             {rows[:4], ledger, 5},
		"still sending":             {append(rows[:4:4], row(4, crewcast.StatusSending)), ledger, 5},
	} {
		if got, err := tallyFanout(tc.rows, tc.ledger, tc.n); err == nil {
			t.Errorf("%s: tally %+v, want an error", name, got)
		}
	}
}

// Each instructions workload runs to its end natively at a tiny size (the
// callgrind requests are no-ops outside Valgrind), so `make
// bench-instructions` does not find a broken workload only under
// Valgrind.
func TestInstructionWorkloadsRun(t *testing.T) {
	for _, w := range instrWorkloads {
		t.Run(w.name, func(t *testing.T) {
			var out, log bytes.Buffer
			err := run([]string{"-tmp", t.TempDir(), "-instr-worker", w.name, "-instr-n", "6"}, &out, &log)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, log.String())
			}
		})
	}
}

func TestInstrSpread(t *testing.T) {
	for _, tc := range []struct {
		totals []uint64
		lo     uint64
		spread float64
	}{
		{[]uint64{100, 101}, 100, 0.01},
		{[]uint64{101, 100}, 100, 0.01},
		// A run the wall clock inflated does not count against the floor.
		{[]uint64{130, 100, 102}, 100, 0.02},
		{[]uint64{7}, 7, 0},
		{nil, 0, 0},
	} {
		lo, spread := instrSpread(tc.totals)
		if lo != tc.lo || math.Abs(spread-tc.spread) > 1e-12 {
			t.Errorf("instrSpread(%v) = %d, %v; want %d, %v", tc.totals, lo, spread, tc.lo, tc.spread)
		}
	}
}
