package callgrind

import (
	"strings"
	"testing"
)

// A profile as callgrind 3.19 writes it after a zero-stats request: the
// summary line wrapped below zero, the totals right.
const profile = `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 16695
cmd:  ./hello
part: 1

desc: Timerange: Basic block 0 - 1009064
desc: Trigger: Program termination

positions: line
events: Ir
summary: 18446744073709551604


ob=(1) /tmp/hello
fl=(3) main.go
fn=(4) main.main
11 10
+1 4036894

totals: 4036904
`

func TestTotals(t *testing.T) {
	for _, tc := range []struct {
		name, in, event string
		want            uint64
		err             string
	}{
		{name: "one part", in: profile, event: "Ir", want: 4036904},
		{name: "second event", in: "events: Ir Dr Dw\ntotals: 10 20 30\n", event: "Dr", want: 20},
		{name: "trailing zero left out", in: "events: Ir Dr Dw\ntotals: 10\n", event: "Dw", want: 0},
		{name: "parts are summed", in: "events: Ir\ntotals: 5\npart: 2\nevents: Ir\ntotals: 7\n", event: "Ir", want: 12},
		{name: "no totals", in: "events: Ir\nsummary: 12\n", event: "Ir", err: "no totals line"},
		{name: "event not counted", in: "events: Ir\ntotals: 1\n", event: "Dr", err: "event Dr not in"},
		{name: "totals first", in: "totals: 1\nevents: Ir\n", event: "Ir", err: "before the events line"},
		{name: "not a number", in: "events: Ir\ntotals: x\n", event: "Ir", err: "invalid syntax"},
		{name: "empty", in: "", event: "Ir", err: "no totals line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Totals(strings.NewReader(tc.in), tc.event)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Totals = %d, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Totals = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// Outside Valgrind (go test never runs under it) the requests are no-ops
// and Running says so.
func TestRequestsOutsideValgrind(t *testing.T) {
	Start()
	Stop()
	if Running() {
		t.Fatal("Running() outside Valgrind")
	}
}
