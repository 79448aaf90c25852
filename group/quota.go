package group

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/crewcast/crewcast"
)

// Select decides an exact quota at now (see waves.go): who is no longer
// counted, who is selected, who waits on standby, and whether the quota
// filled or re-opened. An answer is only ranked once settle has passed
// since the provider received it, so that answers whose webhooks arrive
// out of order within settle are still taken in the provider's order.
// wake is when an unsettled answer settles (zero: none waits).
func (g *Group) Select(now time.Time, settle time.Duration) (out []Event, wake time.Time) {
	if !g.Exact() {
		return nil, time.Time{}
	}
	q := g.Quorum
	var drop, standby, fresh []int
	selected := 0
	for i, r := range g.Recipients {
		yes := g.saysYes(r)
		switch {
		case (r.Selected || r.Standby) && !yes:
			drop = append(drop, i)
		case !yes:
		case r.Selected:
			selected++
		case r.Standby:
			standby = append(standby, i)
		default:
			if t := answerAt(r).Add(settle); t.After(now) {
				if wake.IsZero() || t.Before(wake) {
					wake = t
				}
				continue
			}
			fresh = append(fresh, i)
		}
	}
	if len(drop) > 0 {
		out = append(out, Unselected{At: now, Indices: drop})
	}
	g.byAnswer(standby, true)
	g.byAnswer(fresh, false)
	cands := append(standby, fresh...)
	pick := cands[:min(max(q.Count-selected, 0), len(cands))]
	if len(pick) > 0 {
		out = append(out, Selected{At: now, Indices: slices.Clone(pick)})
	}
	if late := fresh[max(len(pick)-len(standby), 0):]; len(late) > 0 {
		out = append(out, Standby{At: now, Indices: slices.Clone(late)})
	}
	filled := selected+len(pick) >= q.Count
	switch {
	case filled && q.MetAt.IsZero():
		out = append(out, g.fill(now))
		if idx := g.untexted(); g.waves() != nil && len(idx) > 0 {
			out = append(out, NotNeeded{At: now, Indices: idx})
		}
	case !filled && !q.MetAt.IsZero():
		out = append(out, QuorumReopened{At: now})
	}
	return out, wake
}

// fill is the QuorumMet of an exact quota: with waves nobody is canceled
// (the untexted become not_needed instead); without, as any quorum.
func (g *Group) fill(now time.Time) QuorumMet {
	q := g.Quorum
	pending := slices.ContainsFunc(g.Recipients, func(r *Recipient) bool { return r.Status == crewcast.StatusPending })
	cancel := g.waves() == nil && !q.KeepSending && pending && g.Status != crewcast.GroupCanceled
	return QuorumMet{At: now, Response: q.Response, Count: q.Count, Cancel: cancel}
}

