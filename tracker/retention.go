package tracker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// RetentionPolicy says how long crewcast keeps what (docs/design.md §6). Zero
// durations take the defaults; a negative one turns that stage off.
type RetentionPolicy struct {
	// RedactAfter empties message and reply bodies. Default 30 days.
	RedactAfter time.Duration
	// HashAfter replaces phone numbers by a keyed hash and drops names.
	// Default 90 days.
	HashAfter time.Duration
	// DeleteAfter deletes whole groups with their audit trail. Default 365 days.
	DeleteAfter time.Duration
	// InboxAfter purges processed webhook inbox entries (kept for replay
	// dedupe). Default 7 days.
	InboxAfter time.Duration
	// AuditAfter deletes audit log entries (docs/design.md §14), on its own
	// clock: an organisation may have to keep who-did-what longer or
	// shorter than the groups. Default 365 days.
	AuditAfter time.Duration
	// ReplayAfter purges the replay record: the hashes of processed
	// provider event ids, which refuse a captured webhook posted again
	// after its inbox entry was purged (Twilio's signatures never
	// expire). Default DeleteAfter + InboxAfter: as long as any group it
	// could have been for is kept, plus the inbox window (kept for ever
	// when groups are).
	ReplayAfter time.Duration
	// HashKey keys the number hash (HMAC-SHA256). Required for hashing:
	// without it the hash stage is skipped, never done with a plain hash.
	HashKey []byte
}

// DefaultRetention returns the documented defaults (no hash key).
func DefaultRetention() RetentionPolicy {
	return RetentionPolicy{RedactAfter: 30 * 24 * time.Hour, HashAfter: 90 * 24 * time.Hour,
		DeleteAfter: 365 * 24 * time.Hour, InboxAfter: 7 * 24 * time.Hour, AuditAfter: 365 * 24 * time.Hour}
}

func (p RetentionPolicy) withDefaults() RetentionPolicy {
	d := DefaultRetention()
	if p.RedactAfter == 0 {
		p.RedactAfter = d.RedactAfter
	}
	if p.HashAfter == 0 {
		p.HashAfter = d.HashAfter
	}
	if p.DeleteAfter == 0 {
		p.DeleteAfter = d.DeleteAfter
	}
	if p.InboxAfter == 0 {
		p.InboxAfter = d.InboxAfter
	}
	if p.AuditAfter == 0 {
		p.AuditAfter = d.AuditAfter
	}
	if p.ReplayAfter == 0 {
		p.ReplayAfter = -1
		if p.DeleteAfter >= 0 && p.InboxAfter >= 0 {
			p.ReplayAfter = p.DeleteAfter + p.InboxAfter
		}
	}
	return p
}

// RetentionReport counts what one retention run changed.
type RetentionReport struct {
	Redacted        int `json:"redacted"`
	Hashed          int `json:"hashed"`
	Deleted         int `json:"deleted"`
	InboxPurged     int `json:"inbox_purged"`
	ReplaysPurged   int `json:"replays_purged"` // replay records (after ReplayAfter)
	RepliesRedacted int `json:"replies_redacted"`
	AuditPurged     int `json:"audit_purged"`
	// UnmatchedTrimmed counts events deleted from the unmatched journal,
	// RepliesDeleted unmatched replies deleted (both after DeleteAfter).
	UnmatchedTrimmed int `json:"unmatched_trimmed"`
	RepliesDeleted   int `json:"replies_deleted"`
	// Skipped counts groups not yet final (still sending or awaiting
	// receipts): retention waits for them.
	Skipped int `json:"skipped"`
}

// HashNumber is the keyed hash that replaces a phone number: stable for one
// key, so a person can still be counted across groups, but not reversible
// without the key.
func HashNumber(key []byte, number string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(number))
	return "h:" + hex.EncodeToString(m.Sum(nil))[:24]
}

