package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crewcast/crewcast/tracker"
)

// retentionFirstDelay is how soon after start the first scheduled
// retention pass runs (sooner when the interval is shorter).
const retentionFirstDelay = 10 * time.Second

// privacy is the API's view of retention and erasure (httpapi.Privacy).
type privacy struct{ s *Server }

func (p privacy) RetentionStatus() tracker.RetentionStatus { return p.s.ret.Status() }

func (p privacy) RunRetention(ctx context.Context) (tracker.RetentionRun, error) {
	run, err := p.s.ret.Run(ctx, "api")
	logRetentionRun(p.s.cfg.Logger, run, err)
	return run, err
}

func (p privacy) Erase(ctx context.Context, number, by string) (tracker.ErasureReport, error) {
	return p.s.tr.Erase(ctx, number, by)
}

func (p privacy) HashedNumber(number string) string { return p.s.tr.HashedNumber(number) }

// logRetentionRun logs one pass (counts only: no numbers, no bodies).
func logRetentionRun(log *slog.Logger, run tracker.RetentionRun, err error) {
	rep := run.Report
	if err != nil {
		log.Error("retention run failed", "trigger", run.Trigger, "err", err)
		return
	}
	log.Info("retention run", "trigger", run.Trigger, "redacted", rep.Redacted, "hashed", rep.Hashed, "deleted", rep.Deleted,
		"inbox_purged", rep.InboxPurged, "replays_purged", rep.ReplaysPurged, "replies_redacted", rep.RepliesRedacted, "audit_purged", rep.AuditPurged,
		"unmatched_trimmed", rep.UnmatchedTrimmed, "replies_deleted", rep.RepliesDeleted, "skipped", rep.Skipped,
		"duration_ms", run.DurationMS)
}

// retentionCollector exports the last retention pass.
type retentionCollector struct {
	ret                           *tracker.Retainer
	lastRun, lastDuration, lastOK *prometheus.Desc
	lastItems, runs               *prometheus.Desc
}

func newRetentionCollector(ret *tracker.Retainer) *retentionCollector {
	return &retentionCollector{
		ret: ret,
		lastRun: prometheus.NewDesc("crewcast_retention_last_run_timestamp_seconds",
			"When the last retention pass finished (Unix time); absent before the first.", nil, nil),
		lastDuration: prometheus.NewDesc("crewcast_retention_last_run_duration_seconds",
			"How long the last retention pass took.", nil, nil),
		lastOK: prometheus.NewDesc("crewcast_retention_last_run_success",
			"1 when the last retention pass finished without error, 0 when it stopped early.", nil, nil),
		lastItems: prometheus.NewDesc("crewcast_retention_last_run_items",
			"What the last retention pass changed, by kind.", []string{"kind"}, nil),
		runs: prometheus.NewDesc("crewcast_retention_runs",
			"Retention passes since the server started.", nil, nil),
	}
}

func (c *retentionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lastRun
	ch <- c.lastDuration
	ch <- c.lastOK
	ch <- c.lastItems
	ch <- c.runs
}

func (c *retentionCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.ret.Status()
	ch <- prometheus.MustNewConstMetric(c.runs, prometheus.GaugeValue, float64(st.Runs))
	l := st.Last
	if l == nil {
		return
	}
	ok := 1.0
	if l.Error != "" {
		ok = 0
	}
	ch <- prometheus.MustNewConstMetric(c.lastRun, prometheus.GaugeValue, float64(l.FinishedAt.UnixNano())/1e9)
	ch <- prometheus.MustNewConstMetric(c.lastDuration, prometheus.GaugeValue, float64(l.DurationMS)/1000)
	ch <- prometheus.MustNewConstMetric(c.lastOK, prometheus.GaugeValue, ok)
	r := l.Report
	for kind, v := range map[string]int{"redacted": r.Redacted, "hashed": r.Hashed, "deleted": r.Deleted,
		"inbox_purged": r.InboxPurged, "replays_purged": r.ReplaysPurged, "replies_redacted": r.RepliesRedacted, "audit_purged": r.AuditPurged,
		"unmatched_trimmed": r.UnmatchedTrimmed, "replies_deleted": r.RepliesDeleted, "skipped": r.Skipped} {
		ch <- prometheus.MustNewConstMetric(c.lastItems, prometheus.GaugeValue, float64(v), kind)
	}
}
