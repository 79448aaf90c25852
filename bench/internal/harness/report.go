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
