package tracker

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// pacer limits sends per sender number (docs/design.md §10 --send-rate), with
// per-number overrides.
type pacer struct {
	rate      rate.Limit
	burst     int
	overrides map[string]float64
	mu        sync.Mutex
	lims      map[string]*rate.Limiter
}

func newPacer(perSecond float64, burst int, overrides map[string]float64) *pacer {
	return &pacer{rate: rate.Limit(perSecond), burst: burst, overrides: overrides, lims: make(map[string]*rate.Limiter)}
}

// limiter returns from's limiter, or nil when from is not paced.
func (p *pacer) limiter(from string) *rate.Limiter {
	r := p.rate
	if o, ok := p.overrides[from]; ok {
		r = rate.Limit(o)
	}
	if r <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.lims[from]
	if l == nil {
		burst := p.burst
		if burst <= 0 {
			burst = max(1, int(r))
		}
		l = rate.NewLimiter(r, burst)
		p.lims[from] = l
	}
	return l
}

// take grants up to want sends from `from` at now, and says how long to
// wait before more tokens come when it granted fewer.
func (p *pacer) take(from string, want int, now time.Time) (granted int, wait time.Duration) {
	l := p.limiter(from)
	if l == nil {
		return want, 0
	}
	for granted < want && l.AllowN(now, 1) {
		granted++
	}
	if granted < want {
		r := l.ReserveN(now, 1)
		wait = r.DelayFrom(now)
		r.CancelAt(now)
		if wait <= 0 {
			wait = time.Millisecond
		}
	}
	return granted, wait
}

// ready says how long until from has a send token (0: one is there now).
// It takes none: a group asks before it reads the suppression list for a
// claim the pacer would refuse anyway.
func (p *pacer) ready(from string, now time.Time) time.Duration {
	l := p.limiter(from)
	if l == nil || l.TokensAt(now) >= 1 {
		return 0
	}
	r := l.ReserveN(now, 1)
	wait := r.DelayFrom(now)
	r.CancelAt(now)
	return max(wait, time.Millisecond)
}
