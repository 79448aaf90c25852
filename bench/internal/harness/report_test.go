package harness

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestResultKeepsAboutThreeSignificantDigits(t *testing.T) {
	var out, log bytes.Buffer
	r := Reporter{Out: &out, Log: &log}
	for _, v := range []float64{12345.6, 123.4, 12.345, 1.2345, 0.12345, -12.345} {
		r.Result("x", v, "ms")
	}
	want := "RESULT x 12346 ms\nRESULT x 123 ms\nRESULT x 12.3 ms\nRESULT x 1.23 ms\nRESULT x 0.123 ms\nRESULT x -12.3 ms\n"
	if out.String() != want {
		t.Errorf("results:\n%s\nwant:\n%s", out.String(), want)
	}
	if log.Len() != 0 {
		t.Errorf("Result wrote to the log: %q", log.String())
	}
}

func TestProgressGoesToTheLogOnly(t *testing.T) {
	var out, log bytes.Buffer
	Reporter{Out: &out, Log: &log}.Progress("step %d of %d", 2, 3)
	if out.Len() != 0 {
		t.Errorf("Progress wrote to the results: %q", out.String())
	}
	if !regexp.MustCompile(`^\[\d\d:\d\d:\d\d\] step 2 of 3\n$`).MatchString(log.String()) {
		t.Errorf("progress line %q", log.String())
	}
}

func TestScenarios(t *testing.T) {
	known := []string{"a", "b", "c"}
	got, err := Scenarios(" a, ,c,", "scenario", known)
	if err != nil || !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Scenarios = %q, %v; want [a c]", got, err)
	}
	if got, err := Scenarios("", "scenario", known); err != nil || got != nil {
		t.Errorf("Scenarios(empty) = %q, %v", got, err)
	}
	_, err = Scenarios("a,nope", "comparison", known)
	if err == nil || err.Error() != `unknown comparison "nope" (want a, b, c)` {
		t.Errorf("Scenarios(unknown) error = %v", err)
	}
}

func TestProfiledWritesAProfileOnlyWhenAsked(t *testing.T) {
	failed := errors.New("fn failed")
	ran := false
	if err := Profiled("", "x", func() error { ran = true; return failed }); !ran || !errors.Is(err, failed) {
		t.Errorf("Profiled without a dir: ran %v, err %v", ran, err)
	}
	dir := filepath.Join(t.TempDir(), "new")
	ran = false
	if err := Profiled(dir, "step", func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Profiled: ran %v, err %v", ran, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "step.pprof")); err != nil || fi.Size() == 0 {
		t.Errorf("profile: %v, %v", fi, err)
	}
}

func TestRunEachStopsAtTheFirstFailure(t *testing.T) {
	var out, log bytes.Buffer
	r := Reporter{Out: &out, Log: &log}
	failed := errors.New("broke")
	var ran []string
	err := r.RunEach([]string{"a", "b", "c"}, func(name string) error {
		ran = append(ran, name)
		if name == "b" {
			return failed
		}
		return nil
	})
	if !errors.Is(err, failed) || err.Error() != "b: broke" {
		t.Errorf("RunEach error = %v, want \"b: broke\"", err)
	}
	if !slices.Equal(ran, []string{"a", "b"}) {
		t.Errorf("ran %q, want [a b]", ran)
	}
	if !regexp.MustCompile(`(?s)a: start\n.*a: done in .*\n.*b: start\n$`).MatchString(log.String()) {
		t.Errorf("progress:\n%s", log.String())
	}
	if out.Len() != 0 {
		t.Errorf("RunEach wrote results: %q", out.String())
	}
}

func millis(n int) Samples {
	s := make(Samples, n)
	for i := range s {
		s[i] = time.Duration(n-i) * time.Millisecond
	}
	return s
}

// A quantile is printed only from enough samples to tell it from the
// maximum, and the figures are ordered.
func TestLatencyRefusesAQuantileFromTooFewSamples(t *testing.T) {
	var out, log bytes.Buffer
	r := Reporter{Out: &out, Log: &log}
	if _, err := r.Latency("lag", "", millis(99), 0.5, 0.99, 1); err == nil {
		t.Error("a p99 of 99 samples was accepted")
	}
	if _, err := r.Latency("lag", "", nil, 1); err == nil {
		t.Error("a max of no samples was accepted")
	}
	if _, err := r.Latency("lag", "", millis(5), 99); err == nil {
		t.Error("a quantile of 99 (percent, not a fraction) was accepted")
	}
	if out.Len() != 0 {
		t.Errorf("refused figures were printed: %q", out.String())
	}
	vs, err := r.Latency("lag", "_10k", millis(100), 0.5, 0.99, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := "RESULT lag_p50_10k 50.0 ms\nRESULT lag_p99_10k 99.0 ms\nRESULT lag_max_10k 100 ms\n"
	if out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	if vs[0] > vs[1] || vs[1] > vs[2] {
		t.Errorf("values %v not ordered", vs)
	}
	if !strings.Contains(log.String(), "samples lag_p50_10k,lag_p99_10k,lag_max_10k 100\n") {
		t.Errorf("log %q does not say how many samples", log.String())
	}
}

func TestCountPrintsAnInteger(t *testing.T) {
	var out bytes.Buffer
	Reporter{Out: &out, Log: io.Discard}.Count("fanout_failed", 3, "recipients")
	if out.String() != "RESULT fanout_failed 3 recipients\n" {
		t.Errorf("printed %q", out.String())
	}
}
