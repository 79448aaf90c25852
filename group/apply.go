package group

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
)

// Apply changes g by one event. It is the only way state changes, during
// live operation and during recovery alike, so it must be deterministic:
// no clock, no randomness, no I/O. An event that refers to a recipient the
// group does not have is an error (a corrupt or foreign journal).
func (g *Group) Apply(e Event) error {
	if _, ok := e.(Created); !ok && g.ID == "" {
		return fmt.Errorf("apply %s: group not created", e.Type())
	}
	switch v := e.(type) {
	case Created:
		return g.applyCreated(v)
	case Claimed:
		if err := g.checkIndices(v.Type(), Indices(v)); err != nil {
			return err
		}
		for _, s := range v.Sends {
			g.Sends++
			for _, i := range s.Indices {
				r := g.Recipients[i]
				r.Status = crewcast.StatusSending
				r.Attempts++
				r.Claims++
				r.ClaimedAt = v.At
				r.SendID = s.ID
				r.RetryAt = time.Time{}
				r.ErrorCode, r.ErrorClass, r.ErrorDetail, r.Reason = "", "", "", ""
				g.markDirty(i)
			}
		}
		g.touch(v.At)
	case Outcomes:
		if err := g.checkIndices(v.Type(), Indices(v)); err != nil {
			return err
		}
		for _, o := range v.Outcomes {
			for _, i := range o.Indices {
				g.underOptOut(g.Recipients[i], func() { g.applyOutcome(v.At, i, o) })
			}
		}
		g.touch(v.At)
	case Observed:
		if err := g.checkIndices(v.Type(), []int{v.Index}); err != nil {
			return err
		}
		if key := observedKey(v.EventID, v.Index); key != "" {
			if g.seen(key) {
				return nil
			}
			g.remember(key)
		}
		r := g.Recipients[v.Index]
		before := *r
		g.underOptOut(r, func() { g.applyObserved(v) })
		if *r != before {
			// Only a real change rewrites the projection row: a "sent"
			// webhook for a recipient already sent is journaled, not
			// projected again.
			g.markDirty(v.Index)
		}
		g.touch(v.At)
	case Replied:
		if err := g.checkIndices(v.Type(), []int{v.Index}); err != nil {
			return err
		}
		if v.EventID != "" {
			if g.seen(v.EventID) {
				return nil
			}
			g.remember(v.EventID)
		}
		g.applyReplied(v)
		g.noteAnswer(v)
		g.touch(v.At)
	case Unconfirmed:
		if err := g.checkIndices(v.Type(), v.Indices); err != nil {
			return err
		}
		for _, i := range v.Indices {
			r := g.Recipients[i]
			g.underOptOut(r, func() {
				if r.Status != crewcast.StatusSending {
					return
				}
				r.Status = crewcast.StatusUnconfirmed
				r.Reason = v.Reason
				r.ErrorClass = crewcast.ClassUncertain
				g.markDirty(i)
			})
		}
		g.touch(v.At)
	case Checked:
		if err := g.checkIndices(v.Type(), []int{v.Index}); err != nil {
			return err
		}
		r := g.Recipients[v.Index]
		r.Checks++
		if r.Status == crewcast.StatusSent {
			r.NextCheckAt = v.NextCheckAt
		}
		g.markDirty(v.Index)
		g.touch(v.At)
	case Expired:
		if err := g.checkIndices(v.Type(), v.Indices); err != nil {
			return err
		}
		for _, i := range v.Indices {
			r := g.Recipients[i]
			if r.Status != crewcast.StatusSent {
				continue
			}
			r.Status = crewcast.StatusUnknown
			r.Reason = v.Reason
			r.NextCheckAt = time.Time{}
			g.markDirty(i)
		}
		g.touch(v.At)
	case QuorumMet:
		if g.Quorum == nil || !g.Quorum.MetAt.IsZero() {
			return nil
		}
		g.Quorum.MetAt = v.At
		g.touch(v.At)
		if v.Cancel {
			return g.Apply(Canceled{At: v.At, By: "quorum"})
		}
	case Canceled:
		if g.Status == crewcast.GroupCanceled {
			return nil
		}
		for i, r := range g.Recipients {
			if r.Status == crewcast.StatusPending || r.Status == crewcast.StatusScheduled {
				r.Status = crewcast.StatusCanceled
				r.RetryAt = time.Time{}
				g.markDirty(i)
			}
		}
		g.Status = crewcast.GroupCanceled
		g.touch(v.At)
	case Resolved:
		if err := g.checkIndices(v.Type(), []int{v.Index}); err != nil {
			return err
		}
		r := g.Recipients[v.Index]
		if !Resolvable(r.Status) {
			return nil
		}
		switch v.Outcome {
		case ResolveDelivered:
			r.Status = crewcast.StatusDelivered
			r.DeliveredAt = v.At
			r.Reason = "confirmed delivered by operator"
		case ResolveNotDelivered:
			r.Reason = "confirmed not delivered by operator"
			if r.Attempts < g.Settings.MaxAttempts && g.Status != crewcast.GroupCanceled {
				r.Status = crewcast.StatusPending
				r.RetryAt = v.At
			} else {
				r.Status = crewcast.StatusFailed
				r.FailedAt = v.At
			}
		default:
			return fmt.Errorf("apply %s: unknown outcome %q", v.Type(), v.Outcome)
		}
		r.ErrorClass = crewcast.ClassNone
		g.markDirty(v.Index)
		g.touch(v.At)
	case RetryRequested:
		if err := g.checkIndices(v.Type(), []int{v.Index}); err != nil {
			return err
		}
		r := g.Recipients[v.Index]
		if r.Status != crewcast.StatusFailed {
			return nil
		}
		r.Status = crewcast.StatusPending
		r.RetryAt = v.At
		r.Reason = "retry requested by operator"
		g.markDirty(v.Index)
		g.touch(v.At)
	case Suppressed:
		if err := g.checkIndices(v.Type(), Indices(v)); err != nil {
			return err
		}
		for _, sr := range v.Recipients {
			r := g.Recipients[sr.Index]
			if r.Status != crewcast.StatusPending && r.Status != crewcast.StatusScheduled {
				continue
			}
			r.Status = crewcast.StatusOptedOut
			r.RetryAt = time.Time{}
			r.Reason = suppressedReason(sr.Reason, "before it was sent")
			g.markDirty(sr.Index)
		}
		g.touch(v.At)
	case Resumed:
		if g.Status == crewcast.GroupPaused {
			g.Status = crewcast.GroupSending
			g.PauseReason = ""
		}
		g.touch(v.At)
	case FailoverReconciled:
		if err := g.applyFailoverReconciled(v); err != nil {
			return err
		}
	default:
		if err := g.applyPolicyEvent(e); err != nil {
			return err
		}
	}
	g.recomputeStatus()
	return nil
}

