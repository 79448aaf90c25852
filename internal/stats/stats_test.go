package stats

import (
	"errors"
	"testing"
	"time"
)

func oneTo100() []int {
	xs := make([]int, 100)
	for i := range xs {
		xs[i] = 100 - i // descending: Quantile must sort
	}
	return xs
}

func TestQuantileOfOneToHundred(t *testing.T) {
	xs := oneTo100()
	for _, tc := range []struct {
		q    float64
		want int
	}{{0, 1}, {0.01, 1}, {0.07, 7}, {0.5, 50}, {0.95, 95}, {0.99, 99}, {0.995, 100}, {1, 100}} {
		got, err := Quantile(xs, tc.q)
		if err != nil || got != tc.want {
			t.Errorf("Quantile(1..100, %v) = %d, %v; want %d", tc.q, got, err, tc.want)
		}
	}
	if xs[0] != 100 {
		t.Error("Quantile sorted its input in place")
	}
}

func TestQuantileOfOneSampleIsThatSample(t *testing.T) {
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got, err := Quantile([]time.Duration{7 * time.Millisecond}, q); err != nil || got != 7*time.Millisecond {
			t.Errorf("Quantile([7ms], %v) = %v, %v", q, got, err)
		}
	}
}

func TestQuantileRefusesNoSamplesAndBadQ(t *testing.T) {
	if _, err := Quantile([]int(nil), 0.5); !errors.Is(err, ErrNoSamples) {
		t.Errorf("no samples: err = %v, want ErrNoSamples", err)
	}
	for _, q := range []float64{-0.01, 1.01, 99, 50} {
		if _, err := Quantile([]int{1, 2, 3}, q); err == nil {
			t.Errorf("Quantile(q=%v) accepted a q outside [0, 1]", q)
		}
	}
	if _, err := Quantiles([]int{1}, 0.5, 99); err == nil {
		t.Error("Quantiles accepted 99 among its qs")
	}
}

func TestQuantilesMatchQuantile(t *testing.T) {
	xs := oneTo100()
	got, err := Quantiles(xs, 0.5, 0.99, 1)
	if err != nil || got[0] != 50 || got[1] != 99 || got[2] != 100 {
		t.Errorf("Quantiles = %v, %v; want [50 99 100]", got, err)
	}
}

func TestMinSamples(t *testing.T) {
	for q, want := range map[float64]int{0: 1, 0.5: 2, 0.9: 10, 0.95: 20, 0.99: 100, 0.999: 1000, 1: 1} {
		if got := MinSamples(q); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", q, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MinSamples(99) did not panic")
		}
	}()
	MinSamples(99)
}

// Below MinSamples the q-quantile is the maximum; from it on it is not
// (for distinct samples), which is why Label names it so.
func TestMinSamplesIsWhereTheQuantileLeavesTheMax(t *testing.T) {
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
		m := MinSamples(q)
		for _, n := range []int{m - 1, m} {
			xs := oneTo100()[100-n:] // n..1
			v, err := Quantile(xs, q)
			if err != nil {
				t.Fatal(err)
			}
			if isMax := v == n; isMax != (n < m) {
				t.Errorf("q=%v n=%d: quantile %d, max %d", q, n, v, n)
			}
		}
	}
}

func TestLabel(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		n    int
		want string
	}{{0.99, 100, "p99"}, {0.99, 99, "max"}, {0.99, 10, "max"}, {0.5, 2, "p50"}, {0.5, 1, "max"},
		{0.999, 1000, "p99.9"}, {1, 5, "max"}, {0, 5, "min"}, {0.95, 20, "p95"}} {
		if got := Label(tc.q, tc.n); got != tc.want {
			t.Errorf("Label(%v, %d) = %q, want %q", tc.q, tc.n, got, tc.want)
		}
	}
}
