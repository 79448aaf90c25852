package tracker

import (
	"context"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
)

// Callouts that fill in the group actor (docs/architecture.md, "Waves and
// exact quotas, as code"; the decisions are group.Select, group.NextWave
// and group.ClaimAutoReplies). Each kick first settles the exact quota
// (selected, standby, filled, re-opened), then sends the wave that is due
// (its recipients become claimable and the ordinary claim in kick takes
// them), then claims the auto-replies owed. Auto-replies follow the
// never-twice rules of the follow-ups (followups.go): claimed in a commit,
// with the number in Effects.Claim, before the provider call; an
// uncertain outcome, or a crash between claim and outcome, spends the
// auto-reply (group.RecoverAutoReplies), it is never sent again.

// Reminder names of a callout: "w" wakes the group for its next wave,
// "q" when an answer settles for the exact quota, "x" for the next
// auto-reply (or a check on one in flight).
const (
	reminderWave      = "w"
	reminderSettle    = "q"
	reminderAutoReply = "x"
)

// DefaultCalloutSettle is Config.CalloutSettle's default. A provider
// posts the webhooks of answers it received together within tens of
// milliseconds of each other, so a quarter of a second orders them as it
// received them while the last YES of a callout still fills it within
// half a second. A webhook the provider retries later (crewcast was down,
// or answered 503) is ranked when it arrives: no window can wait for it.
const DefaultCalloutSettle = 250 * time.Millisecond

// isCallout reports whether g has waves or an exact quota.
func isCallout(g *group.Group) bool { return g != nil && (g.HasWaves() || g.Exact()) }

// planCallout freezes the callout fields of req into created.
func planCallout(created *group.Created, req group.Request) error {
	if ferrs := group.PlanCallout(created, req.CalloutInput, req.ExactGiven); len(ferrs) > 0 {
		return &ValidationError{Fields: ferrs, Total: len(ferrs)}
	}
	if created.Mode == crewcast.ModeGroupMMS && req.Waves != nil {
		return &ValidationError{Fields: []group.FieldError{{Field: "waves", Message: "waves text people one by one: use mode individual"}}, Total: 1}
	}
	return nil
}

// calloutDue reports whether a kick has something to decide for the
// callout at now.
func calloutDue(g *group.Group, now time.Time, settle time.Duration) bool {
	if !isCallout(g) {
		return false
	}
	if ev, _ := g.Select(now, settle); len(ev) > 0 {
		return true
	}
	if w, ok := g.NextWave(now); ok && len(w.Indices) > 0 {
		return true
	}
	at := g.NextAutoReplyAt(now)
	return !at.IsZero() && !at.After(now) && g.Status != crewcast.GroupPaused
}

// settleSoon schedules a kick for when the earliest unsettled answer
// settles: the durable reminder "q" wakes the group after a restart, this
// kick decides as soon as the answer settles rather than at the reminder
// poller's next read.
func (a *groupActor) settleSoon(c *actor.Context[groupMsg], now time.Time) {
	if !a.g.Exact() {
		return
	}
	if _, wake := a.g.Select(now, a.env.cfg.CalloutSettle); !wake.IsZero() {
		a.kickLater(c, now, wake.Sub(now))
	}
}

// calloutReminders are the callout's reminders wanted at now. An
// auto-reply in flight wants its group awake inFlightWake after its claim
// (a fixed time, as a follow-up's: a process that finds the call still
// running leaves it where it is, so a restarted one wakes at it too).
func calloutReminders(g *group.Group, now time.Time, settle time.Duration) map[string]time.Time {
	out := map[string]time.Time{reminderWave: {}, reminderSettle: {}, reminderAutoReply: {}}
	if !isCallout(g) {
		return out
	}
	if g.Status != crewcast.GroupPaused {
		out[reminderWave] = g.NextWaveAt()
		out[reminderAutoReply] = g.NextAutoReplyAt(now)
	}
	_, out[reminderSettle] = g.Select(now, settle)
	for _, r := range g.Recipients {
		if r.AutoSendID == "" {
			continue
		}
		check := r.AutoClaimedAt.Add(inFlightWake) // see inFlightWake
		if r.AutoClaimedAt.IsZero() {
			check = now.Add(inFlightWake) // state from before AutoClaimedAt
		}
		if a := out[reminderAutoReply]; a.IsZero() || check.Before(a) {
			out[reminderAutoReply] = check
		}
	}
	return out
}

