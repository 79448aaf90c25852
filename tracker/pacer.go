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
	senders   map[string]float64 // each registered sender's mps (senders.go), under mu
	lims      map[string]*rate.Limiter
}

func newPacer(perSecond float64, burst int, overrides map[string]float64) *pacer {
	return &pacer{rate: rate.Limit(perSecond), burst: burst, overrides: overrides, lims: make(map[string]*rate.Limiter)}
}

// limiter returns from's limiter, or nil when from is not paced.
func (p *pacer) limiter(from string) *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rateOfLocked(from)
	if r <= 0 {
		return nil
	}
	l := p.lims[from]
	if l == nil {
		l = rate.NewLimiter(r, p.burstOf(r))
		p.lims[from] = l
	}
	return l
}

// burstOf is the burst of a limiter at rate r: --send-burst, else one
// second's worth (at least 1).
func (p *pacer) burstOf(r rate.Limit) int {
	if p.burst > 0 {
		return p.burst
	}
	return max(1, int(r))
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