func (g *Group) applyCreated(v Created) error {
	if g.ID != "" {
		return fmt.Errorf("apply %s: group %s already created", v.Type(), g.ID)
	}
	g.ID, g.From, g.Text, g.MediaURLs, g.Mode = v.ID, v.From, v.Text, v.MediaURLs, v.Mode
	g.CreatedAt, g.UpdatedAt = v.At, v.At
	g.Settings = v.Settings.WithDefaults()
	g.Responses = v.Responses
	if v.Quorum != nil {
		q := *v.Quorum
		g.Quorum = &q
	}
	g.Policy = v.Policy
	g.Pool = v.Pool
	g.Status = crewcast.GroupSending
	g.Recipients = make([]*Recipient, len(v.Recipients))
	for i, e := range v.Recipients {
		r := &Recipient{Index: i, Number: e.Number, Name: e.Name, Status: crewcast.StatusPending, Text: e.Text, ContactID: e.ContactID}
		if e.Suppressed {
			r.Status = crewcast.StatusOptedOut
			r.Reason = "on the suppression list"
		}
		r.TZ = e.TZ
		if i < len(v.Senders) {
			r.From = v.Senders[i]
		}
		g.holdUntilSendAt(r)
		g.Recipients[i] = r
		g.markDirty(i)
	}
	g.reindex()
	g.recomputeStatus()
	return nil
}

// underOptOut runs fn on a recipient's underlying status. A recipient who
// replied STOP shows opted_out, but a send already in flight still has an
// outcome and receipts worth recording: fn sees the status STOP replaced,
// and whatever fn makes of it is kept for START to restore.
func (g *Group) underOptOut(r *Recipient, fn func()) {
	if r.Status != crewcast.StatusOptedOut || r.BeforeOptOut == "" {
		fn()
		return
	}
	base, reason := r.BeforeOptOut, r.Reason
	r.Status = base
	fn()
	switch {
	case r.Status != crewcast.StatusOptedOut:
		base = r.Status
	case base != crewcast.StatusOptedOut:
		// fn opted them out itself: the provider refused the send
		// because the person opted out. The send certainly failed, and
		// that is what START must restore (not the in-flight status).
		base = crewcast.StatusFailed
	}
	r.Status, r.BeforeOptOut, r.Reason = crewcast.StatusOptedOut, base, reason
}

