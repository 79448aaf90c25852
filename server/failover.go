package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Failover detection (docs/deploy.md, "High availability PostgreSQL"): on
// PostgreSQL the server asks every second which primary it writes to (its
// system identifier and timeline). A change means a standby was promoted
// (or the database replaced): crewcast_store_failovers_total counts it and
// the log says so, with the window that asynchronous replication may have
// lost.

// primaryIdentifier is implemented by store/postgres.
type primaryIdentifier interface {
	PrimaryIdentity(ctx context.Context) (string, error)
}

// failoverEvery spaces the identity checks.
var failoverEvery = time.Second

// primaryWatch remembers the last primary seen; observe reports a change.
type primaryWatch struct {
	last      string
	lastSeen  time.Time
	failovers prometheus.Counter
}

func newPrimaryWatch() *primaryWatch {
	return &primaryWatch{failovers: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "crewcast_store_failovers_total",
		Help: "Times this node found its PostgreSQL primary replaced (system identifier or timeline changed): a failover.",
	})}
}

// observe records the identity seen at now and reports whether it differs
// from the one seen before (the first identity is no failover), with the
// previous identity and when it was last confirmed.
func (w *primaryWatch) observe(id string, now time.Time) (changed bool, before string, lastSeen time.Time) {
	before, lastSeen = w.last, w.lastSeen
	w.last, w.lastSeen = id, now
	if before == "" || before == id {
		return false, before, lastSeen
	}
	w.failovers.Inc()
	return true, before, lastSeen
}

// startPrimaryWatch registers the failover counter (0 on SQLite) and, on
// PostgreSQL, watches the primary until Stop.
func (s *Server) startPrimaryWatch() {
	w := newPrimaryWatch()
	s.reg.Registerer().MustRegister(w.failovers)
	if pi, ok := s.st.(primaryIdentifier); ok {
		s.wg.Add(1)
		go s.watchPrimary(pi, w)
	}
}

// watchPrimary runs until the server stops.
func (s *Server) watchPrimary(pi primaryIdentifier, w *primaryWatch) {
	defer s.wg.Done()
	t := time.NewTicker(failoverEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(s.retention, 2*time.Second)
		id, err := pi.PrimaryIdentity(ctx)
		cancel()
		if err == nil {
			if changed, before, seen := w.observe(id, time.Now()); changed {
				s.cfg.Logger.Warn("store failover: writing to a new PostgreSQL primary",
					"before", before, "after", id, "last_seen_before_ms", time.Since(seen).Milliseconds())
			}
		}
		select {
		case <-s.retention.Done(): // canceled by Stop
			return
		case <-t.C:
		}
	}
}