// calloutReminderOps lists the reminder writes of the callout.
func (a *groupActor) calloutReminderOps(now time.Time) []actor.ReminderOp {
	if !isCallout(a.g) {
		return nil
	}
	var ops []actor.ReminderOp
	for name, due := range calloutReminders(a.g, now, a.env.cfg.CalloutSettle) {
		ops = append(ops, a.reminderOps(name, due)...)
	}
	return ops
}

// initCalloutTracking adds the callout reminders state implies to a.rem.
func (a *groupActor) initCalloutTracking(now time.Time) {
	if !isCallout(a.g) {
		return
	}
	for name, due := range calloutReminders(a.g, now, a.env.cfg.CalloutSettle) {
		if !due.IsZero() {
			a.rem[name] = due
		}
	}
}

// calloutReminder handles a callout reminder; false for a name it does not
// know.
func (a *groupActor) calloutReminder(c *actor.Context[groupMsg], r actor.Reminder) bool {
	switch r.Name {
	case reminderWave, reminderSettle, reminderAutoReply:
	default:
		return false
	}
	a.kick(c)
	if a.broken || a.retired || a.g == nil {
		return true
	}
	now := a.env.cfg.Clock.Now()
	due := calloutReminders(a.g, now, a.env.cfg.CalloutSettle)[r.Name]
	if due.IsZero() {
		delete(a.rem, r.Name)
		a.dropReminder(c, r.Name)
		return true
	}
	if due.After(now) {
		// Stale or moved: rewrite it with the state.
		a.rem[r.Name] = r.Due
		_ = a.flush(c)
	}
	return true
}

// kickCallout decides the exact quota, the wave due and the auto-replies
// owed at now and commits them. It reports false when the commit failed.
func (a *groupActor) kickCallout(c *actor.Context[groupMsg], now time.Time) bool {
	g := a.g
	if !isCallout(g) {
		return true
	}
	sel, _ := g.Select(now, a.env.cfg.CalloutSettle)
	for _, e := range sel {
		a.emit(e)
	}
	if w, ok := g.NextWave(now); ok && len(w.Indices) > 0 {
		a.emit(w)
	}
	a.claimAutoReplies(c, now)
	if len(a.pending) == 0 {
		return true
	}
	return a.flush(c) == nil
}

