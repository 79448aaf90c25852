package group

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
)

// Errors of operator commands; the API maps them to 404 and 409.
var (
	ErrNoRecipient = errors.New("no such recipient in this group")
	ErrState       = errors.New("not allowed in the current state")
)

// SuppressedAtSend is the error a sender reports instead of calling the
// provider when a number of the send is on the suppression list at that
// moment: Numbers are the suppressed ones (all of the send's when empty),
// Reason a suppression's reason. Outcome turns it into ResultSuppressed.
type SuppressedAtSend struct {
	Reason  string
	Numbers []string
}

func (e *SuppressedAtSend) Error() string {
	return "not sent: the number is on the suppression list (" + e.Reason + ")"
}

func stateErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrState, fmt.Sprintf(format, args...))
}

// Claimable reports whether recipient r may be claimed at now.
func (g *Group) claimable(r *Recipient, now time.Time) bool {
	return g.inWave(r) && g.waiting(r, now) && !r.RetryAt.After(now) && r.Attempts < g.Settings.MaxAttempts && !g.quietAt(r, now)
}

// Claim decides which recipients to send to now: at most limit sends
// (limit <= 0: no limit). In group MMS mode every claimable recipient goes
// in one send. It returns false when there is nothing to claim.
func (g *Group) Claim(now time.Time, limit int) (Claimed, bool) {
	if g.Status != crewcast.GroupSending {
		return Claimed{}, false
	}
	c := Claimed{At: now}
	next := g.Sends
	if g.Mode == crewcast.ModeGroupMMS {
		var idx []int
		for i, r := range g.Recipients {
			if g.claimable(r, now) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return Claimed{}, false
		}
		c.Sends = []Send{{ID: "s" + strconv.Itoa(next+1), Indices: idx}}
		return c, true
	}
	for i, r := range g.Recipients {
		if limit > 0 && len(c.Sends) >= limit {
			break
		}
		if g.claimable(r, now) {
			next++
			c.Sends = append(c.Sends, Send{ID: "s" + strconv.Itoa(next), Indices: []int{i}})
		}
	}
	return c, len(c.Sends) > 0
}

// ClaimableNumbers lists the numbers of the recipients Claim(now, limit)
// would claim, so that the caller can look them up on the suppression list
// first.
func (g *Group) ClaimableNumbers(now time.Time, limit int) []string {
	c, ok := g.Claim(now, limit)
	if !ok {
		return nil
	}
	var out []string
	for _, s := range c.Sends {
		for _, i := range s.Indices {
			out = append(out, g.Recipients[i].Number)
		}
	}
	return out
}

// Suppress turns the pending recipients whose numbers are in reasons
// (number → suppression reason) into a Suppressed event, or false when
// there are none.
func (g *Group) Suppress(reasons map[string]string, now time.Time) (Suppressed, bool) {
	var out []SuppressedRecipient
	for i, r := range g.Recipients {
		if reason, ok := reasons[r.Number]; ok && (r.Status == crewcast.StatusPending || r.Status == crewcast.StatusScheduled) {
			out = append(out, SuppressedRecipient{Index: i, Reason: reason})
		}
	}
	return Suppressed{At: now, Recipients: out}, len(out) > 0
}

// HasClaimable reports whether any recipient is pending and due at now.
func (g *Group) HasClaimable(now time.Time) bool {
	if g.Status != crewcast.GroupSending {
		return false
	}
	for _, r := range g.Recipients {
		if g.claimable(r, now) {
			return true
		}
	}
	return false
}

// DefaultRetryAfter is the wait after a 429 that named none.
const DefaultRetryAfter = time.Second

