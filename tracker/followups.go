package tracker

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Follow-ups, escalation, send_at and quiet hours in the group actor
// (docs/design.md §12; the decisions are group.ClaimFollowups, group.Escalate,
// group.Hold). The never-twice rules hold for these sends as for the
// first: each is claimed in a commit (with its numbers in Effects.Claim,
// so a suppression that committed first refuses it) before it is queued;
// its outcome is committed before it is forgotten; a crash in between makes
// it unconfirmed (group.RecoverFollowups), never resent.
//
// An answer that lands while a claimed follow-up waits for its provider
// call stops the call: the commit that records the answer marks the
// follow-up stopped while holding the number's suppression-gate stripe for
// writing, and the sender checks the mark under the stripe's read lock
// right before calling (guardSend). So a follow-up's call either started
// before the answer committed, or it is not made.

// Reminder names of the policy: "f:<index>" wakes the group for a
// recipient's next follow-up or the end of its quiet-hours hold, "e" for
// the escalation, "a" for send_at.
const (
	reminderFollowup = "f:"
	reminderEscalate = "e"
	reminderSendAt   = "a"
)

// CrewResolver turns escalation crews (names or ids as the client gave
// them) into E.164 numbers, when a group is created. Crews arrive with
// issue 13; until a resolver is configured, crews are kept on the group
// and escalation goes to the numbers given in `to` only.
type CrewResolver func(ctx context.Context, crews []string) ([]string, error)

// followupStops marks claimed follow-ups whose recipient answered before
// the provider call: key group id + send id.
type followupStops struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func stopKey(groupID, sendID string) string { return groupID + "\x00" + sendID }

func (s *followupStops) mark(key string) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[string]struct{})
	}
	s.m[key] = struct{}{}
	s.mu.Unlock()
}

func (s *followupStops) stopped(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[key]
	return ok
}

func (s *followupStops) clear(key string) {
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}

// planPolicy validates the policy fields of a create request and freezes
// them into created, resolving escalation crews when a resolver is set.
func (t *Tracker) planPolicy(ctx context.Context, created *group.Created, req group.Request,
	normalize func(string) (string, error)) error {
	if ferrs := group.PlanPolicy(created, req, t.cfg.PolicyDefaults, normalize); len(ferrs) > 0 {
		return &ValidationError{Fields: ferrs, Total: len(ferrs)}
	}
	if created.Mode == crewcast.ModeGroupMMS && created.Policy != nil && created.Policy.Followup != nil {
		return &ValidationError{Fields: []group.FieldError{{Field: "followup", Message: "follow-ups are sent one by one: use mode individual"}}, Total: 1}
	}
	if err := planCallout(created, req); err != nil { // callout.go
		return err
	}
	if err := t.checkLadder(created.Policy); err != nil {
		return err
	}
	if p := created.Policy; p != nil && p.Escalate != nil && len(p.Escalate.Crews) > 0 && t.cfg.ResolveCrews != nil {
		nums, err := t.cfg.ResolveCrews(ctx, p.Escalate.Crews)
		if err != nil {
			return err
		}
		created.AddEscalationNumbers(nums)
	}
	return nil
}

// inFlightWake is how long after a follow-up or escalation claim its group
// is woken if the outcome is not recorded by then: after a crash nothing
// else may wake a group whose recipients are all delivered, and recovery
// (which marks the send unconfirmed) runs when the group is loaded. A
// group whose call is merely slow wakes, finds it in flight, and waits.
const inFlightWake = time.Minute

// wakeAt is when recipient r needs its group awake: the end of its hold
// (unless the send_at reminder covers it), its next follow-up, or a check
// on a follow-up in flight.
func wakeAt(g *group.Group, r *group.Recipient) time.Time {
	if r.FollowupSendID != "" {
		return r.FollowupClaimedAt.Add(inFlightWake)
	}
	if r.Status == crewcast.StatusScheduled {
		if r.HeldUntil.Equal(g.SendAt()) && !r.RetryAt.After(r.HeldUntil) {
			return time.Time{}
		}
		if r.RetryAt.After(r.HeldUntil) {
			return r.RetryAt
		}
		return r.HeldUntil
	}
	return g.NextFollowupAt(r)
}

