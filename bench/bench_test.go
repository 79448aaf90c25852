package main

import (
	"bytes"
	"os"
	"regexp"
	"strconv"
	"testing"

	"go.uber.org/goleak"
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

// Every scenario, at a tiny size, prints every RESULT line the issue
// names, with a positive value and the named unit.
func TestEveryScenarioPrintsItsResults(t *testing.T) {
	var out, log bytes.Buffer
	err := run([]string{
		"-tmp", t.TempDir(),
		"-ingest-clients", "8", "-ingest-warmup", "100ms", "-ingest-window", "300ms",
		"-ingest-groups", "1", "-ingest-size", "5", "-ingest-max", "3000",
		"-e2e-count", "20", "-e2e-rate", "100",
		"-fanout-n", "40",
		"-scale-small", "20", "-scale-n", "60", "-scale-webhooks", "10", "-scale-rate", "100", "-scale-batch", "25",
	}, &out, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	got := map[string]string{}
	for _, m := range resultLine.FindAllStringSubmatch(out.String(), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Errorf("RESULT %s has value %q", m[1], m[2])
		}
		if v <= 0 && m[1] != "ingest_route_backlog_drain" {
			t.Errorf("RESULT %s = %v, want > 0", m[1], v)
		}
		got[m[1]] = m[3]
	}
	for name, unit := range map[string]string{
		"ingest_durable": "req/s", "ingest_ceiling": "req/s", "ingest_ratio": "ratio", "ingest_p99": "ms",
		"e2e_p50": "ms", "e2e_p99": "ms",
		"fanout": "recipients/s",
		// -scale-n 60 stands in for the million: the names carry the size.
		"scale_rss_60": "MB", "scale_route_ratio_60_20": "ratio",
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
