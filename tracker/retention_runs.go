package tracker

import (
	"context"
	"sync"
	"time"

	"github.com/crewcast/crewcast/store"
)

// AuditRetentionRun is the audit action of a retention pass an operator
// asked for (docs/design.md §14); scheduled passes are the policy's own doing
// and are not audited.
const AuditRetentionRun = "retention.run"

// RetentionRun is one retention pass: what started it, when, and what it
// changed (GET /v1/retention's "last").
type RetentionRun struct {
	// Trigger is "schedule" (the --retention-interval timer) or "api"
	// (crewcast retention run).
	Trigger    string          `json:"trigger"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
	DurationMS int64           `json:"duration_ms"`
	Report     RetentionReport `json:"report"`
	// Error is set when the pass stopped early; Report then counts what
	// it did before.
	Error string `json:"error,omitempty"`
}

// RetentionStatus is what GET /v1/retention answers.
type RetentionStatus struct {
	// Interval is the schedule ("1h0m0s"), or "off".
	Interval string `json:"interval"`
	// Policy is the configured retention, in hours (negative: stage off).
	Policy RetentionPolicyView `json:"policy"`
	// Last is the last finished pass; null before the first.
	Last *RetentionRun `json:"last"`
	// NextAt is when the schedule runs next (absent when off).
	NextAt time.Time `json:"next_at,omitzero"`
	// Runs counts passes since the server started.
	Runs int `json:"runs"`
}

// RetentionPolicyView shows a policy without its key.
type RetentionPolicyView struct {
	RedactAfterHours float64 `json:"redact_after_hours"`
	HashAfterHours   float64 `json:"hash_after_hours"`
	DeleteAfterHours float64 `json:"delete_after_hours"`
	InboxAfterHours  float64 `json:"inbox_after_hours"`
	// ReplayAfterHours is how long the replay record keeps a processed
	// webhook's event id hash (negative: for ever).
	ReplayAfterHours float64 `json:"replay_after_hours"`
	// HashKeySet says whether a hash key is in use (CREWCAST_HASH_KEY, or
	// the server's generated key stored in the database): without one the
	// hash stage is skipped.
	HashKeySet bool `json:"hash_key_set"`
}

// Retainer runs retention passes one at a time, for the schedule and for
// operators, and remembers the last one.
type Retainer struct {
	t        *Tracker
	policy   RetentionPolicy
	interval time.Duration

	run sync.Mutex // one pass at a time

	mu   sync.Mutex
	last *RetentionRun
	runs int
	next time.Time
}

// NewRetainer returns the retention runner of policy, scheduled every
// interval by its caller (interval <= 0: no schedule, passes on request).
func (t *Tracker) NewRetainer(policy RetentionPolicy, interval time.Duration) *Retainer {
	return &Retainer{t: t, policy: policy, interval: interval}
}

// Run makes one pass now (waiting for one in progress to end first). A
// pass asked by someone (ctx carries a store.AuditActor: the HTTP API
// puts it there) is audited as retention.run: the entry commits with the
// pass's last write (RunRetention). A pass that stopped early has changed
// some of what it meant to, and may not reach that write: its entry is
// then appended on its own once it stopped.
func (r *Retainer) Run(ctx context.Context, trigger string) (RetentionRun, error) {
	r.run.Lock()
	defer r.run.Unlock()
	clk := r.t.cfg.Clock
	run := RetentionRun{Trigger: trigger, StartedAt: clk.Now()}
	var audit []store.AuditEntry
	if who, ok := store.AuditActorFrom(ctx); ok {
		audit = append(audit, store.AuditEntry{At: run.StartedAt.UTC(), Actor: who, Action: AuditRetentionRun})
	}
	rep, err := r.t.RunRetention(ctx, r.policy, audit...)
	if err != nil && len(audit) > 0 {
		if aerr := r.t.st.AppendAudit(context.WithoutCancel(ctx), audit...); aerr != nil {
			r.t.cfg.Logger.ErrorContext(ctx, "audit write failed", "action", AuditRetentionRun, "err", aerr.Error())
		}
	}
	run.FinishedAt = clk.Now()
	run.DurationMS = run.FinishedAt.Sub(run.StartedAt).Milliseconds()
	run.Report = rep
	if err != nil {
		run.Error = err.Error()
	}
	r.mu.Lock()
	r.last = &run
	r.runs++
	r.mu.Unlock()
	return run, err
}

// SetNext records when the schedule runs next.
func (r *Retainer) SetNext(t time.Time) {
	r.mu.Lock()
	r.next = t
	r.mu.Unlock()
}

// Status is the last pass and the schedule.
func (r *Retainer) Status() RetentionStatus {
	p := r.policy.withDefaults()
	hours := func(d time.Duration) float64 { return d.Hours() }
	st := RetentionStatus{Interval: "off", Policy: RetentionPolicyView{
		RedactAfterHours: hours(p.RedactAfter), HashAfterHours: hours(p.HashAfter),
		DeleteAfterHours: hours(p.DeleteAfter), InboxAfterHours: hours(p.InboxAfter), ReplayAfterHours: hours(p.ReplayAfter),
		HashKeySet: len(p.HashKey) > 0,
	}}
	if r.interval > 0 {
		st.Interval = r.interval.String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil {
		l := *r.last
		st.Last = &l
	}
	st.Runs = r.runs
	if r.interval > 0 {
		st.NextAt = r.next
	}
	return st
}
