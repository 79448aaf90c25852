package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/store"
)

// RetentionCandidates returns up to limit ids of groups created before t
// that have not had stage applied (stage "": every group created before
// t), oldest first.
func (s *Store) RetentionCandidates(ctx context.Context, stage store.RetentionStage, before time.Time, limit int) ([]string, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	q := `SELECT id FROM groups WHERE created_at < ? ORDER BY created_at, id LIMIT ?`
	args := []any{store.Nanos(before), limit}
	if stage != "" {
		q = `SELECT id FROM groups g WHERE created_at < ? AND NOT EXISTS
			(SELECT 1 FROM retention_marks m WHERE m.group_id = g.id AND m.stage = ?)
			ORDER BY created_at, id LIMIT ?`
		args = []any{store.Nanos(before), string(stage), limit}
	}
	rows, err := query(ctx, s.pool, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: retention candidates: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("postgres: retention candidates: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: retention candidates: %w", err)
	}
	return out, nil
}

// RewriteGroup applies rw to the group's journal, group row, deliveries and
// replies in one transaction, deletes its snapshot and marks stage applied.
// A group that already has the mark is left alone, so a rewrite (which is
// not idempotent itself: hashing a hash changes it) runs at most once.
func (s *Store) RewriteGroup(ctx context.Context, id string, stage store.RetentionStage, rw store.Rewriter) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		var n int
		if err := queryRow(ctx, tx, `SELECT COUNT(*) FROM groups WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if err := queryRow(ctx, tx, `SELECT COUNT(*) FROM retention_marks WHERE group_id = ? AND stage = ?`,
			id, string(stage)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if rw.Event != nil {
			if err := rewriteJournal(ctx, tx, id, rw.Event); err != nil {
				return err
			}
		}
		if rw.Number != nil {
			if err := rewriteNumbers(ctx, tx, id, rw.Number); err != nil {
				return err
			}
		}
		if rw.RedactText {
			for _, q := range []string{
				`UPDATE groups SET text = '' WHERE id = ?`,
				`UPDATE deliveries SET last_reply = '' WHERE group_id = ?`,
				`UPDATE replies SET text = '', media = '[]' WHERE group_id = ?`,
			} {
				if _, err := exec(ctx, tx, q, id); err != nil {
					return err
				}
			}
		}
		if _, err := exec(ctx, tx, `DELETE FROM snapshots WHERE key = ?`, id); err != nil {
			return err
		}
		_, err := exec(ctx, tx, `INSERT INTO retention_marks (group_id, stage, applied_at) VALUES (?, ?, ?)`,
			id, string(stage), store.Nanos(s.now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: rewrite group %q: %w", id, err)
	}
	return nil
}

func rewriteJournal(ctx context.Context, tx pgx.Tx, id string, fn func(string, []byte) ([]byte, error)) error {
	type ev struct {
		pos  int64
		typ  string
		data []byte
	}
	rows, err := query(ctx, tx, `SELECT pos, type, data FROM journal WHERE key = ? ORDER BY seq`, id)
	if err != nil {
		return err
	}
	var evs []ev
	for rows.Next() {
		var e ev
		if err := rows.Scan(&e.pos, &e.typ, &e.data); err != nil {
			rows.Close()
			return err
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, e := range evs {
		data, err := fn(e.typ, e.data)
		if err != nil {
			return fmt.Errorf("rewrite event %d: %w", e.pos, err)
		}
		if data == nil {
			data = []byte{}
		}
		if _, err := exec(ctx, tx, `UPDATE journal SET data = ? WHERE pos = ?`, data, e.pos); err != nil {
			return err
		}
	}
	return nil
}

// rewriteNumbers maps every phone number kept for the group. Deliveries
// are keyed by (group_id, number), so they are rewritten row by row; a
// mapping that collides fails the transaction rather than merging rows.
func rewriteNumbers(ctx context.Context, tx pgx.Tx, id string, fn func(string) string) error {
	var from string
	if err := queryRow(ctx, tx, `SELECT from_number FROM groups WHERE id = ?`, id).Scan(&from); err != nil {
		return err
	}
	if _, err := exec(ctx, tx, `UPDATE groups SET from_number = ? WHERE id = ?`, fn(from), id); err != nil {
		return err
	}
	numbers, err := queryStrings(ctx, tx, `SELECT number FROM deliveries WHERE group_id = ?`, id)
	if err != nil {
		return err
	}
	for _, n := range numbers {
		if _, err := exec(ctx, tx, `UPDATE deliveries SET number = ? WHERE group_id = ? AND number = ?`,
			fn(n), id, n); err != nil {
			return err
		}
	}
	rows, err := query(ctx, tx, `SELECT id, number, to_number FROM replies WHERE group_id = ?`, id)
	if err != nil {
		return err
	}
	type reply struct {
		id       int64
		from, to string
	}
	var rs []reply
	for rows.Next() {
		var r reply
		if err := rows.Scan(&r.id, &r.from, &r.to); err != nil {
			rows.Close()
			return err
		}
		rs = append(rs, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range rs {
		if _, err := exec(ctx, tx, `UPDATE replies SET number = ?, to_number = ? WHERE id = ?`,
			fn(r.from), fn(r.to), r.id); err != nil {
			return err
		}
	}
	return nil
}

func queryStrings(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]string, error) {
	rows, err := query(ctx, tx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteGroup removes everything keyed to the group: journal, snapshot,
// reminders, group row, deliveries, replies, routes whose value is the
// group, idempotency keys and retention marks. Missing is not an error.
func (s *Store) DeleteGroup(ctx context.Context, id string) error {
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		for _, q := range []string{
			`DELETE FROM journal WHERE key = ?`,
			`DELETE FROM snapshots WHERE key = ?`,
			`DELETE FROM reminders WHERE key = ?`,
			`DELETE FROM deliveries WHERE group_id = ?`,
			`DELETE FROM replies WHERE group_id = ?`,
			`DELETE FROM routes WHERE value = ?`,
			`DELETE FROM idempotency_keys WHERE group_id = ?`,
			`DELETE FROM retention_marks WHERE group_id = ?`,
			`DELETE FROM groups WHERE id = ?`,
		} {
			if _, err := exec(ctx, tx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: delete group %q: %w", id, err)
	}
	return nil
}

// RedactUnmatchedReplies empties the text and media of unmatched replies
// received before t and maps their numbers; each row is processed once.
func (s *Store) RedactUnmatchedReplies(ctx context.Context, before time.Time, number func(string) string) (int, error) {
	changed := 0
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		rows, err := query(ctx, tx, `SELECT id, number, to_number FROM replies
			WHERE group_id = '' AND redacted = 0 AND received_at < ?`, store.Nanos(before))
		if err != nil {
			return err
		}
		type reply struct {
			id       int64
			from, to string
		}
		var rs []reply
		for rows.Next() {
			var r reply
			if err := rows.Scan(&r.id, &r.from, &r.to); err != nil {
				rows.Close()
				return err
			}
			rs = append(rs, r)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range rs {
			from, to := r.from, r.to
			if number != nil {
				from, to = number(from), number(to)
			}
			if _, err := exec(ctx, tx, `UPDATE replies SET text = '', media = '[]', number = ?, to_number = ?,
				redacted = 1 WHERE id = ?`, from, to, r.id); err != nil {
				return err
			}
		}
		changed = len(rs)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: redact unmatched replies: %w", err)
	}
	return changed, nil
}

// writeTx runs fn in one write transaction on the writer connection.
func (s *Store) writeTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit(ctx)
}