// Outcome classifies what the provider said about one send (docs/design.md §4).
func (g *Group) Outcome(s Send, res crewcast.SendResult, err error, now time.Time) Outcome {
	o := Outcome{SendID: s.ID, Indices: s.Indices}
	if err == nil {
		o.Result = ResultAccepted
		o.MessageID, o.GroupMessageID = res.MessageID, res.GroupMessageID
		return o
	}
	var sup *SuppressedAtSend
	if errors.As(err, &sup) {
		o.Result, o.Detail = ResultSuppressed, suppressedReason(sup.Reason, "when the send was due")
		if len(sup.Numbers) > 0 {
			// Group MMS: only the suppressed members opt out; the others
			// are claimed again without them.
			o.Suppressed = []int{}
			for _, i := range s.Indices {
				if slices.Contains(sup.Numbers, g.Recipients[i].Number) {
					o.Suppressed = append(o.Suppressed, i)
				}
			}
			if len(o.Suppressed) == 0 {
				o.Suppressed = nil // as the journal will read it back
			}
		}
		return o
	}
	var se *crewcast.SendError
	if !errors.As(err, &se) {
		// Unclassified failures may have sent: never assume they did not.
		o.Result, o.Class, o.Detail = ResultUncertain, crewcast.ClassUncertain, "send failed ambiguously: "+err.Error()
		return o
	}
	o.Code, o.Class, o.Detail, o.OptOut = se.Code, se.Class, se.Detail, se.OptOut
	switch se.Class {
	case crewcast.ClassNotSent:
		if se.HTTPStatus == 429 || se.RetryAfter > 0 {
			wait := se.RetryAfter
			if wait <= 0 {
				wait = DefaultRetryAfter
			}
			o.Result, o.RetryAt = ResultRateLimited, now.Add(wait)
			return o
		}
		attempts := 0
		for _, i := range s.Indices {
			attempts = max(attempts, g.Recipients[i].Attempts)
		}
		if attempts >= g.Settings.MaxAttempts {
			o.Result = ResultFailed
			o.Detail = joinDetail(o.Detail, "attempt budget exhausted")
			return o
		}
		o.Result, o.RetryAt = ResultRetry, now.Add(g.Settings.backoff(attempts))
	case crewcast.ClassRecipient, crewcast.ClassCarrier:
		o.Result = ResultFailed
	case crewcast.ClassSender:
		o.Result = ResultHalted
	default:
		o.Result, o.Class = ResultUncertain, crewcast.ClassUncertain
		if o.Detail == "" {
			o.Detail = "the provider's answer was ambiguous: " + err.Error()
		}
	}
	return o
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// Observe turns a provider status event about this group into an Observed
// event, or false when it concerns no recipient of the group.
func (g *Group) Observe(ev crewcast.Event, now time.Time) (Observed, bool) {
	if ev.Kind != crewcast.KindSent && ev.Kind != crewcast.KindStatus {
		return Observed{}, false
	}
	r := g.Recipient(ev.To)
	if r == nil || g.seen(observedKey(ev.EventID, r.Index)) {
		return Observed{}, false
	}
	st := ev.Status
	if ev.Kind == crewcast.KindSent && st == "" {
		st = crewcast.StatusSent
	}
	return Observed{
		At: now, EventID: ev.EventID, Source: SourceWebhook, Index: r.Index,
		MessageID: ev.MessageID, GroupMessageID: ev.GroupMessageID, Status: st,
		ProviderStatus: ev.ProviderStatus, Code: ev.ErrorCode, Class: ev.ErrorClass, OptOut: ev.OptOut,
		OccurredAt: ev.OccurredAt,
	}, true
}

// TextHash is the fingerprint used to match an orphan webhook's text to the
// group's message.
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return fmt.Sprintf("%x", sum[:8])
}

// Reconcile matches an orphan event (one whose message id has no route) to
// an unconfirmed recipient: same sender, same recipient, same text, within
// the claim window. A match proves the uncertain send went out.
func (g *Group) Reconcile(ev crewcast.Event, now time.Time) (Observed, bool) {
	if ev.Kind != crewcast.KindSent && ev.Kind != crewcast.KindStatus {
		return Observed{}, false
	}
	r := g.Recipient(ev.To)
	if r == nil || r.Status != crewcast.StatusUnconfirmed || ev.From != g.From || ev.MessageID == "" ||
		g.seen(observedKey(ev.EventID, r.Index)) {
		return Observed{}, false
	}
	if ev.Text == "" || TextHash(ev.Text) != TextHash(g.TextFor(r.Index)) {
		return Observed{}, false
	}
	when := ev.OccurredAt
	if when.IsZero() {
		when = now
	}
	if when.Before(r.ClaimedAt.Add(-time.Minute)) || when.After(r.ClaimedAt.Add(g.Settings.ClaimWindow)) {
		return Observed{}, false
	}
	st := ev.Status
	if st == "" {
		st = crewcast.StatusSent
	}
	return Observed{
		At: now, EventID: ev.EventID, Source: SourceReconcile, Index: r.Index,
		MessageID: ev.MessageID, GroupMessageID: ev.GroupMessageID, Status: st,
		ProviderStatus: ev.ProviderStatus, Code: ev.ErrorCode, Class: ev.ErrorClass, OptOut: ev.OptOut,
		OccurredAt: ev.OccurredAt,
		Evidence: fmt.Sprintf("%s event %s for message %s matched from, to and text within %s of the claim",
			ev.Provider, ev.EventID, ev.MessageID, g.Settings.ClaimWindow),
	}, true
}

