package main

import (
	"bytes"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// TestMain lets this test binary stand in for the program when
// compareActors starts it as a child process (-worker).
func TestMain(m *testing.M) {
	for _, a := range os.Args[1:] {
		if a == "-worker" {
			if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
				os.Stderr.WriteString("peers child: " + err.Error() + "\n")
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	os.Exit(m.Run())
}

var resultLine = regexp.MustCompile(`(?m)^RESULT (\S+) (\S+) (\S+)$`)

func results(t *testing.T, out string) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, m := range resultLine.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || v <= 0 {
			t.Errorf("RESULT %s has value %q, want a positive number", m[1], m[2])
		}
		got[m[1]] = v
	}
	return got
}

func TestActorsPrintsTheNamedRatios(t *testing.T) {
	var out, log bytes.Buffer
	if err := run([]string{"-run", "actors", "-tell-n", "20000", "-tell-rounds", "1", "-idle-n", "2000"}, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	got := results(t, out.String())
	for _, name := range []string{"peer_tell_ratio", "peer_idle_bytes_ratio", "peer_tell_blocking_ratio"} {
		if _, ok := got[name]; !ok {
			t.Errorf("no RESULT %s in\n%s", name, out.String())
		}
	}
	// The printed ratio is ours / theirs, up to the rounding of the print.
	want := got["peer_tell_ours"] / got["peer_tell_protoactor"]
	if r := got["peer_tell_ratio"]; math.Abs(r-want) > 0.01*want {
		t.Errorf("peer_tell_ratio = %v, want ours/theirs = %v", r, want)
	}
}

// The River comparison runs against the PostgreSQL that make bench and CI
// use; it drops both of its schemas.
func TestRiverPrintsTheRatio(t *testing.T) {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		url = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
	}
	var out, log bytes.Buffer
	if err := run([]string{"-run", "river", "-river-n", "200", "-river-clients", "8", "-postgres", url}, &out, &log); err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	if _, ok := results(t, out.String())["river_ratio"]; !ok {
		t.Errorf("no RESULT river_ratio in\n%s", out.String())
	}
}
