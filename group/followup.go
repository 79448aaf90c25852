package group

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
)

// Follow-ups (docs/design.md §12): a recipient who has not answered is texted
// again `after` the original was accepted, then `after` each follow-up, at
// most `max` times. Each follow-up is its own send with its own claim
// (send id "f<index>-<n>", so its claim key names the follow-up number),
// committed before the provider call like any send; a crash between claim
// and result leaves that follow-up unconfirmed and spent — never resent.
//
// Stop conditions are read from the state whenever a follow-up is decided
// (a reminder fires, the actor kicks) — never from a stale plan — and an
// answer committed while a claimed follow-up waits for its provider call
// stops that call (the tracker checks before calling, see
// tracker/followups.go).

// Priorities of a group.
const (
	PriorityNormal   = "normal"
	PriorityCritical = "critical" // bypasses quiet hours
)

// Policy is what a group does besides its first send: follow-ups,
// escalation, when to send and when not. It is frozen at creation.
type Policy struct {
	// SendAt holds every recipient as scheduled until then.
	SendAt   time.Time `json:"send_at,omitzero"`
	Priority string    `json:"priority,omitempty"`
	Followup *Followup `json:"followup,omitempty"`
	Escalate *Escalate `json:"escalate,omitempty"`
	// Quiet is the group's quiet hours, read in each recipient's zone;
	// nil: none (off, or no server default).
	Quiet *QuietHours `json:"quiet_hours,omitempty"`
	// Timezone is the zone of recipients without one (the server's
	// --default-timezone when the group was created).
	Timezone string `json:"timezone,omitempty"`
	// Waves, ConfirmedText and FilledText: callouts that fill (waves.go).
	Waves         *Waves `json:"waves,omitempty"`
	ConfirmedText string `json:"confirmed_text,omitempty"`
	FilledText    string `json:"filled_text,omitempty"`
}

// Followup is the follow-up policy.
type Followup struct {
	After time.Duration `json:"after"`
	Max   int           `json:"max"`
	// Text of the follow-ups; "" means DefaultFollowupPrefix + the
	// original text.
	Text string `json:"text,omitempty"`
	// Steps, for a ladder (ladder.go), are its steps; Max is then their
	// number and After the first step's. Empty for the old form.
	Steps []Step `json:"steps,omitempty"`
}

// DefaultFollowupPrefix starts the default follow-up text.
const DefaultFollowupPrefix = "Reminder: "

// Escalate is the escalation policy.
type Escalate struct {
	After time.Duration `json:"after"`
	// Crews named at creation; To holds the numbers they resolved to (by
	// the tracker's crew resolver) merged with the numbers given.
	Crews []string `json:"crews,omitempty"`
	To    []string `json:"to,omitempty"`
	Text  string   `json:"text,omitempty"`
}

// DefaultEscalationText is the escalation text when none is given.
const DefaultEscalationText = "No answer yet from {{no_reply_names}} ({{tally}})"

// FollowupState is a recipient's follow-up and quiet-hours state.
type FollowupState struct {
	// TZ is the recipient's IANA zone ("" = the policy's default).
	TZ string `json:"tz,omitempty"`
	// HeldUntil, for a scheduled recipient, is when it may be sent.
	HeldUntil time.Time `json:"held_until,omitzero"`
	// AnsweredAt is when the recipient first answered (see Answered).
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	// Followups counts the follow-ups claimed and not given back (a
	// follow-up certainly not sent is given back and claimed again under
	// the same number).
	Followups int `json:"followups,omitempty"`
	// FollowupsSent counts the follow-ups the provider accepted.
	FollowupsSent int `json:"followups_sent,omitempty"`
	// FollowupSendID is the follow-up whose provider call is in flight,
	// claimed at FollowupClaimedAt.
	FollowupSendID    string    `json:"followup_send_id,omitempty"`
	FollowupClaimedAt time.Time `json:"followup_claimed_at,omitzero"`
	// LastFollowupAt is when the last follow-up that counts was answered
	// by the provider (accepted or unconfirmed): the next is due After it.
	LastFollowupAt time.Time `json:"last_followup_at,omitzero"`
	// FollowupRetryAt delays a follow-up that certainly was not sent.
	FollowupRetryAt time.Time `json:"followup_retry_at,omitzero"`
	// FollowupMessageID is the provider id of the last follow-up accepted.
	FollowupMessageID string `json:"followup_message_id,omitempty"`
	// FollowupStop, when set, says why no more follow-ups go to this
	// recipient (failed definitively, suppressed, answered in flight).
	FollowupStop string `json:"followup_stop,omitempty"`
	// Nudged: an operator asked for this recipient's next follow-up now
	// (Group.NudgedAt); cleared once a follow-up counts.
	Nudged bool `json:"nudged,omitempty"`

	// Waves, exact quotas and their auto-replies (waves.go).
	QuotaState
}