// groupReminders are the group-wide policy reminders wanted at now.
func groupReminders(g *group.Group, now time.Time) map[string]time.Time {
	out := map[string]time.Time{reminderEscalate: g.EscalationDue(), reminderSendAt: {}}
	if len(g.EscalationSends()) > 0 {
		out[reminderEscalate] = g.EscalatedAt().Add(inFlightWake) // see inFlightWake
	}
	if at := g.SendAt(); at.After(now) && g.Status == crewcast.GroupSending {
		out[reminderSendAt] = at
	}
	return out
}

// policyDue reports whether the policy has something to decide at now: a
// hold, the escalation, a follow-up. It reads every recipient, so only
// groups with a policy pay for it.
func policyDue(g *group.Group, now time.Time) bool {
	if g.Policy == nil {
		return false
	}
	if _, ok := g.Hold(now); ok {
		return true
	}
	if due := g.EscalationDue(); !due.IsZero() && !now.Before(due) {
		return true
	}
	return g.FollowupsDue(now)
}

// policyReminderOps lists the reminder writes of the policy for the dirty
// recipients and the group.
func (a *groupActor) policyReminderOps(dirty []int, now time.Time) []actor.ReminderOp {
	if a.g.Policy == nil {
		return nil
	}
	var ops []actor.ReminderOp
	for _, i := range dirty {
		ops = append(ops, a.reminderOps(reminderFollowup+strconv.Itoa(i), wakeAt(a.g, a.g.Recipients[i]))...)
	}
	for name, due := range groupReminders(a.g, now) {
		ops = append(ops, a.reminderOps(name, due)...)
	}
	return ops
}

// initPolicyTracking adds the policy reminders state implies to a.rem.
func (a *groupActor) initPolicyTracking(now time.Time) {
	if a.g.Policy == nil {
		return
	}
	for i, r := range a.g.Recipients {
		if w := wakeAt(a.g, r); !w.IsZero() {
			a.rem[reminderFollowup+strconv.Itoa(i)] = w
		}
	}
	for name, due := range groupReminders(a.g, now) {
		if !due.IsZero() {
			a.rem[name] = due
		}
	}
}

// policyReminder handles a policy reminder; false for a name it does not
// know.
func (a *groupActor) policyReminder(c *actor.Context[groupMsg], r actor.Reminder) bool {
	now := a.env.cfg.Clock.Now()
	switch {
	case strings.HasPrefix(r.Name, reminderFollowup):
		i, err := strconv.Atoi(strings.TrimPrefix(r.Name, reminderFollowup))
		if err != nil || i < 0 || i >= len(a.g.Recipients) {
			return false
		}
		a.kick(c)
		if a.broken || a.retired || a.g == nil {
			return true
		}
		if w := wakeAt(a.g, a.g.Recipients[i]); w.IsZero() || w.After(now) {
			// Stale or moved: rewrite (or delete) it with the state.
			a.rem[r.Name] = r.Due
			a.g.MarkDirty(i)
			_ = a.flush(c) // a failure is handled inside flush
		}
		return true
	case r.Name == reminderEscalate || r.Name == reminderSendAt:
		a.kick(c)
		if a.broken || a.retired || a.g == nil {
			return true
		}
		if due := groupReminders(a.g, now)[r.Name]; due.IsZero() || due.After(now) {
			if due.IsZero() {
				delete(a.rem, r.Name)
				a.dropReminder(c, r.Name)
				return true
			}
			a.rem[r.Name] = r.Due
			_ = a.flush(c)
		}
		return true
	}
	return false
}

