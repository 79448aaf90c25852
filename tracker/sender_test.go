package tracker

import (
	"testing"
	"time"
)

func TestPacerRatesPerSender(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := newPacer(2, 0, map[string]float64{"+18005550100": 20, "+15550100009": 0})
	// The default: 2/s with a burst of 2.
	if g, wait := p.take("+15550100000", 10, now); g != 2 || wait <= 0 || wait > time.Second {
		t.Fatalf("default rate: granted %d, wait %s", g, wait)
	}
	// An override: 20/s, burst 20.
	if g, _ := p.take("+18005550100", 50, now); g != 20 {
		t.Fatalf("override: granted %d, want 20", g)
	}
	// 0 turns pacing off for that number.
	if g, wait := p.take("+15550100009", 1000, now); g != 1000 || wait != 0 {
		t.Fatalf("unpaced number: granted %d, wait %s", g, wait)
	}
	// Tokens come back with time.
	if g, _ := p.take("+15550100000", 10, now.Add(time.Second)); g != 2 {
		t.Fatalf("after a second: granted %d, want 2", g)
	}
	// No default rate: unpaced unless overridden.
	q := newPacer(0, 0, map[string]float64{"+18005550100": 1})
	if g, _ := q.take("+15550100000", 500, now); g != 500 {
		t.Fatalf("no pacing: granted %d", g)
	}
	if g, _ := q.take("+18005550100", 5, now); g != 1 {
		t.Fatalf("override without default: granted %d", g)
	}
}

// ready says when the next token comes without taking one.
func TestPacerReadyTakesNothing(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := newPacer(2, 0, map[string]float64{"+15550100009": 0})
	for range 3 {
		if wait := p.ready("+15550100000", now); wait != 0 {
			t.Fatalf("full bucket: ready in %s, want now", wait)
		}
	}
	if g, _ := p.take("+15550100000", 10, now); g != 2 {
		t.Fatalf("ready took tokens: granted %d, want 2", g)
	}
	if wait := p.ready("+15550100000", now); wait <= 0 || wait > time.Second {
		t.Fatalf("empty bucket: ready in %s, want (0, 1s]", wait)
	}
	if wait := p.ready("+15550100000", now.Add(time.Second)); wait != 0 {
		t.Fatalf("a second later: ready in %s, want now", wait)
	}
	if wait := p.ready("+15550100009", now); wait != 0 {
		t.Fatalf("unpaced number: ready in %s", wait)
	}
}

// A registered sender is paced at its own mps: over the default, under an
// explicit --send-rates override, and a change reaches a limiter already
// in use.
func TestPacerSenderRates(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	p := newPacer(10, 0, map[string]float64{"+18005550100": 20})
	if g, _ := p.take("+15550100001", 100, now); g != 10 {
		t.Fatalf("before registration: granted %d, want the default 10", g)
	}
	p.setSenders(map[string]float64{"+15550100001": 3, "+15550100002": 0.5, "+18005550100": 1})
	if g, _ := p.take("+15550100001", 100, now.Add(time.Second)); g != 3 {
		t.Fatalf("registered at 3 mps: granted %d, want 3", g)
	}
	if g, wait := p.take("+15550100002", 100, now); g != 1 || wait < time.Second {
		t.Fatalf("registered at 0.5 mps: granted %d, wait %s; want 1 and ≥ 1s", g, wait)
	}
	if g, _ := p.take("+18005550100", 100, now); g != 20 {
		t.Fatalf("explicit override: granted %d, want 20 (it wins over the sender's mps)", g)
	}
	// A pool's rate is the sum of its numbers': two numbers at 3 give 6 a second.
	total := 0
	for _, n := range []string{"+15550100001", "+15550100003"} {
		p.setSenders(map[string]float64{"+15550100001": 3, "+15550100003": 3})
		g, _ := p.take(n, 100, now.Add(2*time.Second))
		total += g
	}
	if total != 6 {
		t.Fatalf("two numbers at 3 mps granted %d in one second, want 6", total)
	}
	// Unregistered again: back to the default.
	p.setSenders(nil)
	if g, _ := p.take("+15550100001", 100, now.Add(5*time.Second)); g != 10 {
		t.Fatalf("after removal: granted %d, want the default 10", g)
	}
}