// Answered reports whether r counts as having responded: any reply except
// STOP, START and HELP — also in a group with response options, where an
// unrecognised reply is still a person reached (not to be reminded again).
func Answered(r *Recipient) bool { return !r.AnsweredAt.IsZero() }

// isAnswer reports whether a reply counts as an answer (see Answered).
func isAnswer(v Replied) bool { return v.Keyword == "" }

// noteAnswer records the first answer of a recipient; Apply calls it for
// every Replied event.
func (g *Group) noteAnswer(v Replied) {
	r := g.Recipients[v.Index]
	if isAnswer(v) && r.AnsweredAt.IsZero() {
		r.AnsweredAt = v.At
		g.markDirty(v.Index)
	}
}

// QuorumMet reports whether the group's quorum was met (docs/design.md §11:
// group.quorum_met). quorumMet lets tests set it directly.
func (g *Group) QuorumMet() bool {
	return g.quorumMet || (g.Quorum != nil && !g.Quorum.MetAt.IsZero())
}

// HasQuorum reports whether the group has a quorum (escalation then
// depends on it alone).
func (g *Group) HasQuorum() bool { return g.Quorum != nil }

// SendAt is the group's scheduled time (zero: send at once).
func (g *Group) SendAt() time.Time {
	if g.Policy == nil {
		return time.Time{}
	}
	return g.Policy.SendAt
}

// holdUntilSendAt makes a new pending recipient scheduled when the group
// has a send_at after its creation.
func (g *Group) holdUntilSendAt(r *Recipient) {
	if at := g.SendAt(); r.Status == crewcast.StatusPending && at.After(g.CreatedAt) {
		r.Status = crewcast.StatusScheduled
		r.HeldUntil = at
	}
}

// waiting reports whether r waits for its first send (or a retry) and its
// hold, if any, is over.
func (g *Group) waiting(r *Recipient, now time.Time) bool {
	return r.Status == crewcast.StatusPending || r.Status == crewcast.StatusScheduled && !r.HeldUntil.After(now)
}

func (g *Group) followup() *Followup {
	if g.Policy == nil || g.Policy.Followup == nil || g.Policy.Followup.Max <= 0 {
		return nil
	}
	return g.Policy.Followup
}

// FollowupStopped says why r gets no more follow-ups ("" if it may).
func (g *Group) FollowupStopped(r *Recipient) string {
	switch {
	case g.followup() == nil:
		return "no follow-up policy"
	case g.Status == crewcast.GroupCanceled:
		return "group canceled"
	case g.QuorumMet():
		return "quorum met"
	case Answered(r):
		return "answered"
	case r.FollowupStop != "":
		return r.FollowupStop
	case r.Followups >= g.followup().Max:
		return "all follow-ups sent"
	}
	switch r.Status {
	case crewcast.StatusSent, crewcast.StatusDelivered, crewcast.StatusUnknown:
		return ""
	case crewcast.StatusOptedOut:
		return "opted out"
	case crewcast.StatusFailed:
		return "failed"
	}
	return "not sent yet"
}

// followupDue is when r's next follow-up is due before quiet hours, zero
// when none will be (stopped, or one is in flight).
func (g *Group) followupDue(r *Recipient) time.Time {
	if g.FollowupStopped(r) != "" || r.FollowupSendID != "" {
		return time.Time{}
	}
	f := g.followup()
	base := r.SentAt
	if r.Followups > 0 && len(f.Steps) == 0 {
		base = r.LastFollowupAt
	}
	if base.IsZero() {
		return time.Time{}
	}
	due := base.Add(f.After)
	if len(f.Steps) > 0 {
		// A ladder's steps count from the send; a step never comes
		// before the previous one's provider answer.
		due = f.ladderDue(base, r.Followups+1)
		if r.LastFollowupAt.After(due) {
			due = r.LastFollowupAt
		}
	}
	if r.Nudged && g.NudgedAt.Before(due) {
		due = g.NudgedAt // an operator asked for it now
	}
	if r.FollowupRetryAt.After(due) {
		due = r.FollowupRetryAt
	}
	return due
}