// byAnswer orders recipients by when the provider received their answer
// (standby: by when they went on standby first), then roster order.
func (g *Group) byAnswer(idx []int, standby bool) {
	slices.SortFunc(idx, func(a, b int) int {
		ra, rb := g.Recipients[a], g.Recipients[b]
		if standby {
			if c := ra.StandbyAt.Compare(rb.StandbyAt); c != 0 {
				return c
			}
		}
		if c := answerAt(ra).Compare(answerAt(rb)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
}

// owedAutoReply returns the kind of auto-reply r is owed ("" = none).
func (g *Group) owedAutoReply(r *Recipient) string {
	if g.Quorum == nil || r.AutoSendID != "" || r.Status == crewcast.StatusOptedOut {
		return ""
	}
	switch {
	case r.Selected && r.ConfirmDone == "" && g.Policy != nil && g.Policy.ConfirmedText != "":
		return AutoConfirmed
	case r.Standby && r.FilledDone == "":
		return AutoFilled
	}
	return ""
}

// ClaimAutoReplies decides the auto-replies due at now, at most limit
// (<= 0: no limit), outside the recipients' quiet hours (unless critical).
func (g *Group) ClaimAutoReplies(now time.Time, limit int) (AutoReplyClaimed, bool) {
	c := AutoReplyClaimed{At: now}
	if !g.Exact() || g.Status == crewcast.GroupPaused {
		return c, false
	}
	for i, r := range g.Recipients {
		if limit > 0 && len(c.Sends) >= limit {
			break
		}
		kind := g.owedAutoReply(r)
		if kind == "" || r.AutoRetryAt.After(now) || g.quietAt(r, now) {
			continue
		}
		c.Sends = append(c.Sends, AutoReplySend{ID: autoSendID(i, kind), Index: i, Kind: kind})
	}
	return c, len(c.Sends) > 0
}

// NextAutoReplyAt is when the next owed auto-reply may be claimed, no
// earlier than now (zero: none owed or one is in flight for everyone
// owed). An owed reply held by quiet hours is due when they end.
func (g *Group) NextAutoReplyAt(now time.Time) time.Time {
	var next time.Time
	for _, r := range g.Recipients {
		if g.owedAutoReply(r) == "" {
			continue
		}
		at := r.AutoRetryAt
		if at.Before(now) {
			at = now // (a zero AutoRetryAt is not "never": it is due now)
		}
		if until, ok := g.quietUntil(r, at); ok {
			at = until
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// AutoReplyText is the text of an auto-reply of a kind.
func (g *Group) AutoReplyText(kind string) string {
	if g.Policy == nil {
		return DefaultFilledText
	}
	if kind == AutoConfirmed {
		return g.Policy.ConfirmedText
	}
	if g.Policy.FilledText != "" {
		return g.Policy.FilledText
	}
	return DefaultFilledText
}

// AutoReplyOutcome classifies a provider's answer to an auto-reply send,
// as for a follow-up.
func (g *Group) AutoReplyOutcome(s Send, res crewcast.SendResult, err error, now time.Time) Outcome {
	return g.FollowupOutcome(s, res, err, now)
}

// RecoverAutoReplies marks auto-replies left in flight by a previous
// process as uncertain: spent, never resent.
func (g *Group) RecoverAutoReplies(now time.Time, inFlight func(sendID string) bool) (AutoReplyOutcomes, bool) {
	out := AutoReplyOutcomes{At: now}
	for i, r := range g.Recipients {
		if r.AutoSendID != "" && (inFlight == nil || !inFlight(r.AutoSendID)) {
			out.Outcomes = append(out.Outcomes, Outcome{SendID: r.AutoSendID, Indices: []int{i}, Result: ResultUncertain,
				Class: crewcast.ClassUncertain, Detail: "crash between claim and result: the auto-reply may or may not have gone out"})
		}
	}
	return out, len(out.Outcomes) > 0
}

// applyQuotaEvent applies the events of this file and waves.go.
func (g *Group) applyQuotaEvent(e Event) error {
	if err := g.checkIndices(e.Type(), quotaEventIndices(e)); err != nil {
		return err
	}
	switch v := e.(type) {
	case WaveSent:
		for _, i := range v.Indices {
			if r := g.Recipients[i]; r.Wave == 0 {
				r.Wave = v.Wave
				g.markDirty(i)
			}
		}
		g.WavesSent, g.LastWaveAt = max(g.WavesSent, v.Wave), v.At
	case Selected:
		g.each(v.Indices, func(r *Recipient) {
			r.Selected, r.Standby, r.SelectedAt = true, false, v.At
			if v.By != "" {
				r.Released = false
			}
		})
	case Standby:
		g.each(v.Indices, func(r *Recipient) {
			if !r.Selected {
				r.Standby, r.StandbyAt = true, v.At
			}
		})
	case Unselected:
		g.each(v.Indices, func(r *Recipient) {
			r.Selected, r.Standby = false, false
			if v.By != "" {
				r.Released = true
			}
		})
	case NotNeeded:
		g.each(v.Indices, func(r *Recipient) {
			if r.Wave == 0 && (r.Status == crewcast.StatusPending || r.Status == crewcast.StatusScheduled) {
				r.Status, r.RetryAt = crewcast.StatusNotNeeded, time.Time{}
			}
		})
	case QuorumReopened:
		if g.Quorum != nil {
			g.Quorum.MetAt = time.Time{}
		}
		for i, r := range g.Recipients {
			if r.Status == crewcast.StatusNotNeeded {
				r.Status = crewcast.StatusPending
				g.markDirty(i)
			}
		}
	case AutoReplyClaimed:
		for _, s := range v.Sends {
			g.each([]int{s.Index}, func(r *Recipient) {
				r.AutoSendID, r.AutoClaimedAt, r.AutoRetryAt = s.ID, v.At, time.Time{}
			})
		}
	case AutoReplyOutcomes:
		for _, o := range v.Outcomes {
			for _, i := range o.Indices {
				g.applyAutoReplyOutcome(v.At, i, o)
			}
		}
	case CallEnded:
		g.applyCallEnded(v)
	default:
		return fmt.Errorf("apply: unknown event %T", e)
	}
	if at := quotaEventTime(e); !at.IsZero() {
		g.touch(at)
	}
	return nil
}

func (g *Group) each(idx []int, fn func(r *Recipient)) {
	for _, i := range idx {
		fn(g.Recipients[i])
		g.markDirty(i)
	}
}

func (g *Group) applyAutoReplyOutcome(at time.Time, i int, o Outcome) {
	r := g.Recipients[i]
	if r.AutoSendID != o.SendID {
		return // an old send's answer: recorded, changes nothing
	}
	g.markDirty(i)
	r.AutoSendID, r.AutoClaimedAt = "", time.Time{}
	done := ""
	switch o.Result {
	case ResultAccepted:
		done = AutoSent
	case ResultUncertain:
		done = AutoUncertain
	case ResultFailed:
		done = AutoFailed
	case ResultSuppressed, ResultStopped:
		done = AutoSkipped
	case ResultHalted: // sender failure: paused; claimed again on resume
		r.AutoRetryAt = at
		if g.Status != crewcast.GroupCanceled {
			g.Status, g.PauseReason = crewcast.GroupPaused, pauseReason(o)
		}
		return
	default: // certainly not sent: claimed again under the same id
		r.AutoRetryAt = o.RetryAt
		return
	}
	if o.SendID == autoSendID(i, AutoConfirmed) {
		r.ConfirmDone = done
	} else {
		r.FilledDone = done
	}
}

func quotaEventTime(e Event) time.Time {
	switch v := e.(type) {
	case WaveSent:
		return v.At
	case Selected:
		return v.At
	case Standby:
		return v.At
	case Unselected:
		return v.At
	case NotNeeded:
		return v.At
	case QuorumReopened:
		return v.At
	case AutoReplyClaimed:
		return v.At
	case AutoReplyOutcomes:
		return v.At
	case CallEnded:
		return v.At
	}
	return time.Time{}
}

func newQuotaEvent(typ string) Event {
	switch typ {
	case TypeWaveSent:
		return &WaveSent{}
	case TypeSelected:
		return &Selected{}
	case TypeStandby:
		return &Standby{}
	case TypeUnselected:
		return &Unselected{}
	case TypeNotNeeded:
		return &NotNeeded{}
	case TypeQuorumReopened:
		return &QuorumReopened{}
	case TypeAutoReplyClaimed:
		return &AutoReplyClaimed{}
	case TypeAutoReplyOutcomes:
		return &AutoReplyOutcomes{}
	case TypeCodesAssigned:
		return &CodesAssigned{}
	case TypeCallEnded:
		return &CallEnded{}
	}
	return newPoolEvent(typ)
}

func derefQuotaEvent(e Event) Event {
	switch v := e.(type) {
	case *WaveSent:
		return *v
	case *Selected:
		return *v
	case *Standby:
		return *v
	case *Unselected:
		return *v
	case *NotNeeded:
		return *v
	case *QuorumReopened:
		return *v
	case *AutoReplyClaimed:
		return *v
	case *AutoReplyOutcomes:
		return *v
	case *CodesAssigned:
		return *v
	case *CallEnded:
		return *v
	}
	return derefPoolEvent(e)
}

func quotaEventIndices(e Event) []int {
	switch v := e.(type) {
	case WaveSent:
		return v.Indices
	case Selected:
		return v.Indices
	case Standby:
		return v.Indices
	case Unselected:
		return v.Indices
	case NotNeeded:
		return v.Indices
	case AutoReplyClaimed:
		out := make([]int, len(v.Sends))
		for k, s := range v.Sends {
			out[k] = s.Index
		}
		return out
	case AutoReplyOutcomes:
		var out []int
		for _, o := range v.Outcomes {
			out = append(out, o.Indices...)
		}
		return out
	case CallEnded:
		return []int{v.Index}
	}
	return poolEventIndices(e)
}