// RunRetention applies the policy once, at now. It is idempotent: a second
// run at the same time changes nothing. audit (the entry of an operator's
// pass) commits with the pass's last write, the purge of old audit
// entries (or on its own when that purge is off), so it is written only
// when the pass finished: an error means it was not.
func (t *Tracker) RunRetention(ctx context.Context, p RetentionPolicy, audit ...store.AuditEntry) (RetentionReport, error) {
	p = p.withDefaults()
	now := t.cfg.Clock.Now()
	var rep RetentionReport
	var number func(string) string
	if len(p.HashKey) > 0 {
		number = func(n string) string { return HashNumber(p.HashKey, n) }
	}
	if err := t.retainGroups(ctx, p, now, number, &rep); err != nil {
		return rep, err
	}
	if err := t.retainUnmatched(ctx, p, now, number, &rep); err != nil {
		return rep, err
	}
	// Last: the audit log purge, with the pass's own entry.
	if p.AuditAfter >= 0 {
		n, err := t.st.PurgeAudit(ctx, now.Add(-p.AuditAfter), audit...)
		if err != nil {
			return rep, fmt.Errorf("purge audit log: %w", err)
		}
		rep.AuditPurged = n
	} else if len(audit) > 0 {
		if err := t.st.AppendAudit(ctx, audit...); err != nil {
			return rep, fmt.Errorf("audit the retention pass: %w", err)
		}
	}
	return rep, nil
}

// retainGroups runs the group stages: delete, then hash, then redact,
// each over the groups old enough for it, 200 candidates at a time.
func (t *Tracker) retainGroups(ctx context.Context, p RetentionPolicy, now time.Time, number func(string) string, rep *RetentionReport) error {
	stages := []struct {
		stage store.RetentionStage
		after time.Duration
		count *int
		skip  bool
	}{
		{"", p.DeleteAfter, &rep.Deleted, p.DeleteAfter < 0},
		{store.StageHash, p.HashAfter, &rep.Hashed, p.HashAfter < 0 || number == nil},
		{store.StageRedact, p.RedactAfter, &rep.Redacted, p.RedactAfter < 0},
	}
	for _, s := range stages {
		if s.skip {
			continue
		}
		seen := map[string]bool{}
		for {
			ids, err := t.st.RetentionCandidates(ctx, s.stage, now.Add(-s.after), 200)
			if err != nil {
				return fmt.Errorf("retention candidates: %w", err)
			}
			progress := false
			for _, id := range ids {
				if seen[id] {
					continue
				}
				seen[id] = true
				progress = true
				done, err := t.retainGroup(ctx, id, s.stage, number)
				if err != nil {
					return err
				}
				if done {
					*s.count++
				} else {
					rep.Skipped++
				}
			}
			if !progress || len(ids) < 200 {
				break
			}
		}
	}
	return nil
}

// retainUnmatched runs what belongs to no group: the unmatched journal
// and replies, the webhook inbox and the replay record.
func (t *Tracker) retainUnmatched(ctx context.Context, p RetentionPolicy, now time.Time, number func(string) string, rep *RetentionReport) error {
	if p.DeleteAfter >= 0 {
		n, err := t.unmatched.trim(ctx, now.Add(-p.DeleteAfter))
		if err != nil {
			return err
		}
		rep.UnmatchedTrimmed = n
		if n, err = t.st.DeleteUnmatchedReplies(ctx, now.Add(-p.DeleteAfter)); err != nil {
			return fmt.Errorf("delete unmatched replies: %w", err)
		}
		rep.RepliesDeleted = n
	}
	if p.InboxAfter >= 0 {
		n, err := t.st.PurgeInbox(ctx, now.Add(-p.InboxAfter))
		if err != nil {
			return fmt.Errorf("purge inbox: %w", err)
		}
		rep.InboxPurged = n
	}
	if p.ReplayAfter >= 0 {
		n, err := t.st.PurgeReplays(ctx, now.Add(-p.ReplayAfter))
		if err != nil {
			return fmt.Errorf("purge replay record: %w", err)
		}
		rep.ReplaysPurged = n
	}
	if p.RedactAfter >= 0 {
		n, err := t.st.RedactUnmatchedReplies(ctx, now.Add(-p.RedactAfter), nil)
		if err != nil {
			return fmt.Errorf("redact unmatched replies: %w", err)
		}
		rep.RepliesRedacted += n
	}
	if p.HashAfter >= 0 && number != nil {
		n, err := t.st.RedactUnmatchedReplies(ctx, now.Add(-p.HashAfter), number)
		if err != nil {
			return fmt.Errorf("hash unmatched replies: %w", err)
		}
		rep.RepliesRedacted += n
	}
	return nil
}