// NextFollowupAt is when r's next follow-up will be sent: its due time, or
// the end of the recipient's quiet hours when it falls in them (zero: no
// more follow-ups). A paused group sends none until resumed.
func (g *Group) NextFollowupAt(r *Recipient) time.Time {
	due := g.followupDue(r)
	if due.IsZero() {
		return due
	}
	if until, ok := g.quietUntil(r, due); ok {
		return until
	}
	return due
}

// FollowupSend is one follow-up: recipient Index, its number N (1-based).
type FollowupSend struct {
	ID    string `json:"send_id"`
	Index int    `json:"i"`
	N     int    `json:"n"`
	// Channel is the ladder step's channel when it is not a text
	// ("voice", "email"): the person's history says which.
	Channel string `json:"channel,omitempty"`
}

// Send is the provider send of a follow-up.
func (f FollowupSend) Send() Send { return Send{ID: f.ID, Indices: []int{f.Index}} }

// followupSendID names follow-up n of recipient i.
// (letters, digits, '-' only: the claim key built from it must pass the
// providers' Idempotency-Key syntax, ^[A-Za-z0-9_:-]+$).
func followupSendID(i, n int) string { return "f" + strconv.Itoa(i) + "-" + strconv.Itoa(n) }

// IsFollowupSend reports whether a send id names a follow-up.
func IsFollowupSend(id string) bool { return strings.HasPrefix(id, "f") }

// FollowupClaimed claims follow-ups, committed before they are sent.
type FollowupClaimed struct {
	At    time.Time      `json:"at"`
	Sends []FollowupSend `json:"sends"`
}

// FollowupOutcomes records what became of follow-up sends (Outcome.Indices
// holds the one recipient).
type FollowupOutcomes struct {
	At       time.Time `json:"at"`
	Outcomes []Outcome `json:"outcomes"`
}

// FollowupStopped records recipients who get no more follow-ups for a
// reason the state does not show by itself (found on the suppression list
// while sent). Reason says why.
type FollowupsStopped struct {
	At         time.Time             `json:"at"`
	Recipients []SuppressedRecipient `json:"recipients"`
}

// Held records recipients held by quiet hours: scheduled until Until.
type Held struct {
	At         time.Time       `json:"at"`
	Recipients []HeldRecipient `json:"recipients"`
}

// HeldRecipient is one recipient held until Until.
type HeldRecipient struct {
	Index int       `json:"i"`
	Until time.Time `json:"until"`
}

// ResultStopped: a follow-up not sent because the recipient answered
// after it was claimed and before its provider call.
const ResultStopped = "stopped"

// FollowupAnswered is the error a sender reports instead of calling the
// provider for a follow-up whose recipient answered after the claim.
type FollowupAnswered struct{}

func (*FollowupAnswered) Error() string {
	return "not sent: the recipient answered before the follow-up went out"
}

// Nudged is an operator's "nudge non-responders now": everyone who may
// still get a follow-up gets their next one now rather than `after` the
// last — within max, quiet hours and every stop condition, claimed like
// any follow-up.
type Nudged struct {
	At time.Time `json:"at"`
	By string    `json:"by,omitempty"`
}

func (Nudged) Type() string { return TypeNudged }

// Nudge decides a nudge: ErrState when the group has no follow-up policy,
// is canceled or paused, or no one is waiting for a follow-up.
func (g *Group) Nudge(now time.Time, by string) (Nudged, error) {
	switch {
	case g.followup() == nil:
		return Nudged{}, stateErr("the group has no follow-up policy")
	case g.Status == crewcast.GroupCanceled || g.Status == crewcast.GroupPaused:
		return Nudged{}, stateErr("group is %s", g.Status)
	}
	for _, r := range g.Recipients {
		if g.FollowupStopped(r) == "" && r.FollowupSendID == "" && !r.SentAt.IsZero() {
			return Nudged{At: now, By: by}, nil
		}
	}
	return Nudged{}, stateErr("no one is waiting for a follow-up")
}

// Journal type names of the policy events.
const (
	TypeNudged           = "followup.nudged"
	TypeFollowupClaimed  = "followup.claimed"
	TypeFollowupOutcomes = "followup.outcomes"
	TypeFollowupsStopped = "followup.stopped"
	TypeHeld             = "recipient.held"
	TypeEscalated        = "escalation.claimed"
	TypeEscalationResult = "escalation.outcomes"
)

