package server

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

// opsCollector exports the two figures the alert rules in
// deploy/prometheus/crewcast-alerts.yml need and no event counter gives:
// how long the oldest unapplied webhook has waited in the inbox, and how
// many groups are paused (sends halted by a sender or configuration
// failure). Both come from the store, at most once per ttl, so frequent
// scrapes cost two indexed queries per ttl.
type opsCollector struct {
	st  opsStore
	now func() time.Time
	ttl time.Duration

	inboxAge, paused *prometheus.Desc

	mu        sync.Mutex
	at        time.Time
	age       float64
	numPaused int
}

// maxPausedCounted caps the paused-groups query; the gauge then reads
// "at least" this many.
const maxPausedCounted = 1000

// opsStore is what the collector reads: the inbox's oldest pending entry
// and the paused groups.
type opsStore interface {
	PendingInbox(ctx context.Context, after store.InboxRef, limit int) ([]store.InboxEntry, error)
	ListGroups(ctx context.Context, q store.GroupQuery) (rows []store.GroupRow, next string, err error)
}

func newOpsCollector(st opsStore, now func() time.Time) *opsCollector {
	return &opsCollector{st: st, now: now, ttl: 5 * time.Second,
		inboxAge: prometheus.NewDesc("crewcast_inbox_oldest_pending_age_seconds",
			"Age of the oldest webhook made durable but not yet applied to its group (0 when none waits).", nil, nil),
		paused: prometheus.NewDesc("crewcast_groups_paused",
			"Groups whose sends are halted by a sender or configuration failure (capped at 1000).", nil, nil),
	}
}

func (c *opsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inboxAge
	ch <- c.paused
}

func (c *opsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.at.IsZero() || now.Sub(c.at) >= c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pend, err := c.st.PendingInbox(ctx, store.InboxRef{}, 1)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.inboxAge, err)
			return
		}
		rows, _, err := c.st.ListGroups(ctx, store.GroupQuery{Status: crewcast.GroupPaused, Limit: maxPausedCounted})
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.paused, err)
			return
		}
		c.age = 0
		if len(pend) > 0 && !pend[0].ReceivedAt.IsZero() {
			c.age = max(0, now.Sub(pend[0].ReceivedAt).Seconds())
		}
		c.numPaused, c.at = len(rows), now
	}
	ch <- prometheus.MustNewConstMetric(c.inboxAge, prometheus.GaugeValue, c.age)
	ch <- prometheus.MustNewConstMetric(c.paused, prometheus.GaugeValue, float64(c.numPaused))
}
