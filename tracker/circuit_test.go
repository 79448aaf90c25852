package tracker

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

func TestDefiniteFailureClassification(t *testing.T) {
	refused := &crewcast.SendError{Provider: "telnyx", Class: crewcast.ClassNotSent, Err: errors.New("connection refused")}
	cases := []struct {
		name string
		res  crewcast.SendResult
		err  error
		want bool
	}{
		{"accepted", crewcast.SendResult{MessageID: "m1"}, nil, false},
		{"connection refused", crewcast.SendResult{}, refused, true},
		{"503 no id", crewcast.SendResult{}, &crewcast.SendError{HTTPStatus: 503, Class: crewcast.ClassUncertain}, true},
		{"500 no id", crewcast.SendResult{}, &crewcast.SendError{HTTPStatus: 500, Class: crewcast.ClassUncertain}, true},
		{"429", crewcast.SendResult{}, &crewcast.SendError{HTTPStatus: 429, Class: crewcast.ClassNotSent}, true},
		{"503 with an id", crewcast.SendResult{MessageID: "m1"}, &crewcast.SendError{HTTPStatus: 503, Class: crewcast.ClassUncertain}, false},
		{"timeout after write", crewcast.SendResult{}, &crewcast.SendError{Class: crewcast.ClassUncertain, Err: errors.New("timeout")}, false},
		{"recipient refused", crewcast.SendResult{}, &crewcast.SendError{HTTPStatus: 400, Class: crewcast.ClassRecipient}, false},
		{"unclassified", crewcast.SendResult{}, errors.New("boom"), false},
	}
	for _, c := range cases {
		if got := definiteFailure(c.res, c.err); got != c.want {
			t.Errorf("%s: definite=%v, want %v", c.name, got, c.want)
		}
	}
}

type circuitClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *circuitClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *circuitClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestCircuitOpensHalfOpensAndCloses(t *testing.T) {
	clk := &circuitClock{now: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	cs := newCircuits(clk.Now, slog.New(slog.DiscardHandler), 0)
	var changes []string
	cs.onChange = func(p, s string) { changes = append(changes, p+":"+s) }
	refused := &crewcast.SendError{Class: crewcast.ClassNotSent, Err: errors.New("connection refused")}
	ok := crewcast.SendResult{MessageID: "m"}
	timeout := &crewcast.SendError{Class: crewcast.ClassUncertain, Err: errors.New("timeout")}

	// Four in a row, an ambiguous timeout (counts neither way), then the
	// fifth: open.
	for range 4 {
		cs.observe("telnyx", crewcast.SendResult{}, refused)
	}
	cs.observe("telnyx", crewcast.SendResult{}, timeout)
	if !cs.healthy("telnyx") {
		t.Fatal("opened before 5 definite failures in a row")
	}
	cs.observe("telnyx", crewcast.SendResult{}, refused)
	if cs.healthy("telnyx") || cs.state("telnyx") != CircuitOpen {
		t.Fatalf("5 in a row: want open, got %s", cs.state("telnyx"))
	}
	if !cs.healthy("twilio") {
		t.Fatal("the other provider's circuit moved")
	}
	// Half-open after 30 s; a failed probe opens it again.
	clk.add(30 * time.Second)
	if cs.state("telnyx") != CircuitHalfOpen || !cs.healthy("telnyx") {
		t.Fatalf("after 30 s: want half_open, got %s", cs.state("telnyx"))
	}
	cs.observe("telnyx", crewcast.SendResult{}, refused)
	if cs.state("telnyx") != CircuitOpen {
		t.Fatalf("failed probe: want open, got %s", cs.state("telnyx"))
	}
	// A successful probe closes it.
	clk.add(30 * time.Second)
	cs.observe("telnyx", ok, nil)
	if cs.state("telnyx") != CircuitClosed {
		t.Fatalf("good probe: want closed, got %s", cs.state("telnyx"))
	}
	want := []string{"telnyx:open", "telnyx:open", "telnyx:closed"}
	if len(changes) != len(want) {
		t.Fatalf("changes %v, want %v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Fatalf("changes %v, want %v", changes, want)
		}
	}
}

func TestCircuitOpensOnHalfOfTheLastTwenty(t *testing.T) {
	clk := &circuitClock{now: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}
	cs := newCircuits(clk.Now, slog.New(slog.DiscardHandler), 0)
	fail := &crewcast.SendError{HTTPStatus: 503, Class: crewcast.ClassUncertain}
	ok := crewcast.SendResult{MessageID: "m"}
	// Alternating: never 5 in a row, but the 10th failure of the last 20
	// within 30 s opens it.
	for i := range 19 {
		if i%2 == 1 {
			cs.observe("twilio", crewcast.SendResult{}, fail)
		} else {
			cs.observe("twilio", ok, nil)
		}
		if !cs.healthy("twilio") {
			t.Fatalf("opened after %d calls", i+1)
		}
	}
	cs.observe("twilio", crewcast.SendResult{}, fail)
	if cs.healthy("twilio") {
		t.Fatal("10 failures of the last 20 within 30 s: want open")
	}
	// The same failures spread over more than 30 s do not open it.
	cs2 := newCircuits(clk.Now, slog.New(slog.DiscardHandler), 0)
	for i := range 20 {
		if i%2 == 1 {
			cs2.observe("twilio", crewcast.SendResult{}, fail)
		} else {
			cs2.observe("twilio", ok, nil)
		}
		clk.add(4 * time.Second)
	}
	if !cs2.healthy("twilio") {
		t.Fatal("failures spread over 80 s opened the circuit")
	}
}
