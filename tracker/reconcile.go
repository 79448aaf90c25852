package tracker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Never twice across a database failover (docs/design.md §19). On a new
// PostgreSQL primary (store.FailoverLog) a group created before the
// failover reconciles, as it loads and before it claims anything: every
// recipient it could have claimed on the old primary is looked up in the
// provider's record of what it sent from the group's number
// (crewcast.SentLister). A message found is recorded as sent, with its
// message id routed; without such a record the outcome cannot be known and
// the recipient becomes unconfirmed. The group's journal records it
// (the event store.failover_reconciled), so it happens once per group and
// failover, and a restart during the reconciliation does it again for the
// groups not yet done: the failover is a row in the database.

// failoverSource is what a group reads to reconcile.
type failoverSource struct {
	log     store.FailoverLog   // nil: the store never fails over (SQLite)
	lister  crewcast.SentLister // nil: the provider keeps no list
	timeout time.Duration       // one list call
}

func (t *Tracker) failoverSource() failoverSource {
	fs := failoverSource{timeout: t.cfg.SendTimeout}
	fs.log, _ = t.st.(store.FailoverLog)
	fs.lister, _ = t.cfg.Provider.(crewcast.SentLister)
	return fs
}

// errReconcileWait keeps a group broken (reloading with backoff) while
// sends it made before the failover are still in flight here: their
// messages may not be in the provider's record yet.
var errReconcileWait = errors.New("failover reconciliation waits for sends in flight")

// reconcileFailover emits the group's reconciliation if it needs one.
func (a *groupActor) reconcileFailover(c *actor.Context[groupMsg], now time.Time) error {
	fs := a.env.failover
	if fs.log == nil {
		return nil
	}
	f, ok := fs.log.LastFailover()
	if !ok || !a.g.NeedsReconcile(f.ID, f.DetectedAt) {
		return nil
	}
	candidates := a.g.FailoverCandidates(f.DetectedAt)
	if len(candidates) > 0 && callsRunning(a.env.work, a.key) && a.failures < 30 {
		return errReconcileWait
	}
	var sent []crewcast.SentMessage
	listed := false
	// A pool group texts from several numbers, maybe at both providers,
	// and the list is the default provider's for one number: without a
	// record of every number its candidates are unconfirmed, never resent.
	if len(candidates) > 0 && fs.lister != nil && a.g.Pool == "" {
		ctx, cancel := context.WithTimeout(c.Context(), fs.timeout)
		var err error
		sent, err = fs.lister.ListSent(ctx, a.g.From, a.g.CreatedAt)
		cancel()
		if err != nil && a.failures < 3 {
			return fmt.Errorf("failover reconciliation: list the provider's sends: %w", err)
		}
		listed = err == nil
	}
	ev := a.g.ReconcileFailover(f.ID, candidates, sent, listed, now)
	a.emit(ev)
	for _, s := range ev.Sent {
		a.addRoute(msgKey(a.env.cfg.Provider, s.MessageID), 0)
		a.adopt = append(a.adopt, s.MessageID)
		a.addRoute(convKey(a.g.FromFor(s.Index), a.g.Recipients[s.Index].Number), a.env.cfg.ConversationTTL)
	}
	for _, i := range ev.Unconfirmed {
		a.addRoute(convKey(a.g.FromFor(i), a.g.Recipients[i].Number), a.env.cfg.ConversationTTL)
	}
	c.Logger().Warn("store failover: group reconciled with the provider", "failover", f.ID,
		"candidates", len(candidates), "found_sent", len(ev.Sent), "unconfirmed", len(ev.Unconfirmed), "provider_record", listed)
	return nil
}

// callsRunning reports whether a provider call of group id made in this
// process has not answered yet (claims in flight without a queued result).
func callsRunning(work groupWorkQueue, id string) bool {
	q, ok := work.(*workQueue)
	if !ok {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.work[id]
	if w == nil {
		return false
	}
	answered := make(map[string]bool, len(w.results))
	for _, r := range w.results {
		answered[r.send.ID] = true
	}
	for s := range w.inflight {
		if !answered[s] {
			return true
		}
	}
	return false
}
