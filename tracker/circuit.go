package tracker

import (
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
)

// A circuit per provider (docs/design.md §16). Definite failures —
// connection refused or any failure before the request was written, and a
// 5xx or 429 answered with no message id — open it after 5 in a row, or
// when half of the last 20 calls within 30 s failed (at least 10); it
// half-opens 30 s after it opened, and the next call decides: an answer
// closes it, a definite failure opens it again. Calls that may have gone
// out (a timeout after the request was written) count neither way.
//
// The circuit is health, not a gate: calls still go through an open
// circuit (a plain from retries on its schedule, as before). What an open
// circuit changes is where pool sends go: a pool recipient whose number's
// provider is unhealthy moves to the pool's numbers on the other provider
// (pools.go), and only while their last attempt certainly did not go out.

// Circuit states, as GET /v1/providers says them.
const (
	CircuitClosed   = "closed"
	CircuitOpen     = "open"
	CircuitHalfOpen = "half_open"
)

const (
	circuitInARow    = 5
	circuitWindowN   = 20
	circuitWindowMin = 10 // half of the last 20
	circuitWindow    = 30 * time.Second
	circuitHalfOpen  = 30 * time.Second // the default of Config.CircuitHalfOpen
)

type callSample struct {
	at   time.Time
	fail bool
}

type circuit struct {
	state    string
	inARow   int
	recent   []callSample // the last circuitWindowN calls
	fails    []time.Time  // definite failures of the last minute
	openedAt time.Time
}

// circuits holds one circuit per provider name.
type circuits struct {
	now      func() time.Time
	log      *slog.Logger
	halfOpen time.Duration
	// onChange, if set, hears a circuit open or close (outside mu).
	onChange func(provider, state string)

	mu sync.Mutex
	by map[string]*circuit
}

func newCircuits(now func() time.Time, log *slog.Logger, halfOpen time.Duration) *circuits {
	if halfOpen <= 0 {
		halfOpen = circuitHalfOpen
	}
	return &circuits{now: now, log: log, halfOpen: halfOpen, by: map[string]*circuit{}}
}

// definiteFailure reports whether a provider call's answer says the
// provider is unavailable and certainly did not take the message.
func definiteFailure(res crewcast.SendResult, err error) bool {
	var se *crewcast.SendError
	if err == nil || !errors.As(err, &se) || res.MessageID != "" {
		return false
	}
	switch {
	case se.HTTPStatus == 0:
		return se.Class == crewcast.ClassNotSent && se.Err != nil // refused, DNS, TLS: never written
	case se.HTTPStatus >= 500, se.HTTPStatus == http.StatusTooManyRequests:
		return true
	}
	return false
}

// observe records one provider call's answer.
func (cs *circuits) observe(provider string, res crewcast.SendResult, err error) {
	fail := definiteFailure(res, err)
	if !fail && err != nil && crewcast.ClassOf(err) == crewcast.ClassUncertain {
		return // may have gone out: says nothing of the provider's health
	}
	now := cs.now()
	cs.mu.Lock()
	c := cs.by[provider]
	if c == nil {
		c = &circuit{state: CircuitClosed}
		cs.by[provider] = c
	}
	cs.advanceLocked(c, now)
	was := c.state
	c.recent = append(c.recent, callSample{at: now, fail: fail})
	if len(c.recent) > circuitWindowN {
		c.recent = c.recent[len(c.recent)-circuitWindowN:]
	}
	if fail {
		c.inARow++
		c.fails = append(c.fails, now)
	} else {
		c.inARow = 0
	}
	switch {
	case c.state == CircuitHalfOpen && fail:
		c.state, c.openedAt = CircuitOpen, now
	case c.state == CircuitHalfOpen:
		c.state, c.recent, c.inARow = CircuitClosed, nil, 0
	case c.state == CircuitClosed && (c.inARow >= circuitInARow || windowFails(c.recent, now) >= circuitWindowMin):
		c.state, c.openedAt = CircuitOpen, now
	}
	state := c.state
	cs.mu.Unlock()
	if state != was && state != CircuitHalfOpen {
		cs.changed(provider, state) // opened, reopened after a failed probe, or closed
	}
}

func windowFails(recent []callSample, now time.Time) int {
	n := 0
	for _, s := range recent {
		if s.fail && now.Sub(s.at) <= circuitWindow {
			n++
		}
	}
	return n
}

// advanceLocked half-opens an open circuit whose wait is over. cs.mu held.
func (cs *circuits) advanceLocked(c *circuit, now time.Time) {
	if c.state == CircuitOpen && now.Sub(c.openedAt) >= cs.halfOpen {
		c.state = CircuitHalfOpen
	}
	cut := 0
	for cut < len(c.fails) && now.Sub(c.fails[cut]) > time.Minute {
		cut++
	}
	c.fails = c.fails[cut:]
}

func (cs *circuits) changed(provider, state string) {
	if state == CircuitOpen {
		cs.log.Warn("provider circuit opened: pool sends move to the other provider", "provider", provider)
	} else {
		cs.log.Info("provider circuit closed", "provider", provider)
	}
	if cs.onChange != nil {
		cs.onChange(provider, state)
	}
}

// healthy reports whether a provider's circuit lets pool sends use it:
// closed or half-open.
func (cs *circuits) healthy(provider string) bool {
	return cs.state(provider) != CircuitOpen
}

// state is a provider's circuit state now.
func (cs *circuits) state(provider string) string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.by[provider]
	if c == nil {
		return CircuitClosed
	}
	cs.advanceLocked(c, cs.now())
	return c.state
}

// ProviderHealth is one provider as GET /v1/providers shows it.
type ProviderHealth struct {
	Name               string
	Circuit            string
	FailuresLastMinute int
}

// ProviderHealth lists the configured providers' circuits, by name.
func (t *Tracker) ProviderHealth() []ProviderHealth {
	names := t.Providers()
	out := make([]ProviderHealth, 0, len(names))
	cs := t.circuits
	cs.mu.Lock()
	defer cs.mu.Unlock()
	now := cs.now()
	for _, n := range names {
		h := ProviderHealth{Name: n, Circuit: CircuitClosed}
		if c := cs.by[n]; c != nil {
			cs.advanceLocked(c, now)
			h.Circuit, h.FailuresLastMinute = c.state, len(c.fails)
		}
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ProviderUp reports whether a provider's circuit is not open (the
// crewcast_provider_up metric, the Senders page's health).
func (t *Tracker) ProviderUp(provider string) bool { return t.circuits.healthy(provider) }