// kickPolicy decides what the policy wants at now — quiet-hours holds,
// the escalation, due follow-ups — and commits it; the claimed sends are
// queued by flush. It reports false when the commit failed.
func (a *groupActor) kickPolicy(c *actor.Context[groupMsg], now time.Time) bool {
	e, g := a.env, a.g
	if g.Policy == nil {
		return true
	}
	ctx := c.Context()
	if h, ok := g.Hold(now); ok {
		a.emit(h)
	}
	if esc, ok := g.Escalate(now); ok {
		var nums []string
		for _, s := range esc.Sends {
			nums = append(nums, s.To)
		}
		sup, err := e.st.Suppressed(ctx, nums)
		if err != nil {
			c.Schedule(time.Second, msgKick{}) // decide again when the list can be read
		} else {
			var live []string
			for k := range esc.Sends {
				if _, ok := sup[esc.Sends[k].To]; ok {
					esc.Sends[k].Status, esc.Sends[k].Detail = group.EscalationNotSent, "on the suppression list"
					continue
				}
				live = append(live, esc.Sends[k].To)
			}
			a.emit(esc)
			a.eff.Claim = append(a.eff.Claim, live...)
			for _, s := range g.EscalationSends() {
				a.pol = append(a.pol, sendJob{groupID: a.key, send: s.Send(),
					req: crewcast.SendRequest{From: g.From, To: []string{s.To}, Text: g.Escalation.Text,
						IdempotencyKey: group.ClaimKey(a.key, s.ID)}})
			}
		}
	}
	if room := e.cfg.MaxBacklog - e.sends.backlog() - len(a.pol); room <= 0 {
		if g.FollowupsDue(now) {
			e.room.wait(a.key)
		}
	} else if cl, ok := g.ClaimFollowups(now, min(room, e.cfg.ClaimBatch)); ok {
		cl, ok = a.skipSuppressedFollowups(c, cl, now, min(room, e.cfg.ClaimBatch))
		if ok {
			var granted int
			var wait time.Duration
			if g.Pool != "" {
				// Each follow-up goes from its person's own number, paced
				// there (pools.go).
				n := len(cl.Sends)
				cl.Sends, wait = pacePoolFollowups(e.pacer, g, cl.Sends, now)
				if granted = len(cl.Sends); granted < n {
					c.Schedule(max(wait, time.Millisecond), msgKick{})
				}
			} else if granted, wait = e.pacer.take(g.From, len(cl.Sends), now); granted < len(cl.Sends) {
				cl.Sends = cl.Sends[:granted]
				c.Schedule(max(wait, time.Millisecond), msgKick{})
			}
			if granted > 0 {
				a.emit(cl)
				for _, s := range cl.Sends {
					num, text := g.Recipients[s.Index].Number, g.FollowupTextFor(g.Recipients[s.Index])
					a.eff.Claim = append(a.eff.Claim, num)
					if job, ok := a.channelJob(c, s); ok { // a ladder's email step (ladder.go)
						a.pol = append(a.pol, job)
						continue
					}
					// Replies to the follow-up come to this group.
					// A pool group's follow-up goes from the person's own number.
					from := g.FromFor(s.Index)
					a.addRoute(convKey(from, num), e.cfg.ConversationTTL)
					a.pol = append(a.pol, sendJob{groupID: a.key, send: s.Send(),
						req: crewcast.SendRequest{From: from, To: []string{num}, Text: text,
							IdempotencyKey: group.ClaimKey(a.key, s.ID)}})
				}
			}
		}
	}
	if len(a.pending) == 0 {
		return true
	}
	if err := a.flush(c); err != nil {
		return false
	}
	if a.g != nil && a.g.FollowupsDue(now) {
		c.Self().Tell(msgKick{})
	}
	return true
}