func (FollowupClaimed) Type() string  { return TypeFollowupClaimed }
func (FollowupOutcomes) Type() string { return TypeFollowupOutcomes }
func (FollowupsStopped) Type() string { return TypeFollowupsStopped }
func (Held) Type() string             { return TypeHeld }

// ClaimFollowups decides the follow-ups due at now, at most limit (<= 0:
// no limit), for recipients outside their quiet hours (unless critical).
func (g *Group) ClaimFollowups(now time.Time, limit int) (FollowupClaimed, bool) {
	c := FollowupClaimed{At: now}
	if g.followup() == nil || g.Status == crewcast.GroupPaused || g.Status == crewcast.GroupCanceled {
		return c, false
	}
	for i, r := range g.Recipients {
		if limit > 0 && len(c.Sends) >= limit {
			break
		}
		due := g.followupDue(r)
		if due.IsZero() || due.After(now) || g.quietAt(r, now) {
			continue
		}
		fs := FollowupSend{ID: followupSendID(i, r.Followups+1), Index: i, N: r.Followups + 1}
		if ch := g.followup().Step(fs.N).Channel; ch != ChannelSMS {
			fs.Channel = ch
		}
		c.Sends = append(c.Sends, fs)
	}
	return c, len(c.Sends) > 0
}

// FollowupsDue reports whether ClaimFollowups(now, 1) would claim one.
func (g *Group) FollowupsDue(now time.Time) bool {
	_, ok := g.ClaimFollowups(now, 1)
	return ok
}

// FollowupTextFor is the text of r's follow-ups: the policy's, else
// "Reminder: " + r's own rendered text (templates), else the group's.
func (g *Group) FollowupTextFor(r *Recipient) string {
	t := g.followupTextFor(r)
	if r != nil && r.CodeShown && r.Code != "" {
		return WithCodedHint(t, g.Responses, r.Code) // the hint as they were sent it (replycode.go)
	}
	return t
}

func (g *Group) followupTextFor(r *Recipient) string {
	if f := g.followup(); f != nil && r != nil && len(f.Steps) > 0 && g.StepOf(r).Text != "" {
		return g.StepOf(r).Text
	}
	if f := g.followup(); (f == nil || f.Text == "") && r != nil && r.Text != "" {
		// A template rendered this person's own text: remind them of it.
		return DefaultFollowupPrefix + r.Text
	}
	return g.FollowupText()
}

// FollowupText is the group's follow-up text (the policy's, or the
// default on the group's text).
func (g *Group) FollowupText() string {
	if f := g.followup(); f != nil && f.Text != "" {
		return f.Text
	}
	return DefaultFollowupPrefix + g.Text
}

// FollowupOutcome classifies a provider's answer to a follow-up send.
func (g *Group) FollowupOutcome(s Send, res crewcast.SendResult, err error, now time.Time) Outcome {
	var ans *FollowupAnswered
	if err != nil && errors.As(err, &ans) {
		return Outcome{SendID: s.ID, Indices: s.Indices, Result: ResultStopped, Detail: ans.Error()}
	}
	var skip *StepSkipped
	if err != nil && errors.As(err, &skip) {
		o := Outcome{SendID: s.ID, Indices: s.Indices, Result: ResultSkipped, Detail: skip.Error()}
		if len(s.Indices) == 1 && s.Indices[0] < len(g.Recipients) {
			o.Channel = g.StepOf(g.Recipients[s.Indices[0]]).Channel
		}
		return o
	}
	o := g.Outcome(s, res, err, now)
	if len(s.Indices) == 1 && s.Indices[0] < len(g.Recipients) {
		if ch := g.StepOf(g.Recipients[s.Indices[0]]).Channel; ch != ChannelSMS {
			o.Channel = ch
		}
	}
	if o.Result == ResultFailed && o.Class == crewcast.ClassNotSent {
		// The main send's attempt budget does not apply to follow-ups.
		o.Result, o.RetryAt = ResultRetry, now.Add(g.Settings.backoff(1))
	}
	return o
}

// StopFollowups marks recipients whose numbers are suppressed (number →
// reason) as getting no more follow-ups, whatever their status: a
// suppression outlives the send in flight when it was found.
func (g *Group) StopFollowups(reasons map[string]string, now time.Time) (FollowupsStopped, bool) {
	var out []SuppressedRecipient
	if g.followup() == nil {
		return FollowupsStopped{}, false
	}
	for n, reason := range reasons {
		if r := g.Recipient(n); r != nil && r.FollowupStop == "" {
			out = append(out, SuppressedRecipient{Index: r.Index, Reason: suppressedReason(reason, "before a follow-up")})
		}
	}
	sortSuppressed(out)
	return FollowupsStopped{At: now, Recipients: out}, len(out) > 0
}