// Reply turns an inbound message from a recipient into a Replied event.
func (g *Group) Reply(ev crewcast.Event, now time.Time) (Replied, bool) {
	if ev.Kind != crewcast.KindInbound {
		return Replied{}, false
	}
	r := g.Recipient(ev.From)
	if r == nil || g.seen(ev.EventID) {
		return Replied{}, false
	}
	cl := ClassifyReply(ev.Text)
	if g.isOption(ev.Text) {
		cl = Classification{} // an answer, never an opt-out
	}
	kw := cl.Keyword
	ack := crewcast.AckNone
	resp := ""
	switch {
	case kw != "":
	case len(g.Responses) > 0:
		// With response options, an answer is an option, and its ack is
		// the option's: "1" means whatever option 1 says.
		resp = ParseResponse(g.Responses, ev.Text)
		if resp == "" && r.Code != "" {
			// "1A", "A 1": an answer with this group's code (replycode.go).
			if _, k, ok := ParseCode(ev.Text, []CodedGroup{{Code: r.Code, Options: g.Responses}}); ok {
				resp = k
			}
		}
		for _, o := range g.Responses {
			if o.Key == resp {
				ack = o.Ack
			}
		}
	default:
		ack = ParseAck(ev.Text)
	}
	rep := Replied{At: now, EventID: ev.EventID, Index: r.Index, Text: ev.Text, Media: ev.Media, Ack: ack, Keyword: kw,
		Response: resp, SentAt: ev.OccurredAt, PossibleOptOut: cl.PossibleOptOut}
	if ev.Provider == ChannelVoice || ev.Provider == ChannelEmail { // tracker.VoiceProvider, tracker.EmailProvider
		rep.Channel = ev.Provider
	}
	return rep, true
}

// isOption reports whether a reply is, as a whole, one of the group's
// response options' keys or labels.
func (g *Group) isOption(text string) bool {
	t := normalizeReply(text)
	for _, o := range g.Responses {
		if t != "" && (t == normalizeReply(o.Key) || t == normalizeReply(o.Label)) {
			return true
		}
	}
	return false
}

// QuorumReached returns the QuorumMet event when the group has a quorum
// not yet met and enough people's latest answer is its response.
func (g *Group) QuorumReached(now time.Time) (QuorumMet, bool) {
	q := g.Quorum
	if q == nil || !q.MetAt.IsZero() || g.Exact() {
		return QuorumMet{}, false // an exact quota is met by Select
	}
	n := g.Counts()[CountResponsePrefix+q.Response]
	if n < q.Count {
		return QuorumMet{}, false
	}
	pending := slices.ContainsFunc(g.Recipients, func(r *Recipient) bool { return r.Status == crewcast.StatusPending })
	return QuorumMet{At: now, Response: q.Response, Count: n, Cancel: !q.KeepSending && pending && g.Status != crewcast.GroupCanceled}, true
}

// RecoverInFlight marks every recipient left in "sending" as unconfirmed,
// except sends that inFlight says are still running in this process. In
// group MMS mode the whole send goes together, since they share one call.
func (g *Group) RecoverInFlight(now time.Time, inFlight func(sendID string) bool) (Unconfirmed, bool) {
	u := Unconfirmed{At: now, Reason: "crash between claim and result: the send may or may not have gone out"}
	for i, r := range g.Recipients {
		if r.sending() && (inFlight == nil || !inFlight(r.SendID)) {
			u.Indices = append(u.Indices, i)
		}
	}
	return u, len(u.Indices) > 0
}

// Due returns the recipients whose status check is due at now.
func (g *Group) Due(now time.Time) []int {
	var out []int
	for i, r := range g.Recipients {
		if r.Status == crewcast.StatusSent && !r.NextCheckAt.IsZero() && !r.NextCheckAt.After(now) {
			out = append(out, i)
		}
	}
	return out
}

