package tracker

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"
)

// Senders (docs/design.md §16) on the sending side: each registered
// sender is paced at its own mps.

// rateOfLocked is from's rate: an explicit --send-rates override, else the
// registered sender's mps, else --send-rate. p.mu is held.
func (p *pacer) rateOfLocked(from string) rate.Limit {
	if o, ok := p.overrides[from]; ok {
		return rate.Limit(o)
	}
	if mps, ok := p.senders[from]; ok {
		return rate.Limit(mps)
	}
	return p.rate
}

// setSenders replaces the registered senders' rates. A number whose rate
// changed gets a new limiter at its next send (it starts with a full
// bucket: up to one burst more at the moment of the change).
func (p *pacer) setSenders(mps map[string]float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.senders = mps
	for from, l := range p.lims {
		if r := p.rateOfLocked(from); r <= 0 || l.Limit() != r {
			delete(p.lims, from)
		}
	}
}

// LoadSenders reads the registered senders and paces each at its mps. The
// server calls it at start and after every change to the senders.
func (t *Tracker) LoadSenders(ctx context.Context) error {
	ss, err := t.st.ListSenders(ctx)
	if err != nil {
		return fmt.Errorf("tracker: load senders: %w", err)
	}
	mps := make(map[string]float64, len(ss))
	dir := make(map[string]senderInfo, len(ss))
	for _, s := range ss {
		mps[s.Number] = s.MPS
		dir[s.Number] = senderInfo{provider: s.Provider, pool: s.Pool}
	}
	t.pacer.setSenders(mps)
	t.provs.dir.Store(newSenderDir(dir)) // providers.go: who sends from each number
	return nil
}