// Hold decides which recipients waiting for their send are in their quiet
// hours at now (and not yet held until their end): they become scheduled.
func (g *Group) Hold(now time.Time) (Held, bool) {
	h := Held{At: now}
	if !g.quietApplies() || g.Status != crewcast.GroupSending {
		return h, false
	}
	for i, r := range g.Recipients {
		// Only those a claim would take now: a retry still backing off
		// is held when its reminder brings it due.
		if !g.inWave(r) || !g.waiting(r, now) || r.RetryAt.After(now) || r.Attempts >= g.Settings.MaxAttempts {
			continue
		}
		until, ok := g.quietUntil(r, now)
		if !ok || r.Status == crewcast.StatusScheduled && r.HeldUntil.Equal(until) {
			continue
		}
		h.Recipients = append(h.Recipients, HeldRecipient{Index: i, Until: until})
	}
	return h, len(h.Recipients) > 0
}

// RecoverFollowups marks follow-ups (and escalation sends) left in flight
// by a previous process as uncertain: spent, never resent.
func (g *Group) RecoverFollowups(now time.Time, inFlight func(sendID string) bool) []Event {
	var out []Event
	fo := FollowupOutcomes{At: now}
	for i, r := range g.Recipients {
		if r.FollowupSendID != "" && (inFlight == nil || !inFlight(r.FollowupSendID)) {
			fo.Outcomes = append(fo.Outcomes, Outcome{SendID: r.FollowupSendID, Indices: []int{i}, Result: ResultUncertain,
				Class: crewcast.ClassUncertain, Detail: "crash between claim and result: the follow-up may or may not have gone out"})
		}
	}
	if len(fo.Outcomes) > 0 {
		out = append(out, fo)
	}
	if er, ok := g.recoverEscalation(now, inFlight); ok {
		out = append(out, er)
	}
	if co, ok := g.recoverConfirmations(now, inFlight); ok {
		out = append(out, co)
	}
	return out
}

// applyPolicyEvent applies the events of this file and escalate.go.
func (g *Group) applyPolicyEvent(e Event) error {
	switch v := e.(type) {
	case FollowupClaimed:
		for _, s := range v.Sends {
			if err := g.checkIndices(v.Type(), []int{s.Index}); err != nil {
				return err
			}
		}
		for _, s := range v.Sends {
			r := g.Recipients[s.Index]
			r.Followups = s.N
			r.FollowupSendID = s.ID
			r.FollowupClaimedAt = v.At
			r.FollowupRetryAt = time.Time{}
			g.markDirty(s.Index)
		}
	case FollowupOutcomes:
		if err := g.checkIndices(v.Type(), Indices(v)); err != nil {
			return err
		}
		for _, o := range v.Outcomes {
			for _, i := range o.Indices {
				g.applyFollowupOutcome(v.At, i, o)
			}
		}
	case FollowupsStopped:
		if err := g.checkIndices(v.Type(), Indices(v)); err != nil {
			return err
		}
		for _, sr := range v.Recipients {
			if r := g.Recipients[sr.Index]; r.FollowupStop == "" {
				r.FollowupStop = sr.Reason
				g.markDirty(sr.Index)
			}
		}
	case Held:
		if err := g.checkIndices(v.Type(), Indices(v)); err != nil {
			return err
		}
		for _, h := range v.Recipients {
			r := g.Recipients[h.Index]
			if r.Status != crewcast.StatusPending && r.Status != crewcast.StatusScheduled {
				continue
			}
			r.Status, r.HeldUntil = crewcast.StatusScheduled, h.Until
			g.markDirty(h.Index)
		}
	case Escalated, EscalationOutcomes:
		return g.applyEscalation(e)
	case WaveSent, Selected, Standby, Unselected, NotNeeded, QuorumReopened, AutoReplyClaimed, AutoReplyOutcomes, CallEnded:
		return g.applyQuotaEvent(e)
	case ConfirmClaimed, ConfirmOutcomes:
		return g.applyConfirm(e)
	case CodesAssigned:
		return g.applyCodes(v)
	case Nudged:
		g.NudgedAt = v.At
		for i, r := range g.Recipients {
			if g.FollowupStopped(r) == "" && !r.SentAt.IsZero() {
				r.Nudged = true
				g.markDirty(i) // their follow-up reminder moves to now
			}
		}
	default:
		if ok, err := g.applyPoolEvent(e); ok || err != nil { // pool.go
			return err
		}
		return fmt.Errorf("apply: unknown event %T", e)
	}
	if at := eventTime(e); !at.IsZero() {
		g.touch(at)
	}
	return nil
}