// CheckResult turns a status lookup for recipient i into an event: the
// provider's newer status, or Checked with the next check time, or Expired
// once the deadline has passed with nothing final.
func (g *Group) CheckResult(i int, st crewcast.MessageStatus, lookupErr error, now time.Time) Event {
	r := g.Recipients[i]
	if lookupErr == nil {
		for _, rs := range st.Recipients {
			if rs.Number != r.Number || rs.Status == "" || rs.Status == crewcast.StatusSent {
				continue
			}
			return Observed{At: now, Source: SourceLookup, Index: i, MessageID: st.MessageID,
				Status: rs.Status, ProviderStatus: rs.ProviderStatus, Code: rs.ErrorCode, Class: rs.ErrorClass, OptOut: rs.OptOut}
		}
	}
	deadline := r.SentAt.Add(g.Settings.Deadline)
	if !now.Before(deadline) {
		return Expired{At: now, Indices: []int{i}, Reason: fmt.Sprintf("no final receipt within %s of acceptance", g.Settings.Deadline)}
	}
	wait := g.Settings.CheckAfter << min(r.Checks+1, 16)
	next := now.Add(wait)
	if next.After(deadline) {
		next = deadline
	}
	c := Checked{At: now, Index: i, NextCheckAt: next}
	for _, rs := range st.Recipients {
		if rs.Number == r.Number {
			c.ProviderStatus = rs.ProviderStatus
		}
	}
	if lookupErr != nil {
		c.Error = lookupErr.Error()
	}
	return c
}

// Cancel stops the group.
func (g *Group) Cancel(now time.Time, by string) (Canceled, error) {
	switch g.Status {
	case crewcast.GroupCanceled:
		return Canceled{}, stateErr("group is already canceled")
	case crewcast.GroupComplete:
		return Canceled{}, stateErr("group is complete; nothing is left to cancel")
	}
	return Canceled{At: now, By: by}, nil
}

// Resolvable reports whether an operator may resolve a recipient in status
// s: the outcome is unknowable (unconfirmed) or the provider never said
// (unknown). Both are decided the same way (docs/design.md §10).
func Resolvable(s crewcast.Status) bool {
	return s == crewcast.StatusUnconfirmed || s == crewcast.StatusUnknown
}

// Resolve records an operator's decision about an unconfirmed or unknown
// recipient: delivered, or not_delivered, which allows one more attempt
// while the budget lasts.
func (g *Group) Resolve(number, outcome string, now time.Time, by string) (Resolved, error) {
	r := g.Recipient(number)
	if r == nil {
		return Resolved{}, ErrNoRecipient
	}
	if outcome != ResolveDelivered && outcome != ResolveNotDelivered {
		return Resolved{}, stateErr("outcome must be %q or %q", ResolveDelivered, ResolveNotDelivered)
	}
	if !Resolvable(r.Status) {
		return Resolved{}, stateErr("recipient is %s; only unconfirmed or unknown recipients can be resolved", r.Status)
	}
	return Resolved{At: now, Index: r.Index, Outcome: outcome, By: by, From: r.Status}, nil
}

// Retry requests a new attempt for a failed recipient whose failure class
// allows one and whose attempt budget is not spent.
func (g *Group) Retry(number string, now time.Time, by string) (RetryRequested, error) {
	r := g.Recipient(number)
	if r == nil {
		return RetryRequested{}, ErrNoRecipient
	}
	if r.Status != crewcast.StatusFailed {
		return RetryRequested{}, stateErr("recipient is %s; only failed recipients can be retried", r.Status)
	}
	switch r.ErrorClass {
	case crewcast.ClassRecipient:
		return RetryRequested{}, stateErr("error %s is a permanent failure for this recipient", r.ErrorCode)
	case crewcast.ClassSender:
		// Reported on delivery: the group paused; once the sender is
		// fixed and the group resumed, a new message may go.
		if g.Status == crewcast.GroupPaused {
			return RetryRequested{}, stateErr("error %s is a sender failure; fix the sender and resume, then retry", r.ErrorCode)
		}
	}
	if r.Attempts >= g.Settings.MaxAttempts {
		return RetryRequested{}, stateErr("attempt budget spent (%d of %d)", r.Attempts, g.Settings.MaxAttempts)
	}
	if g.Status == crewcast.GroupCanceled {
		return RetryRequested{}, stateErr("group is canceled")
	}
	return RetryRequested{At: now, Index: r.Index, By: by}, nil
}

// Resume lifts a pause.
func (g *Group) Resume(now time.Time, by string) (Resumed, error) {
	if g.Status != crewcast.GroupPaused {
		return Resumed{}, stateErr("group is %s, not paused", g.Status)
	}
	return Resumed{At: now, By: by}, nil
}
