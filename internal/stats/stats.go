// Package stats computes the order statistics that crewcast's figures
// report: nearest-rank quantiles of samples, with the quantile given as a
// fraction from 0 to 1 (0.5 is the median, 0.99 the 99th percentile), and
// the rule that decides when a quantile may be named as one.
//
// It is the one quantile helper of the repository: the store's delivery
// summary, the benchmarks (bench, bench/internal/harness and bench/peers)
// and the chaos harness (test/chaos) all call it, so that a p99 means the
// same thing everywhere. It lives under internal/ at the module root
// because it is not part of crewcast's API, and because Go lets an
// internal package be imported by any package whose import path starts
// with the path of internal's parent: every package of the module, and
// also bench/peers, a module of its own whose path
// (github.com/crewcast/crewcast/bench/peers) is inside that tree.
package stats

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// ErrNoSamples is returned for a quantile of no samples: there is no such
// figure, and 0 would read as a measurement.
var ErrNoSamples = errors.New("stats: no samples")

// eps absorbs the rounding of q·n in floating point (0.07·100 is
// 7.000000000000001), far below one rank for any sample count in use.
const eps = 1e-9

// Quantile returns the nearest-rank q-quantile of xs (0 ≤ q ≤ 1): the
// smallest sample such that at least q·n of the n samples are at or below
// it. q = 0 gives the minimum, q = 1 the maximum; for 1..100, q = 0.5
// gives 50 and q = 0.99 gives 99. xs is not modified. It fails for no
// samples and for q outside [0, 1] (or NaN).
func Quantile[T cmp.Ordered](xs []T, q float64) (T, error) {
	vs, err := Quantiles(xs, q)
	if err != nil {
		var zero T
		return zero, err
	}
	return vs[0], nil
}

// Quantiles returns the nearest-rank quantiles of xs for each of qs (see
// Quantile), sorting a copy of xs once.
func Quantiles[T cmp.Ordered](xs []T, qs ...float64) ([]T, error) {
	if len(xs) == 0 {
		return nil, ErrNoSamples
	}
	for _, q := range qs {
		if err := checkQ(q); err != nil {
			return nil, err
		}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	out := make([]T, len(qs))
	for i, q := range qs {
		out[i] = s[rank(q, len(s))-1]
	}
	return out, nil
}

func checkQ(q float64) error {
	if !(q >= 0 && q <= 1) {
		return fmt.Errorf("stats: quantile %v outside [0, 1]", q)
	}
	return nil
}

// rank is the 1-based nearest rank of the q-quantile of n samples.
func rank(q float64, n int) int {
	r := int(math.Ceil(q*float64(n) - eps))
	return min(max(r, 1), n)
}

// MinSamples is the fewest samples whose q-quantile is not simply their
// largest sample: 100 for 0.99, 20 for 0.95, 2 for 0.5. With fewer, the
// nearest-rank q-quantile is the maximum and must be named so. It is 1
// for q = 0 and q = 1 (the minimum and the maximum need one sample). It
// panics for q outside [0, 1].
func MinSamples(q float64) int {
	if err := checkQ(q); err != nil {
		panic(err)
	}
	if q == 0 || q == 1 {
		return 1
	}
	return int(math.Ceil(1/(1-q) - eps))
}

// Label names the q-quantile of n samples as a figure: "max" for q = 1
// and whenever n < MinSamples(q) (the value is then the maximum), "min"
// for q = 0, otherwise "p" and the percentage ("p50", "p99", "p99.9"). It
// panics for q outside [0, 1].
func Label(q float64, n int) string {
	switch {
	case q == 1 || n < MinSamples(q):
		return "max"
	case q == 0:
		return "min"
	}
	return "p" + strconv.FormatFloat(math.Round(q*1e6)/1e4, 'f', -1, 64)
}
