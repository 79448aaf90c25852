// Package group is the pure domain logic of one group message: its roster,
// the recipients' statuses, and every decision about them — what to claim,
// what a provider outcome or webhook means, when to retry, when to give up.
//
// It does no I/O and reads no clock: callers pass the time in. The group
// actor (package tracker) feeds it commands, persists the events it returns
// in the group's journal, and carries out the side effects (provider calls,
// reminders) those events imply. Recovery replays the same events through
// Apply, so the state after a crash is exactly the state before it.
//
// Invariants the tests hold it to:
//   - Statuses only move forward (see rank); a late "sent" never overwrites
//     "delivered"; duplicate and reordered events are harmless.
//   - A (recipient, attempt) is claimed at most once; only a recipient whose
//     last attempt certainly did not go out is ever claimed again, and never
//     more than Settings.MaxAttempts times.
//   - An uncertain outcome becomes "unconfirmed" and is never resent
//     without an operator decision.
package group

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/errcode"
)

// Settings are a group's policies, fixed when it is created.
type Settings struct {
	// MaxAttempts bounds how many times one recipient is claimed. Default 3.
	MaxAttempts int `json:"max_attempts"`
	// Backoff is the wait before attempt n+1 after attempt n certainly was
	// not sent (index n-1, the last entry repeats). Default 5m, 15m, 45m.
	Backoff []time.Duration `json:"backoff"`
	// CheckAfter is when a sent recipient without a final receipt is first
	// looked up at the provider; each later check waits twice as long.
	// Default 15m.
	CheckAfter time.Duration `json:"check_after"`
	// Deadline is how long after acceptance a recipient may stay "sent"
	// before it is marked "unknown". Default 24h.
	Deadline time.Duration `json:"deadline"`
	// ClaimWindow bounds how long after a claim an orphan webhook may prove
	// that an unconfirmed send went out. Default 1h.
	ClaimWindow time.Duration `json:"claim_window"`
}

// DefaultSettings returns the documented defaults.
func DefaultSettings() Settings {
	return Settings{
		MaxAttempts: 3,
		Backoff:     []time.Duration{5 * time.Minute, 15 * time.Minute, 45 * time.Minute},
		CheckAfter:  15 * time.Minute,
		Deadline:    24 * time.Hour,
		ClaimWindow: time.Hour,
	}
}

// WithDefaults fills zero fields from DefaultSettings.
func (s Settings) WithDefaults() Settings {
	d := DefaultSettings()
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = d.MaxAttempts
	}
	if len(s.Backoff) == 0 {
		s.Backoff = d.Backoff
	}
	if s.CheckAfter <= 0 {
		s.CheckAfter = d.CheckAfter
	}
	if s.Deadline <= 0 {
		s.Deadline = d.Deadline
	}
	if s.ClaimWindow <= 0 {
		s.ClaimWindow = d.ClaimWindow
	}
	return s
}

// backoff returns the wait after the given (1-based) failed attempt.
func (s Settings) backoff(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > len(s.Backoff) {
		return s.Backoff[len(s.Backoff)-1]
	}
	return s.Backoff[attempt-1]
}