// skipSuppressedFollowups reads the suppression list for the follow-ups
// about to be claimed (step 1 of the opt-out rules), records those found
// as stopped and decides again. false: nothing to claim (or the list could
// not be read: try again in a second).
func (a *groupActor) skipSuppressedFollowups(c *actor.Context[groupMsg], cl group.FollowupClaimed, now time.Time, limit int) (group.FollowupClaimed, bool) {
	nums := make([]string, len(cl.Sends))
	for k, s := range cl.Sends {
		nums[k] = a.g.Recipients[s.Index].Number
	}
	sup, err := a.env.st.Suppressed(c.Context(), nums)
	if err != nil {
		c.Schedule(time.Second, msgKick{})
		return cl, false
	}
	if len(sup) == 0 {
		return cl, true
	}
	reasons := make(map[string]string, len(sup))
	for n, s := range sup {
		reasons[n] = s.Reason
	}
	if st, ok := a.g.StopFollowups(reasons, now); ok {
		a.emit(st)
	}
	return a.g.ClaimFollowups(now, limit)
}

// confirmText is the confirmation crewcast sends for a keyword reply, ""
// for none.
func (c *groupConfig) confirmText(keyword string) string {
	switch keyword {
	case group.KeywordStop:
		if c.OptOutReply == "provider" || c.OptOutReply == "off" {
			return ""
		}
		return c.OptOutReply
	case group.KeywordHelp:
		return c.HelpReply
	}
	return ""
}

// confirm claims the confirmation of a keyword reply, if one is
// configured: the claim commits with the reply, the send is queued after.
// A STOP's confirmation goes to a number suppressed by that very reply,
// so it is not in Effects.Claim and the send guard lets it through.
func (a *groupActor) confirm(rep group.Replied, ev crewcast.Event, now time.Time) {
	text := a.env.cfg.confirmText(rep.Keyword)
	if text == "" {
		return
	}
	cl := a.g.Confirm(rep, ev.To, text, now)
	a.emit(cl)
	a.pol = append(a.pol, sendJob{groupID: a.key, send: cl.Send.Send(),
		req: crewcast.SendRequest{From: cl.Send.From, To: []string{ev.From}, Text: text,
			IdempotencyKey: group.ClaimKey(a.key, cl.Send.ID)}})
}

// takePolicyJobs hands over the sends claimed in the commit being made.
func (a *groupActor) takePolicyJobs() []sendJob {
	jobs := a.pol
	a.pol = nil
	return jobs
}

// queuePolicyJobs registers committed follow-up and escalation claims as
// in flight and hands them to the send pool.
func (a *groupActor) queuePolicyJobs(jobs []sendJob) {
	if len(jobs) == 0 {
		return
	}
	ids := make([]string, len(jobs))
	for k, j := range jobs {
		ids[k] = j.send.ID
	}
	a.env.work.addInflight(a.key, ids)
	a.env.sends.submit(jobs)
}

// answeredInFlight marks the follow-ups in flight whose recipients answer
// in the events about to be committed, and returns their numbers, whose
// gate stripes the commit holds (see the top of this file).
func (a *groupActor) answeredInFlight() []string {
	var nums []string
	for _, e := range a.pending {
		rep, ok := e.(group.Replied)
		if !ok || rep.Index < 0 || rep.Index >= len(a.g.Recipients) {
			continue
		}
		r := a.g.Recipients[rep.Index]
		if r.FollowupSendID != "" && group.Answered(r) {
			a.env.stops.mark(stopKey(a.key, r.FollowupSendID))
			nums = append(nums, r.Number)
		}
	}
	return nums
}

