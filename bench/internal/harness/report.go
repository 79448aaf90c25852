package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast/internal/stats"
)

// Reporter prints a benchmark program's "RESULT <name> <value> <unit>"
// lines on Out (what docs/performance.md and CI read) and its progress on
// Log, so that the two never mix.
type Reporter struct {
	Out, Log io.Writer
}

// Result prints one RESULT line.
func (r Reporter) Result(name string, value float64, unit string) {
	fmt.Fprintf(r.Out, "RESULT %s %s %s\n", name, strconv.FormatFloat(value, 'f', resultPrec(value), 64), unit)
}

// Count prints one RESULT line whose value is a count, as an integer.
func (r Reporter) Count(name string, n int, unit string) {
	fmt.Fprintf(r.Out, "RESULT %s %d %s\n", name, n, unit)
}

// Latency prints one RESULT line per quantile q of s (0–1), in
// milliseconds, named prefix_<label>suffix with the label of
// stats.Label: e2e_p50, e2e_p99, e2e_max. It refuses, printing nothing,
// when s has fewer than stats.MinSamples(q) samples for any q (a p99 needs
// at least 100), so that no figure is named for a quantile its samples
// cannot tell from their maximum; ask for q = 1 (max) instead. It logs
// "samples <figures> <n>": the names printed and how many samples they
// come from. It returns the values, in the order of qs.
func (r Reporter) Latency(prefix, suffix string, s Samples, qs ...float64) ([]time.Duration, error) {
	names := make([]string, len(qs))
	for i, q := range qs {
		if q < 0 || q > 1 {
			return nil, fmt.Errorf("%s%s: quantile %v outside [0, 1]", prefix, suffix, q)
		}
		if need := stats.MinSamples(q); len(s) < need {
			return nil, fmt.Errorf("%s%s: %d samples cannot give a quantile %v (it needs at least %d; with fewer it is the maximum)",
				prefix, suffix, len(s), q, need)
		}
		names[i] = prefix + "_" + stats.Label(q, len(s)) + suffix
	}
	vs, err := stats.Quantiles(s, qs...)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", prefix, suffix, err)
	}
	r.Progress("samples %s %d", strings.Join(names, ","), len(s))
	for i, v := range vs {
		r.Result(names[i], Ms(v), "ms")
	}
	return vs, nil
}

// resultPrec keeps about three significant digits below 100 and none
// above.
func resultPrec(v float64) int {
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

// Progress prints one time-stamped progress line.
func (r Reporter) Progress(format string, args ...any) {
	fmt.Fprintf(r.Log, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// RunEach runs each named step in turn with run, logging when it starts
// and how long it took, and stops at the first failure, which it prefixes
// with the step's name.
func (r Reporter) RunEach(names []string, run func(name string) error) error {
	for _, name := range names {
		start := time.Now()
		r.Progress("%s: start", name)
		if err := run(name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.Progress("%s: done in %s", name, time.Since(start).Round(time.Second))
	}
	return nil
}

// Scenarios splits a comma-separated -run list, skipping empty items, and
// rejects any item not in known; what names an item in the error
// ("scenario", "comparison").
func Scenarios(list, what string, known []string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(known, s) {
			return nil, fmt.Errorf("unknown %s %q (want %s)", what, s, strings.Join(known, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

// Profiled runs fn under the CPU profiler when dir is set, writing
// <dir>/<name>.pprof (dir is created if missing); with dir "" it just runs
// fn.
func Profiled(dir, name string, fn func() error) error {
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