// Recipient is one person a group message goes to.
type Recipient struct {
	Index  int             `json:"i"`
	Number string          `json:"number"`
	Name   string          `json:"name,omitempty"`
	Status crewcast.Status `json:"status"`
	// Attempts counts the sends that spent the attempt budget: every claim
	// spends one, and a send refused for rate or sender reasons (which
	// created nothing) gives it back.
	Attempts int `json:"attempts"`
	// Claims counts every claim ever made; it only grows.
	Claims         int                 `json:"claims"`
	MessageID      string              `json:"message_id,omitempty"`
	GroupMessageID string              `json:"group_message_id,omitempty"`
	ErrorCode      string              `json:"error_code,omitempty"`
	ErrorClass     crewcast.ErrorClass `json:"error_class,omitempty"`
	ErrorDetail    string              `json:"error_detail,omitempty"`
	// Reason explains unconfirmed and unknown statuses to operators.
	Reason      string    `json:"reason,omitempty"`
	ClaimedAt   time.Time `json:"claimed_at,omitzero"`
	SentAt      time.Time `json:"sent_at,omitzero"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
	FailedAt    time.Time `json:"failed_at,omitzero"`
	RepliedAt   time.Time `json:"replied_at,omitzero"`
	// RetryAt, for a pending recipient, is the earliest time it may be
	// claimed again.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// NextCheckAt, for a sent recipient, is when to look it up at the provider.
	NextCheckAt time.Time    `json:"next_check_at,omitzero"`
	Checks      int          `json:"checks,omitempty"`
	Ack         crewcast.Ack `json:"ack,omitempty"`
	LastReply   string       `json:"last_reply,omitempty"`
	// LastAnswerSentAt is the provider time of the answer (any reply but a
	// keyword) that Ack and Response come from, zero when unknown: the
	// latest answer wins by when it was sent, not by when it was applied.
	LastAnswerSentAt time.Time `json:"last_answer_sent_at,omitzero"`
	Replies          int       `json:"replies,omitempty"`
	// BeforeOptOut remembers the status a STOP replaced, so START can give
	// it back.
	BeforeOptOut crewcast.Status `json:"before_opt_out,omitempty"`
	// SendID names the provider send in flight or last made (group MMS: one
	// for every recipient of the thread).
	SendID string `json:"send_id,omitempty"`
	// Text is this recipient's own rendered text; "" means the group's.
	Text string `json:"text,omitempty"`
	// ContactID is the contact this recipient was chosen as ("" for a raw
	// number), as the roster froze it.
	ContactID string `json:"contact_id,omitempty"`
	// Response is the key of the response option of the latest reply that
	// chose one ("" = none yet).
	Response string `json:"response,omitempty"`
	// Code is this recipient's reply code for the group (replycode.go),
	// CodeShown whether their texts show it.
	Code      string `json:"code,omitempty"`
	CodeShown bool   `json:"code_shown,omitempty"`
	// From is the pool number this recipient is texted from in a pool
	// group ("" = the group's From); Provider is the provider that
	// accepted the last send ("" = the default one). See pool.go.
	From     string `json:"from,omitempty"`
	Provider string `json:"provider,omitempty"`
	// AnsweredBy is the channel of the recipient's standing answer (a yes,
	// a no or an option): "sms", "voice" or "email" (docs/design.md §17).
	AnsweredBy string `json:"answered_by,omitempty"`

	// Follow-ups, quiet hours and time zone (followup.go, quiet.go).
	FollowupState
}

// Group is one group message and its recipients: the state that events
// build and that snapshots store.
type Group struct {
	ID          string               `json:"id"`
	From        string               `json:"from"`
	Text        string               `json:"text"`
	MediaURLs   []string             `json:"media_urls,omitempty"`
	Mode        crewcast.Mode        `json:"mode"`
	Status      crewcast.GroupStatus `json:"status"`
	PauseReason string               `json:"pause_reason,omitempty"`
	CreatedAt   time.Time            `json:"created_at"`
	UpdatedAt   time.Time            `json:"updated_at"`
	Settings    Settings             `json:"settings"`
	Recipients  []*Recipient         `json:"recipients"`
	// Responses are the answers the group asks for (docs/design.md §11); Quorum
	// is how many of one answer it needs, and when that was reached.
	Responses []Option     `json:"responses,omitempty"`
	Quorum    *QuorumState `json:"quorum,omitempty"`
	// Seen holds the provider event ids already applied, so that a webhook
	// delivered twice changes nothing the second time.
	Seen map[string]struct{} `json:"seen,omitempty"`
	// Sends counts provider sends claimed, for unique send ids.
	Sends int `json:"sends"`
	// Policy holds follow-ups, escalation, send_at and quiet hours, frozen
	// at creation (followup.go); nil for a group without any.
	Policy *Policy `json:"policy,omitempty"`
	// Escalation is the escalation decided for this group, if any.
	Escalation *Escalation `json:"escalation,omitempty"`
	// Confirmations are the answers crewcast sent to keyword replies
	// (confirm.go).
	Confirmations []Confirmation `json:"confirmations,omitempty"`
	// NudgedAt is an operator's last "nudge non-responders now".
	NudgedAt time.Time `json:"nudged_at,omitzero"`
	// WavesSent counts the waves sent, the last at LastWaveAt (waves.go).
	WavesSent  int       `json:"waves_sent,omitempty"`
	LastWaveAt time.Time `json:"last_wave_at,omitzero"`
	// Pool names the sender pool the group is sent from ("" = one From);
	// each recipient's own number is Recipient.From (pool.go).
	Pool string `json:"pool,omitempty"`
	// ReconciledFailover names the latest database failover this group
	// reconciled its unsent recipients after (failover.go).
	ReconciledFailover string `json:"reconciled_failover,omitempty"`

	byNumber map[string]int
	// dirty collects the recipients changed since TakeDirty.
	dirty map[int]struct{}
	// counts is what Counts returns, kept up to date from the dirty
	// recipients (counted[i] is how recipient i was last counted), so that
	// a commit's cost follows its changes, not the group's size. nil until
	// the first count.
	counts  map[string]int
	counted []tally
	// quorumMet stops follow-ups and escalation; see QuorumMet.
	quorumMet bool
}

// TextFor returns the text recipient i is sent: their own rendered text,
// or the group's.
func (g *Group) TextFor(i int) string {
	text := g.Text
	if i >= 0 && i < len(g.Recipients) && g.Recipients[i].Text != "" {
		text = g.Recipients[i].Text
	}
	if code := g.ShownCode(i); code != "" {
		return WithCodedHint(text, g.Responses, code) // "Reply 1A Coming, …"
	}
	return text
}

// Index returns the recipient with the given number, or nil.
func (g *Group) Recipient(number string) *Recipient {
	if g.byNumber == nil {
		g.reindex()
	}
	if i, ok := g.byNumber[number]; ok {
		return g.Recipients[i]
	}
	return nil
}

func (g *Group) reindex() {
	g.byNumber = make(map[string]int, len(g.Recipients))
	for i, r := range g.Recipients {
		g.byNumber[r.Number] = i
	}
}

// MarkDirty records recipient i as changed, so that its projection and
// reminders are written with the next commit and it is counted again.
func (g *Group) MarkDirty(i int) { g.markDirty(i) }

func (g *Group) markDirty(i int) {
	if g.dirty == nil {
		g.dirty = make(map[int]struct{})
	}
	g.dirty[i] = struct{}{}
}

// TakeDirty returns the indices of recipients changed since the last call,
// in ascending order, and forgets them.
func (g *Group) TakeDirty() []int {
	g.recount()
	out := slices.Sorted(maps.Keys(g.dirty))
	g.dirty = nil
	return out
}

// Counts returns how many recipients are in each status, plus the reply
// tallies (see countKeys). It follows the changes Apply makes; a recipient
// changed any other way must be marked with MarkDirty.
func (g *Group) Counts() map[string]int {
	g.recount()
	return maps.Clone(g.counts)
}

// Reply tallies beside the per-status counts:
//   - "replied": recipients who replied at all (any text);
//   - "acknowledged": recipients whose latest answer is yes or no (design
//     §10), split into "ack_yes" and "ack_no" so a board never adds a NO to
//     the YESes; replied − acknowledged replied something else;
//   - "no_reply": recipients who have not replied, except those who were
//     never texted and never will be (suppressed or canceled before their
//     send): the people a dispatcher is still waiting for (docs/design.md §11).
const (
	CountReplied      = "replied"
	CountAcknowledged = "acknowledged"
	CountAckYes       = "ack_yes"
	CountAckNo        = "ack_no"
	CountNoReply      = "no_reply"
	// CountCarrierBlocked counts the failed recipients whose failure the
	// carrier explained (errcode.Carrier: a spam filter, an unregistered
	// sender, an unreachable phone, a landline). They are also in "failed";
	// a board shows them apart so "blocked by the carrier" never reads as a
	// plain failure (docs/design.md §18).
	CountCarrierBlocked = "carrier_blocked"
	// CountSelected and CountStandby: an exact quota's selected and
	// standby recipients (waves.go).
	CountSelected = "selected"
	CountStandby  = "standby"
	// CountResponsePrefix + an option key counts the recipients whose
	// latest answer is that option (the API nests them as
	// counts.responses).
	CountResponsePrefix = "responses."
	// CountByChannelPrefix + a channel counts the recipients whose
	// standing answer came that way (AnsweredBy; the API nests them as
	// counts.by_channel).
	CountByChannelPrefix = "by_channel."
)

// CountKeys lists every key Counts returns, zero or not: the statuses in
// display order, then the reply tallies.
var CountKeys = func() []string {
	keys := make([]string, 0, len(crewcast.AllStatuses)+5)
	for _, s := range crewcast.AllStatuses {
		keys = append(keys, string(s))
	}
	return append(keys, CountReplied, CountAcknowledged, CountAckYes, CountAckNo, CountNoReply, CountSelected, CountStandby,
		CountCarrierBlocked)
}()

// tally is how one recipient counts in Counts.
type tally struct {
	status   crewcast.Status
	replied  bool
	ack      crewcast.Ack
	response string
	by       string // AnsweredBy
	selected bool
	standby  bool
	blocked  bool // failed, for a reason the carrier named
}

func tallyOf(r *Recipient) tally {
	return tally{status: r.Status, replied: r.Replies > 0, ack: r.Ack, response: r.Response, by: r.AnsweredBy, selected: r.Selected, standby: r.Standby,
		blocked: r.Status == crewcast.StatusFailed && errcode.Carrier(r.ErrorCode) != ""}
}

func (t tally) add(c map[string]int, n int) {
	c[string(t.status)] += n
	if t.blocked {
		c[CountCarrierBlocked] += n
	}
	if t.selected {
		c[CountSelected] += n
	}
	if t.standby {
		c[CountStandby] += n
	}
	if t.response != "" {
		c[CountResponsePrefix+t.response] += n
	}
	if t.by != "" {
		// Present only while someone answered that way, so counting afresh
		// and counting changes give the same map.
		if c[CountByChannelPrefix+t.by] += n; c[CountByChannelPrefix+t.by] == 0 {
			delete(c, CountByChannelPrefix+t.by)
		}
	}
	switch {
	case t.replied:
		c[CountReplied] += n
	case t.status != crewcast.StatusOptedOut && t.status != crewcast.StatusCanceled && t.status != crewcast.StatusNotNeeded:
		c[CountNoReply] += n
	}
	switch t.ack {
	case crewcast.AckYes:
		c[CountAcknowledged] += n
		c[CountAckYes] += n
	case crewcast.AckNo:
		c[CountAcknowledged] += n
		c[CountAckNo] += n
	}
}

// recount brings counts up to date: from scratch the first time (after
// creation or a snapshot), then by recounting only the recipients changed
// since (every change Apply makes marks its recipient dirty). Recounting a
// recipient twice is harmless, so TakeDirty and Counts may both call it.
func (g *Group) recount() {
	if g.counts == nil || len(g.counted) != len(g.Recipients) {
		g.counts = make(map[string]int, len(CountKeys))
		for _, k := range CountKeys {
			g.counts[k] = 0
		}
		for _, o := range g.Responses {
			g.counts[CountResponsePrefix+o.Key] = 0
		}
		g.counted = make([]tally, len(g.Recipients))
		for i, r := range g.Recipients {
			g.counted[i] = tallyOf(r)
			g.counted[i].add(g.counts, 1)
		}
		return
	}
	for i := range g.dirty {
		if now := tallyOf(g.Recipients[i]); now != g.counted[i] {
			g.counted[i].add(g.counts, -1)
			now.add(g.counts, 1)
			g.counted[i] = now
		}
	}
}

// rank orders statuses for the forward-only rule. A status of higher rank
// may replace a lower one; equal or lower never does, except where an
// operator decision or a retry says otherwise (handled explicitly).
func rank(s crewcast.Status) int {
	switch s {
	case crewcast.StatusPending, crewcast.StatusScheduled:
		return 0
	case crewcast.StatusSending:
		return 1
	case crewcast.StatusUnconfirmed:
		return 2
	case crewcast.StatusSent:
		return 3
	case crewcast.StatusUnknown:
		return 4
	case crewcast.StatusFailed, crewcast.StatusDelivered:
		return 5
	case crewcast.StatusOptedOut, crewcast.StatusCanceled, crewcast.StatusNotNeeded:
		return 6
	}
	return -1
}

// recomputeStatus derives the group status from its recipients.
func (g *Group) recomputeStatus() {
	switch g.Status {
	case crewcast.GroupCanceled, crewcast.GroupPaused:
		return
	}
	pendingOrSending, sent := false, false
	for _, r := range g.Recipients {
		switch r.Status {
		case crewcast.StatusPending, crewcast.StatusSending, crewcast.StatusScheduled:
			pendingOrSending = true
		case crewcast.StatusSent:
			sent = true
		}
	}
	switch {
	case pendingOrSending:
		g.Status = crewcast.GroupSending
	case sent:
		g.Status = crewcast.GroupAwaiting
	default:
		g.Status = crewcast.GroupComplete
	}
}

// sending reports whether a provider call for r is in flight, including
// one whose recipient replied STOP meanwhile.
func (r *Recipient) sending() bool {
	return r.Status == crewcast.StatusSending ||
		r.Status == crewcast.StatusOptedOut && r.BeforeOptOut == crewcast.StatusSending
}

// InFlight returns the recipients whose provider call is in flight.
func (g *Group) InFlight() []*Recipient {
	var out []*Recipient
	for _, r := range g.Recipients {
		if r.sending() {
			out = append(out, r)
		}
	}
	return out
}

// ClaimKey is the deterministic idempotency key of a provider send: the
// group, the send and its attempt. A provider that honours idempotency keys
// turns a repeated send into the same message.
func ClaimKey(groupID, sendID string) string {
	return fmt.Sprintf("%s:%s", groupID, sendID)
}
