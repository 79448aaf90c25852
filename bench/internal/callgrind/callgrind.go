// Package callgrind speaks to Valgrind's callgrind tool from inside the
// program it runs (client requests, as callgrind.h does in C) and reads
// the totals of the profiles it writes. The requests are no-ops outside
// Valgrind, and on architectures other than amd64.
package callgrind

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Client request codes (valgrind.h: VG_USERREQ_TOOL_BASE; callgrind.h).
const (
	reqRunningOnValgrind = 0x1001
	toolBase             = uintptr('C')<<24 | uintptr('T')<<16
	reqZeroStats         = toolBase + 1
	reqStartInstr        = toolBase + 4
	reqStopInstr         = toolBase + 5
)

func do(code uintptr) uintptr {
	args := [6]uintptr{code}
	return request(&args)
}

// Running reports whether the program runs under Valgrind.
func Running() bool { return supported && do(reqRunningOnValgrind) != 0 }

// Start turns callgrind's instrumentation on (run it with
// --instr-atstart=no so that set-up runs uninstrumented, about 4× slower
// than native rather than 50×) and zeroes the counters, so the profile
// holds only what runs between Start and Stop, on every thread.
func Start() {
	do(reqStartInstr)
	do(reqZeroStats)
}

// Stop turns the instrumentation off again.
func Stop() { do(reqStopInstr) }

// Totals reads the totals line of a callgrind profile (callgrind's
// output format: "events: Ir ..." names the counted events, "totals: n
// ..." gives their sums over the whole profile) and returns the count of
// event name (e.g. "Ir", instructions executed). The "summary:" line is
// not used: after a zero-stats request callgrind can print it wrapped
// around below zero, while "totals:" is summed from the costs written.
func Totals(r io.Reader, event string) (uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	col := -1
	var total uint64
	found := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "events:"):
			col = slices.Index(strings.Fields(strings.TrimPrefix(line, "events:")), event)
			if col < 0 {
				return 0, fmt.Errorf("callgrind: event %s not in %q", event, line)
			}
		case strings.HasPrefix(line, "totals:"):
			if col < 0 {
				return 0, errors.New("callgrind: totals before the events line")
			}
			f := strings.Fields(strings.TrimPrefix(line, "totals:"))
			if col >= len(f) {
				// Trailing zero costs may be left out.
				found = true
				continue
			}
			n, err := strconv.ParseUint(f[col], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("callgrind: totals: %w", err)
			}
			total += n
			found = true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("callgrind: %w", err)
	}
	if !found {
		return 0, errors.New("callgrind: no totals line (was the profile written to the end?)")
	}
	return total, nil
}