func (g *Group) applyOutcome(at time.Time, i int, o Outcome) {
	r := g.Recipients[i]
	if r.Status != crewcast.StatusSending || r.SendID != o.SendID {
		// Already moved on (a crash-recovery Unconfirmed, say): the
		// outcome of an old send changes nothing but the record.
		return
	}
	g.markDirty(i)
	r.ErrorCode, r.ErrorClass, r.ErrorDetail = o.Code, o.Class, o.Detail
	switch o.Result {
	case ResultAccepted:
		r.Status = crewcast.StatusSent
		r.MessageID, r.GroupMessageID = o.MessageID, o.GroupMessageID
		r.Provider = o.Provider
		r.SentAt = at
		r.NextCheckAt = at.Add(g.Settings.CheckAfter)
	case ResultFailed:
		r.FailedAt = at
		r.Status = crewcast.StatusFailed
		if o.OptOut {
			r.Status = crewcast.StatusOptedOut
			r.Reason = "provider reports the recipient opted out"
		}
	case ResultRetry:
		r.Status = crewcast.StatusPending
		r.RetryAt = o.RetryAt
	case ResultRateLimited:
		r.Status = crewcast.StatusPending
		r.Attempts-- // a 429 created nothing: the attempt is given back
		r.RetryAt = o.RetryAt
	case ResultHalted:
		r.Status = crewcast.StatusPending
		r.Attempts-- // the sender was refused, not this recipient
		if g.Status != crewcast.GroupCanceled {
			g.Status = crewcast.GroupPaused
			g.PauseReason = pauseReason(o)
		}
	case ResultSuppressed:
		r.Attempts-- // nothing was sent: the provider was never called
		if o.Suppressed != nil && !slices.Contains(o.Suppressed, i) {
			r.Status = crewcast.StatusPending // a group MMS member who did not opt out
			r.RetryAt = at
			break
		}
		r.Status = crewcast.StatusOptedOut
		r.Reason = o.Detail
	case ResultUncertain:
		r.Status = crewcast.StatusUnconfirmed
		r.Reason = o.Detail
		if r.Reason == "" {
			r.Reason = "the provider's answer was lost or ambiguous"
		}
	}
	if r.Status == crewcast.StatusPending && g.Status == crewcast.GroupCanceled {
		r.Status = crewcast.StatusCanceled
		r.RetryAt = time.Time{}
	}
}

// suppressedReason explains an opted_out recipient whose number a
// suppression of the given reason covers.
func suppressedReason(reason, when string) string {
	switch reason {
	case "stop":
		return "replied STOP (suppression list) " + when
	case "provider_opt_out":
		return "the provider reported an opt-out (suppression list) " + when
	case "":
		return "on the suppression list " + when
	}
	return "on the suppression list (" + reason + ") " + when
}

func pauseReason(o Outcome) string {
	s := "the provider refused the sender"
	if o.Code != "" {
		s += " (code " + o.Code + ")"
	}
	if o.Detail != "" {
		s += ": " + o.Detail
	}
	return s
}

func (g *Group) applyObserved(v Observed) {
	r := g.Recipients[v.Index]
	if v.Source != SourceReconcile && r.MessageID != "" && v.MessageID != "" && v.MessageID != r.MessageID {
		// A report about an earlier attempt's message: that attempt was
		// judged not sent, and a stale report must not move the new one.
		return
	}
	switch r.Status {
	case crewcast.StatusSending, crewcast.StatusPending, crewcast.StatusCanceled:
		// No acceptance recorded for this recipient's current attempt; only
		// reconciliation (which proves the send) may move it.
		if v.Source != SourceReconcile {
			return
		}
	case crewcast.StatusUnconfirmed:
		if v.Source != SourceReconcile {
			return
		}
	}
	if v.Source == SourceReconcile {
		r.Reason = "resolved by provider evidence: " + v.Evidence
		if r.Status == crewcast.StatusUnconfirmed || r.Status == crewcast.StatusSending {
			r.Status = crewcast.StatusSent
			if r.SentAt.IsZero() {
				r.SentAt = v.At
			}
			r.NextCheckAt = v.At.Add(g.Settings.CheckAfter)
			r.ErrorClass = crewcast.ClassNone
		}
	}
	if r.MessageID == "" {
		r.MessageID = v.MessageID
	}
	if r.GroupMessageID == "" {
		r.GroupMessageID = v.GroupMessageID
	}
	target := v.Status
	if v.OptOut && target == crewcast.StatusFailed {
		target = crewcast.StatusOptedOut
	}
	// A failure the provider says certainly never left it is retryable.
	if target == crewcast.StatusFailed && v.Class == crewcast.ClassNotSent &&
		(r.Status == crewcast.StatusSent || r.Status == crewcast.StatusUnknown) {
		r.ErrorCode, r.ErrorClass = v.Code, v.Class
		if r.Attempts < g.Settings.MaxAttempts && g.Status != crewcast.GroupCanceled {
			r.Status = crewcast.StatusPending
			r.RetryAt = v.At.Add(g.Settings.backoff(r.Attempts))
			r.NextCheckAt = time.Time{}
			return
		}
		r.Reason = "attempt budget exhausted"
	}
	if rank(target) <= rank(r.Status) {
		return
	}
	switch target {
	case crewcast.StatusSent:
		if r.SentAt.IsZero() {
			r.SentAt = v.At
		}
	case crewcast.StatusDelivered:
		r.DeliveredAt = v.At
		r.NextCheckAt = time.Time{}
		r.ErrorCode, r.ErrorClass = "", ""
		if v.Source != SourceReconcile {
			r.Reason = ""
		}
	case crewcast.StatusFailed:
		r.FailedAt = v.At
		r.NextCheckAt = time.Time{}
		r.ErrorCode, r.ErrorClass = v.Code, v.Class
		if v.Class == crewcast.ClassSender && g.Status == crewcast.GroupSending {
			// A delivery report blaming the sender (an unregistered 10DLC
			// number: Twilio 30034, Telnyx 40010) means every message from
			// it fails: stop as a synchronous refusal does.
			g.Status = crewcast.GroupPaused
			g.PauseReason = pauseReason(Outcome{Code: v.Code, Detail: "reported on delivery"})
		}
	case crewcast.StatusOptedOut:
		r.FailedAt = v.At
		r.NextCheckAt = time.Time{}
		r.ErrorCode, r.ErrorClass = v.Code, v.Class
		r.Reason = "provider reports the recipient opted out"
	case crewcast.StatusUnknown:
		r.NextCheckAt = time.Time{}
		r.ErrorCode, r.ErrorClass = v.Code, v.Class
		r.Reason = "provider could not confirm delivery (" + v.ProviderStatus + ")"
	default:
		return
	}
	r.Status = target
}

