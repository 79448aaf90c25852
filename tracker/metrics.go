package tracker

import (
	"time"

	"github.com/crewcast/crewcast"
)

// Metrics receives the tracker's service counters (the Prometheus exporter
// in package metrics implements it). Methods must be cheap and safe for
// concurrent use. Embed NopMetrics to implement only some.
type Metrics interface {
	// WebhookIngested counts one webhook made durable (result "new"),
	// recognised as a duplicate of a stored one ("duplicate") or, its
	// inbox row purged, as a replay the replay record knows ("replay"), or
	// failing ("error").
	WebhookIngested(provider, result string)
	// SendOutcome counts one provider send by result (group.Result*) and
	// error class.
	SendOutcome(provider, result string, class crewcast.ErrorClass)
	// StatusChanged counts a recipient moving into a status.
	StatusChanged(to crewcast.Status)
	// TimeToDelivered observes the time from acceptance to delivery.
	TimeToDelivered(d time.Duration)
}

// NopMetrics discards everything.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

// WebhookIngested does nothing.
func (NopMetrics) WebhookIngested(string, string) {}

// SendOutcome does nothing.
func (NopMetrics) SendOutcome(string, string, crewcast.ErrorClass) {}

// StatusChanged does nothing.
func (NopMetrics) StatusChanged(crewcast.Status) {}

// TimeToDelivered does nothing.
func (NopMetrics) TimeToDelivered(time.Duration) {}