func eventTime(e Event) time.Time {
	switch v := e.(type) {
	case FollowupClaimed:
		return v.At
	case FollowupOutcomes:
		return v.At
	case FollowupsStopped:
		return v.At
	case Held:
		return v.At
	case Nudged:
		return v.At
	case WaveSent:
		return v.At
	case Escalated:
		return v.At
	case EscalationOutcomes:
		return v.At
	}
	return time.Time{}
}

func (g *Group) applyFollowupOutcome(at time.Time, i int, o Outcome) {
	r := g.Recipients[i]
	if r.FollowupSendID != o.SendID {
		return // an old follow-up's answer: recorded, changes nothing
	}
	g.markDirty(i)
	r.FollowupSendID = ""
	switch o.Result {
	case ResultAccepted:
		r.FollowupsSent++
		r.LastFollowupAt = at
		r.FollowupMessageID = o.MessageID
		r.Nudged = false
	case ResultUncertain, ResultSkipped:
		r.LastFollowupAt = at // spent: never resent (a skipped step: the ladder goes on)
		r.Nudged = false
	case ResultFailed:
		r.FollowupStop = "follow-up failed: " + o.Detail
		if o.OptOut {
			r.FollowupStop = "the provider reports the recipient opted out"
			if r.Status != crewcast.StatusOptedOut {
				r.BeforeOptOut, r.Status = r.Status, crewcast.StatusOptedOut
				r.Reason = "provider reports the recipient opted out"
			}
		}
	case ResultRetry, ResultRateLimited, ResultHalted:
		r.Followups-- // certainly not sent: the same follow-up is claimed again later
		r.FollowupRetryAt = o.RetryAt
		if o.Result == ResultHalted {
			r.FollowupRetryAt = at
			if g.Status != crewcast.GroupCanceled {
				g.Status, g.PauseReason = crewcast.GroupPaused, pauseReason(o)
			}
		}
	case ResultSuppressed:
		r.Followups--
		r.FollowupStop = o.Detail
	case ResultStopped:
		r.Followups-- // never left: it does not count
	}
}

// newPolicyEvent returns an empty event of a policy type, nil if typ is
// not one.
func newPolicyEvent(typ string) Event {
	switch typ {
	case TypeFollowupClaimed:
		return &FollowupClaimed{}
	case TypeFollowupOutcomes:
		return &FollowupOutcomes{}
	case TypeFollowupsStopped:
		return &FollowupsStopped{}
	case TypeHeld:
		return &Held{}
	case TypeNudged:
		return &Nudged{}
	case TypeEscalated:
		return &Escalated{}
	case TypeEscalationResult:
		return &EscalationOutcomes{}
	case TypeConfirmClaimed:
		return &ConfirmClaimed{}
	case TypeConfirmOutcomes:
		return &ConfirmOutcomes{}
	}
	return newQuotaEvent(typ)
}

func derefPolicyEvent(e Event) Event {
	switch v := e.(type) {
	case *FollowupClaimed:
		return *v
	case *FollowupOutcomes:
		return *v
	case *FollowupsStopped:
		return *v
	case *Held:
		return *v
	case *Nudged:
		return *v
	case *Escalated:
		return *v
	case *EscalationOutcomes:
		return *v
	case *ConfirmClaimed:
		return *v
	case *ConfirmOutcomes:
		return *v
	}
	return derefQuotaEvent(e)
}

func policyEventIndices(e Event) []int {
	switch v := e.(type) {
	case FollowupClaimed:
		out := make([]int, len(v.Sends))
		for k, s := range v.Sends {
			out[k] = s.Index
		}
		return out
	case FollowupOutcomes:
		var out []int
		for _, o := range v.Outcomes {
			out = append(out, o.Indices...)
		}
		return out
	case FollowupsStopped:
		out := make([]int, len(v.Recipients))
		for k, r := range v.Recipients {
			out[k] = r.Index
		}
		return out
	case Held:
		out := make([]int, len(v.Recipients))
		for k, r := range v.Recipients {
			out[k] = r.Index
		}
		return out
	}
	return quotaEventIndices(e)
}

func sortSuppressed(s []SuppressedRecipient) {
	slices.SortFunc(s, func(a, b SuppressedRecipient) int { return a.Index - b.Index })
}
