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
