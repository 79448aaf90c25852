package group

import (
	"time"

	"github.com/crewcast/crewcast"
)

// Reconciliation after a database failover (docs/design.md §19). With
// asynchronous replication the old primary's last transactions may be
// gone: a claim and the provider's acceptance of a message that did go
// out, after which the recipient looks unsent on the new primary. Before
// the group claims anything there, every recipient it could have claimed
// before the failover is looked up in the provider's record of what it
// sent; a message found is recorded as sent, and where the provider keeps
// no such record the outcome cannot be known: unconfirmed, never resent.

// TypeFailoverReconciled is the journal event of that reconciliation.
const TypeFailoverReconciled = "store.failover_reconciled"

// FoundSend is a lost claim whose message the provider's record shows.
type FoundSend struct {
	Index     int    `json:"i"`
	MessageID string `json:"message_id"`
}

// FailoverReconciled records a group's reconciliation after the failover
// onto the primary named Failover: Sent were found at the provider,
// Unconfirmed could not be known; every other candidate was certainly
// not sent and stays as it was.
type FailoverReconciled struct {
	At          time.Time   `json:"at"`
	Failover    string      `json:"failover"`
	Lookup      bool        `json:"lookup"` // the provider's record was read
	Sent        []FoundSend `json:"sent,omitempty"`
	Unconfirmed []int       `json:"unconfirmed,omitempty"`
}

func (FailoverReconciled) Type() string { return TypeFailoverReconciled }

// unconfirmedByFailover is the reason shown for a recipient whose claim
// the failover may have lost.
const unconfirmedByFailover = "the database failed over before this send's record was replicated, and the provider cannot say whether it went out"

// NeedsReconcile reports whether the group must reconcile the failover
// onto failover, found at detected: a group created before it that has not
// reconciled it yet.
func (g *Group) NeedsReconcile(failover string, detected time.Time) bool {
	return failover != "" && g.ReconciledFailover != failover && g.CreatedAt.Before(detected)
}

// FailoverCandidates lists the recipients whose claim could have been
// committed on the old primary and lost: those waiting to be sent whose
// turn (a retry or a hold) had come before the failover was found.
// Recipients of a group MMS share one send: all or none.
func (g *Group) FailoverCandidates(detected time.Time) []int {
	var out []int
	for i, r := range g.Recipients {
		if !g.waiting(r, detected) || r.RetryAt.After(detected) || r.Attempts >= g.Settings.MaxAttempts {
			continue
		}
		out = append(out, i)
	}
	return out
}

// Reconcile builds the event for the candidates, given the provider's
// record of the messages it accepted from the group's number (listed:
// the record could be read). A candidate's message is one to its number
// with its text (any text when the record has none) created since the
// group (to the second: providers' times may carry no more); each record
// entry proves one candidate at most.
func (g *Group) ReconcileFailover(failover string, candidates []int, sent []crewcast.SentMessage, listed bool, now time.Time) FailoverReconciled {
	ev := FailoverReconciled{At: now, Failover: failover, Lookup: listed}
	if !listed {
		ev.Unconfirmed = append([]int(nil), candidates...)
		return ev
	}
	used := make([]bool, len(sent))
	for _, i := range candidates {
		r := g.Recipients[i]
		text := g.TextFor(i)
		for k, m := range sent {
			if !used[k] && m.To == r.Number && (m.Text == "" || m.Text == text) && (m.CreatedAt.IsZero() || !m.CreatedAt.Before(g.CreatedAt.Truncate(time.Second))) {
				used[k] = true
				ev.Sent = append(ev.Sent, FoundSend{Index: i, MessageID: m.MessageID})
				break
			}
		}
	}
	if g.Mode == crewcast.ModeGroupMMS && len(ev.Sent) > 0 && len(ev.Sent) < len(candidates) {
		// One thread: part of it found means all of it went out.
		found := map[int]bool{}
		for _, f := range ev.Sent {
			found[f.Index] = true
		}
		for _, i := range candidates {
			if !found[i] {
				ev.Sent = append(ev.Sent, FoundSend{Index: i, MessageID: ev.Sent[0].MessageID})
			}
		}
	}
	return ev
}

func (g *Group) applyFailoverReconciled(v FailoverReconciled) error {
	idx := make([]int, 0, len(v.Sent)+len(v.Unconfirmed))
	for _, f := range v.Sent {
		idx = append(idx, f.Index)
	}
	idx = append(idx, v.Unconfirmed...)
	if err := g.checkIndices(v.Type(), idx); err != nil {
		return err
	}
	g.ReconciledFailover = v.Failover
	claim := func(r *Recipient) bool {
		if r.Status != crewcast.StatusPending && r.Status != crewcast.StatusScheduled {
			return false // moved on since (nothing the lost claim could change)
		}
		r.Attempts++ // the lost claim spent one
		r.Claims++
		r.ClaimedAt, r.RetryAt, r.SendID = v.At, time.Time{}, ""
		r.ErrorCode, r.ErrorClass, r.ErrorDetail, r.Reason = "", "", "", ""
		return true
	}
	for _, f := range v.Sent {
		r := g.Recipients[f.Index]
		if claim(r) {
			r.Status, r.MessageID, r.SentAt = crewcast.StatusSent, f.MessageID, v.At
			r.NextCheckAt = v.At.Add(g.Settings.CheckAfter)
			g.markDirty(f.Index)
		}
	}
	for _, i := range v.Unconfirmed {
		r := g.Recipients[i]
		if claim(r) {
			r.Status, r.Reason, r.ErrorClass = crewcast.StatusUnconfirmed, unconfirmedByFailover, crewcast.ClassUncertain
			g.markDirty(i)
		}
	}
	g.touch(v.At)
	return nil
}