func (g *Group) applyReplied(v Replied) {
	r := g.Recipients[v.Index]
	g.markDirty(v.Index)
	r.Replies++
	r.RepliedAt = v.At
	// An answer sent before the one already recorded arrived late (two
	// webhooks in flight, a provider retry): it is counted, but the later
	// answer stands. Keywords (below) apply whatever their order.
	if v.Keyword == "" && !v.SentAt.IsZero() && v.SentAt.Before(r.LastAnswerSentAt) {
		return
	}
	if v.Keyword == "" && !v.SentAt.IsZero() {
		r.LastAnswerSentAt = v.SentAt
	}
	if v.Text != "" || len(v.Media) > 0 {
		r.LastReply = v.Text
	}
	if v.Ack != crewcast.AckNone {
		r.Ack = v.Ack
	}
	if v.Response != "" {
		r.Response = v.Response
	}
	if v.Ack != crewcast.AckNone || v.Response != "" {
		r.AnsweredBy = v.Channel
		if r.AnsweredBy == "" {
			r.AnsweredBy = ChannelSMS
		}
	}
	switch v.Keyword {
	case KeywordStop:
		if r.Status != crewcast.StatusOptedOut {
			r.BeforeOptOut = r.Status
			r.Status = crewcast.StatusOptedOut
			r.RetryAt = time.Time{}
			r.Reason = "replied STOP"
		}
	case KeywordStart:
		if r.Status == crewcast.StatusOptedOut && r.BeforeOptOut != "" {
			r.Status = r.BeforeOptOut
			r.BeforeOptOut = ""
			r.Reason = "opted back in"
			if r.Status == crewcast.StatusPending && g.Status == crewcast.GroupCanceled {
				r.Status = crewcast.StatusCanceled
			}
		}
	}
}

func (g *Group) checkIndices(typ string, idx []int) error {
	for _, i := range idx {
		if i < 0 || i >= len(g.Recipients) {
			return fmt.Errorf("apply %s: recipient index %d out of range (group has %d)", typ, i, len(g.Recipients))
		}
	}
	return nil
}

// maxSeen bounds the remembered event ids. Providers retry within minutes
// to hours; a group sees at most a few events per recipient.
const maxSeen = 200000

// observedKey names one recipient's observation of a provider event (one
// webhook may report several recipients); "" for an event without id.
func observedKey(eventID string, index int) string {
	if eventID == "" {
		return ""
	}
	return eventID + "#" + strconv.Itoa(index)
}

// seen reports whether a provider event (by key) was already applied; ""
// (an event without id) never counts as seen.
func (g *Group) seen(key string) bool {
	if key == "" {
		return false
	}
	_, ok := g.Seen[key]
	return ok
}

func (g *Group) remember(id string) {
	if g.Seen == nil {
		g.Seen = make(map[string]struct{})
	}
	if len(g.Seen) >= maxSeen {
		// Dropping the memory only weakens dedupe of replies: status moves
		// stay safe through the forward-only rule and the durable inbox.
		clear(g.Seen)
	}
	g.Seen[id] = struct{}{}
}

func (g *Group) touch(at time.Time) {
	if at.After(g.UpdatedAt) {
		g.UpdatedAt = at
	}
}