// msgRetention asks a group actor to apply a retention stage in its own
// turn, so that no commit of its races the rewrite.
type msgRetention struct {
	stage  store.RetentionStage
	number func(string) string
	reply  actor.Reply[retentionResult]
}

type retentionResult struct {
	done bool
	err  error
}

func (msgRetention) isGroupMsg() {}

func (m msgRetention) replyErr(err error) { m.reply.Send(retentionResult{err: err}) }

func (t *Tracker) retainGroup(ctx context.Context, id string, stage store.RetentionStage, number func(string) string) (bool, error) {
	// Our own deadline, so that unavailable (which reads ctx) tells it
	// from the caller giving up.
	askCtx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	res, err := actor.Ask(askCtx, t.groups.Get(id), func(r actor.Reply[retentionResult]) groupMsg {
		return msgRetention{stage: stage, number: number, reply: r}
	})
	if err != nil {
		return false, fmt.Errorf("retention of %s: %w", id, err)
	}
	if res.err != nil {
		return false, fmt.Errorf("retention of %s: %w", id, res.err)
	}
	return res.done, nil
}

// retain applies one stage to this group and then leaves memory, so the
// next activation reads the rewritten journal.
func (a *groupActor) retain(c *actor.Context[groupMsg], m msgRetention) retentionResult {
	ctx := c.Context()
	if a.g == nil {
		// Journal gone or never there: let the store clean whatever is left.
		if m.stage == "" {
			return retentionResult{done: true, err: a.env.st.DeleteGroup(ctx, a.key)}
		}
		return retentionResult{done: true, err: a.env.st.RewriteGroup(ctx, a.key, m.stage, store.Rewriter{})}
	}
	switch a.g.Status {
	case "complete", "canceled":
	default:
		if m.stage != "" {
			return retentionResult{done: false}
		}
	}
	if a.busy() {
		return retentionResult{done: false}
	}
	var err error
	switch m.stage {
	case "":
		err = a.env.st.DeleteGroup(ctx, a.key)
	case store.StageRedact:
		err = a.env.st.RewriteGroup(ctx, a.key, m.stage, store.Rewriter{RedactText: true,
			Event: func(typ string, data []byte) ([]byte, error) { return group.RewriteEvent(typ, data, true, nil) }})
	case store.StageHash:
		for _, r := range a.g.Recipients {
			if err := a.env.st.DeleteRoute(ctx, convKey(a.g.From, r.Number)); err != nil {
				return retentionResult{err: err}
			}
			if len(a.g.Responses) > 0 { // its reply-code map names the number too (replycodes.go)
				if err := a.env.st.DeleteRoute(ctx, codeKey(a.g.From, r.Number)); err != nil {
					return retentionResult{err: err}
				}
			}
		}
		if a.g.Mode == "group_mms" {
			if err := a.env.st.DeleteRoute(ctx, threadKey(a.g.From, numbersOf(a.g.Recipients))); err != nil {
				return retentionResult{err: err}
			}
		}
		err = a.env.st.RewriteGroup(ctx, a.key, m.stage, store.Rewriter{Number: m.number,
			Event: func(typ string, data []byte) ([]byte, error) { return group.RewriteEvent(typ, data, false, m.number) }})
	default:
		err = errors.New("unknown retention stage " + string(m.stage))
	}
	if err != nil {
		return retentionResult{err: err}
	}
	// The in-memory state still holds what was just removed: drop it.
	a.retired = true
	c.Stop()
	return retentionResult{done: true}
}
