package sqlq

import (
	"context"
	"time"

	"github.com/crewcast/crewcast/store"
)

// RetentionCandidates returns up to limit ids of groups created before t
// that have not had stage applied (stage "": every group created before
// t), oldest first.
func (d DB) RetentionCandidates(ctx context.Context, stage store.RetentionStage, before time.Time, limit int) ([]string, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	q := `SELECT id FROM groups WHERE created_at < ? ORDER BY created_at, id LIMIT ?`
	args := []any{store.Nanos(before), limit}
	if stage != "" {
		q = `SELECT id FROM groups g WHERE created_at < ? AND NOT EXISTS
			(SELECT 1 FROM retention_marks m WHERE m.group_id = g.id AND m.stage = ?)
			ORDER BY created_at, id LIMIT ?`
		args = []any{store.Nanos(before), string(stage), limit}
	}
	out, err := queryAll(ctx, d.c.Read, scanString, q, args...)
	if err != nil {
		return nil, d.errorf("retention candidates: %w", err)
	}
	return out, nil
}

// RewriteGroup applies rw to the group's journal, group row, deliveries and
// replies in one transaction, deletes its snapshot and its outbound webhook
// events, and marks stage applied.
// A group that already has the mark is left alone, so a rewrite (which is
// not idempotent itself: hashing a hash changes it) runs at most once.
func (d DB) RewriteGroup(ctx context.Context, id string, stage store.RetentionStage, rw store.Rewriter) error {
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM groups WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM retention_marks WHERE group_id = ? AND stage = ?`,
			id, string(stage)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if rw.Event != nil {
			if _, err := rewriteJournal(ctx, tx, id, rw.Event); err != nil {
				return err
			}
		}
		if rw.Number != nil {
			if err := rewriteNumbers(ctx, tx, id, rw.Number); err != nil {
				return err
			}
		}
		if rw.RedactText {
			if err := execEach(ctx, tx, id,
				`UPDATE groups SET text = '' WHERE id = ?`,
				`UPDATE deliveries SET last_reply = '' WHERE group_id = ?`,
				`UPDATE replies SET text = '', media = '[]' WHERE group_id = ?`,
			); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM snapshots WHERE key = ?`, id); err != nil {
			return err
		}
		// Outbound webhook events still kept for the group hold its
		// numbers and texts as they were: they go with this rewrite.
		if err := execEach(ctx, tx, id, dropOutbox...); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO retention_marks (group_id, stage, applied_at) VALUES (?, ?, ?)`,
			id, string(stage), store.Nanos(d.c.Now()))
		return err
	})
	if err != nil {
		return d.errorf("rewrite group %q: %w", id, err)
	}
	return nil
}

// dropOutbox deletes a group's outbound webhook events (pending or kept
// for recovery) and their deliveries; attempts keep no payload.
var dropOutbox = []string{
	`DELETE FROM webhook_deliveries WHERE outbox_id IN (SELECT id FROM webhook_outbox WHERE group_id = ?)`,
	`DELETE FROM webhook_outbox WHERE group_id = ?`,
}

// execEach runs each statement with the single argument arg.
func execEach(ctx context.Context, tx Querier, arg any, stmts ...string) error {
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q, arg); err != nil {
			return err
		}
	}
	return nil
}

// rewriteNumbers maps every phone number kept for the group. Deliveries
// are keyed by (group_id, number), so they are rewritten row by row; a
// mapping that collides fails the transaction rather than merging rows.
func rewriteNumbers(ctx context.Context, tx Querier, id string, fn func(string) string) error {
	var from string
	if err := tx.QueryRow(ctx, `SELECT from_number FROM groups WHERE id = ?`, id).Scan(&from); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE groups SET from_number = ? WHERE id = ?`, fn(from), id); err != nil {
		return err
	}
	numbers, err := queryAll(ctx, tx, scanString, `SELECT number FROM deliveries WHERE group_id = ?`, id)
	if err != nil {
		return err
	}
	for _, n := range numbers {
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET number = ? WHERE group_id = ? AND number = ?`,
			fn(n), id, n); err != nil {
			return err
		}
	}
	rs, err := replyNumbers(ctx, tx, `SELECT id, number, to_number FROM replies WHERE group_id = ?`, id)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if _, err := tx.Exec(ctx, `UPDATE replies SET number = ?, to_number = ? WHERE id = ?`,
			fn(r.from), fn(r.to), r.id); err != nil {
			return err
		}
	}
	return nil
}

// replyNumber is a reply's row id and the two numbers it keeps.
type replyNumber struct {
	id       int64
	from, to string
}

// replyNumbers reads (id, number, to_number) rows.
func replyNumbers(ctx context.Context, tx Querier, q string, args ...any) ([]replyNumber, error) {
	return queryAll(ctx, tx, func(r Rows) (replyNumber, error) {
		var rn replyNumber
		err := r.Scan(&rn.id, &rn.from, &rn.to)
		return rn, err
	}, q, args...)
}

// DeleteGroup removes everything keyed to the group: journal, snapshot,
// reminders, group row, deliveries, replies, routes whose value is the
// group, idempotency keys, retention marks and outbound webhook events. Missing is not an error.
func (d DB) DeleteGroup(ctx context.Context, id string) error {
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		if err := execEach(ctx, tx, id, dropOutbox...); err != nil {
			return err
		}
		return execEach(ctx, tx, id,
			`DELETE FROM journal WHERE key = ?`,
			`DELETE FROM snapshots WHERE key = ?`,
			`DELETE FROM reminders WHERE key = ?`,
			`DELETE FROM deliveries WHERE group_id = ?`,
			`DELETE FROM replies WHERE group_id = ?`,
			`DELETE FROM routes WHERE value = ?`,
			`DELETE FROM idempotency_keys WHERE group_id = ?`,
			`DELETE FROM retention_marks WHERE group_id = ?`,
			`DELETE FROM groups WHERE id = ?`,
		)
	})
	if err != nil {
		return d.errorf("delete group %q: %w", id, err)
	}
	return nil
}

// TrimJournal deletes key's events with seq < beforeSeq recorded before t.
func (d DB) TrimJournal(ctx context.Context, key string, beforeSeq uint64, before time.Time) (int, error) {
	n, err := d.c.Write.Exec(ctx, `DELETE FROM journal WHERE key = ? AND seq < ? AND time < ?`,
		key, int64(beforeSeq), store.Nanos(before))
	if err != nil {
		return 0, d.errorf("trim journal: %w", err)
	}
	return int(n), nil
}

// DeleteUnmatchedReplies deletes the unmatched replies received before t.
func (d DB) DeleteUnmatchedReplies(ctx context.Context, before time.Time) (int, error) {
	n, err := d.c.Write.Exec(ctx, `DELETE FROM replies WHERE group_id = '' AND received_at < ?`, store.Nanos(before))
	if err != nil {
		return 0, d.errorf("delete unmatched replies: %w", err)
	}
	return int(n), nil
}

// RedactUnmatchedReplies empties the text and media of unmatched replies
// received before t and maps their numbers; each row is processed once.
func (d DB) RedactUnmatchedReplies(ctx context.Context, before time.Time, number func(string) string) (int, error) {
	changed := 0
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		rs, err := replyNumbers(ctx, tx, `SELECT id, number, to_number FROM replies
			WHERE group_id = '' AND redacted = 0 AND received_at < ?`, store.Nanos(before))
		if err != nil {
			return err
		}
		for _, r := range rs {
			from, to := r.from, r.to
			if number != nil {
				from, to = number(from), number(to)
			}
			if _, err := tx.Exec(ctx, `UPDATE replies SET text = '', media = '[]', number = ?, to_number = ?,
				redacted = 1 WHERE id = ?`, from, to, r.id); err != nil {
				return err
			}
		}
		changed = len(rs)
		return nil
	})
	if err != nil {
		return 0, d.errorf("redact unmatched replies: %w", err)
	}
	return changed, nil
}