// policyResult records the provider's answer to a follow-up or escalation
// send; false for a first send.
func (a *groupActor) policyResult(r sendResult, now time.Time) bool {
	e := a.env
	var o group.Outcome
	switch {
	case group.IsFollowupSend(r.send.ID):
		o = a.g.FollowupOutcome(r.send, r.res, r.err, r.at)
		a.emit(group.FollowupOutcomes{At: now, Outcomes: []group.Outcome{o}})
		e.stops.clear(stopKey(a.key, r.send.ID))
		if o.OptOut {
			for _, i := range o.Indices {
				a.eff.Suppress = append(a.eff.Suppress, store.Suppression{Number: a.g.Recipients[i].Number, Reason: "provider_opt_out", CreatedAt: now})
			}
		}
	case group.IsEscalationSend(r.send.ID):
		o = a.g.EscalationOutcome(r.send, r.res, r.err, r.at)
		a.emit(group.EscalationOutcomes{At: now, Outcomes: []group.Outcome{o}})
	case group.IsConfirmSend(r.send.ID):
		o = a.g.Outcome(r.send, r.res, r.err, r.at)
		a.emit(group.ConfirmOutcomes{At: now, Outcomes: []group.Outcome{o}})
	case group.IsAutoReplySend(r.send.ID):
		o, _ = a.autoReplyResult(r, now) // callout.go
		if o.OptOut {
			for _, i := range o.Indices {
				a.eff.Suppress = append(a.eff.Suppress, store.Suppression{Number: a.g.Recipients[i].Number, Reason: "provider_opt_out", CreatedAt: now})
			}
		}
	default:
		return false
	}
	prov := e.provName(r.provider)
	e.cfg.Metrics.SendOutcome(prov, o.Result, o.Class)
	if o.Result == group.ResultAccepted && o.MessageID != "" {
		// Receipts of this message find the group (and change nothing but
		// the journal: they are not the recipient's first message).
		a.addRoute(msgKey(prov, o.MessageID), 0)
		a.adopt = append(a.adopt, msgKey(prov, o.MessageID))
	}
	return true
}

// recoverPolicySends marks follow-ups and escalation messages left in
// flight by a dead process as unconfirmed.
func (a *groupActor) recoverPolicySends(now time.Time) {
	for _, e := range a.g.RecoverFollowups(now, a.env.work.inFlight(a.key)) {
		a.emit(e)
	}
	a.recoverAutoReplies(now) // callout.go
}

// LoadGroup rebuilds a group's committed state from its latest snapshot
// and the journal after it: a read for views that need more than the
// projections hold (the policy fields of docs/design.md §12). ok is false for a
// group that does not exist.
func LoadGroup(ctx context.Context, st interface {
	actor.Journal
	actor.SnapshotStore
}, id string) (g group.Group, ok bool, err error) {
	res, err := actor.Recover(ctx, st, st, id, decodeSnapshot, applyEvent)
	if err != nil {
		return group.Group{}, false, err
	}
	return res.State, res.State.ID != "", nil
}

// Nudge is the board's "nudge non-responders now" (docs/design.md §12): everyone
// who may still get a follow-up gets their next one now, claimed like any
// follow-up (so within max, quiet hours and the stop conditions). It is
// journaled with who asked.
func (t *Tracker) Nudge(ctx context.Context, id, by string) error {
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Nudge(now, by) })
}

// RetryFailed is the board's "retry all failed": Retry for every failed
// recipient of the group, each journaled with who asked. A recipient the
// rules do not allow again (a permanent error, the budget spent, a
// suppressed number) is skipped and counted, never sent.
func (t *Tracker) RetryFailed(ctx context.Context, id, by string) (retried, skipped int, err error) {
	if _, err := t.st.GetGroup(ctx, id); err != nil {
		if errors.Is(err, actor.ErrNotFound) {
			return 0, 0, ErrNotFound
		}
		return 0, 0, unavailable(ctx, "read group", err)
	}
	q := store.DeliveryQuery{GroupID: id, Status: crewcast.StatusFailed, Limit: 10000}
	var numbers []string
	for {
		rows, next, err := t.st.ListDeliveries(ctx, q)
		if err != nil {
			return 0, 0, unavailable(ctx, "list failed recipients", err)
		}
		for _, d := range rows {
			numbers = append(numbers, d.Number)
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	for _, n := range numbers {
		switch err := t.Retry(ctx, id, n, by); {
		case err == nil:
			retried++
		case errors.Is(err, group.ErrState), errors.Is(err, ErrSuppressed), errors.Is(err, group.ErrNoRecipient):
			skipped++
		default:
			return retried, skipped, err
		}
	}
	return retried, skipped, nil
}