// claimAutoReplies claims the auto-replies owed at now, within the send
// backlog and the sender's pacing; a number found on the suppression list
// is claimed and recorded as skipped in the same commit, never sent.
func (a *groupActor) claimAutoReplies(c *actor.Context[groupMsg], now time.Time) {
	e, g := a.env, a.g
	room := e.cfg.MaxBacklog - e.sends.backlog() - len(a.pol)
	if room <= 0 {
		if at := g.NextAutoReplyAt(now); !at.IsZero() && !at.After(now) {
			e.room.wait(a.key)
		}
		return
	}
	cl, ok := g.ClaimAutoReplies(now, min(room, e.cfg.ClaimBatch))
	if !ok {
		return
	}
	nums := make([]string, len(cl.Sends))
	for k, s := range cl.Sends {
		nums[k] = g.Recipients[s.Index].Number
	}
	sup, err := e.checks.suppressed(c.Context(), nums, true)
	if err != nil {
		c.Schedule(time.Second, msgKick{}) // decide again when the list can be read
		return
	}
	granted, wait := 0, time.Duration(0)
	if want := len(cl.Sends) - len(sup); want > 0 {
		granted, wait = e.pacer.take(g.From, want, now)
	}
	var live []group.AutoReplySend
	skipped := group.AutoReplyOutcomes{At: now}
	kept := cl.Sends[:0]
	for _, s := range cl.Sends {
		num := g.Recipients[s.Index].Number
		if _, ok := sup[num]; ok {
			kept = append(kept, s)
			skipped.Outcomes = append(skipped.Outcomes, group.Outcome{SendID: s.ID, Indices: []int{s.Index},
				Result: group.ResultSuppressed, Detail: "on the suppression list"})
			continue
		}
		if len(live) < granted {
			kept = append(kept, s)
			live = append(live, s)
		}
	}
	if len(live) < len(cl.Sends)-len(sup) {
		c.Schedule(max(wait, time.Millisecond), msgKick{})
	}
	if len(kept) == 0 {
		return
	}
	cl.Sends = kept
	a.emit(cl)
	if len(skipped.Outcomes) > 0 {
		a.emit(skipped)
	}
	for _, s := range live {
		num := g.Recipients[s.Index].Number
		a.eff.Claim = append(a.eff.Claim, num)
		from := g.FromFor(s.Index) // a pool group: the person's own number
		a.addRoute(convKey(from, num), e.cfg.ConversationTTL)
		a.pol = append(a.pol, sendJob{groupID: a.key, send: s.Send(),
			req: crewcast.SendRequest{From: from, To: []string{num}, Text: g.AutoReplyText(s.Kind),
				IdempotencyKey: group.ClaimKey(a.key, s.ID)}})
	}
}

// autoReplyResult records the provider's answer to an auto-reply; false
// for another send.
func (a *groupActor) autoReplyResult(r sendResult, now time.Time) (group.Outcome, bool) {
	if !group.IsAutoReplySend(r.send.ID) {
		return group.Outcome{}, false
	}
	o := a.g.AutoReplyOutcome(r.send, r.res, r.err, r.at)
	a.emit(group.AutoReplyOutcomes{At: now, Outcomes: []group.Outcome{o}})
	return o, true
}

// recoverAutoReplies marks auto-replies left in flight by a dead process
// as uncertain: spent, never resent.
func (a *groupActor) recoverAutoReplies(now time.Time) {
	if u, ok := a.g.RecoverAutoReplies(now, a.env.work.inFlight(a.key)); ok {
		a.emit(u)
	}
}

// Audit actions of a dispatcher's hand on a callout (group/handpick.go).
const (
	AuditRecipientSelected = "recipient.selected"
	AuditRecipientReleased = "recipient.released"
	AuditGroupWaveStarted  = "group.wave_started"
)

// calloutAudit names the audit entry of a callout event made by hand.
func (a *groupActor) calloutAudit(ev group.Event) (action, target, by string, ok bool) {
	switch e := ev.(type) {
	case group.Selected:
		if e.By != "" && len(e.Indices) == 1 {
			return AuditRecipientSelected, a.recipientTarget(e.Indices[0]), e.By, true
		}
	case group.Unselected:
		if e.By != "" && len(e.Indices) == 1 {
			return AuditRecipientReleased, a.recipientTarget(e.Indices[0]), e.By, true
		}
	case group.WaveSent:
		if e.By != "" {
			return AuditGroupWaveStarted, a.key + " wave " + strconv.Itoa(e.Wave), e.By, true
		}
	}
	return "", "", "", false
}

// SelectRecipient selects a person for the group's exact quota by hand
// (journaled and audited with who asked).
func (t *Tracker) SelectRecipient(ctx context.Context, id, number, by string) error {
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.SelectByHand(number, now, by) })
}

// ReleaseRecipient releases a selected or standby person by hand.
func (t *Tracker) ReleaseRecipient(ctx context.Context, id, number, by string) error {
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.ReleaseByHand(number, now, by) })
}

// StartNextWave sends the group's next wave now.
func (t *Tracker) StartNextWave(ctx context.Context, id, by string) error {
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.WaveNow(now, by) })
}
