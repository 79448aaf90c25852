package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// stmts are the writer's prepared statements for the hot write paths.
type stmts struct {
	fence, headSeq, insEvent, setReminder, delReminder            *sql.Stmt
	upGroup, upDelivery, ackInbox, putRoute, suppress, unsuppress *sql.Stmt
	insReply, idemExists, insIdem, insInbox                       *sql.Stmt
	savepoint, release, rollbackTo                                *sql.Stmt
	all                                                           []*sql.Stmt
}

const (
	sqlUpGroup = `INSERT INTO groups (id, status, from_number, mode, text, pause_reason, created_at, updated_at, counts, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, from_number = excluded.from_number,
		mode = excluded.mode, text = excluded.text, pause_reason = excluded.pause_reason,
		created_at = excluded.created_at, updated_at = excluded.updated_at, counts = excluded.counts, seq = excluded.seq`
	sqlUpDelivery = `INSERT INTO deliveries (group_id, number, name, status, attempts, provider_message_id, error_code,
		error_class, claimed_at, sent_at, delivered_at, failed_at, replied_at, ack, last_reply, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (group_id, number) DO UPDATE SET name = excluded.name, status = excluded.status,
		attempts = excluded.attempts, provider_message_id = excluded.provider_message_id,
		error_code = excluded.error_code, error_class = excluded.error_class, claimed_at = excluded.claimed_at,
		sent_at = excluded.sent_at, delivered_at = excluded.delivered_at, failed_at = excluded.failed_at,
		replied_at = excluded.replied_at, ack = excluded.ack, last_reply = excluded.last_reply,
		updated_at = excluded.updated_at`
	// Acknowledging keeps the first processing time, so a replayed ack
	// does not move the entry's purge horizon.
	sqlAckInbox = `UPDATE inbox SET processed_at = CASE WHEN processed_at = 0 THEN ? ELSE processed_at END,
		target = CASE WHEN ? <> '' THEN ? ELSE target END WHERE provider = ? AND event_id = ?`
	sqlPutRoute = `INSERT INTO routes (key, value, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`
	sqlSuppress = `INSERT INTO suppressions (number, reason, created_at) VALUES (?, ?, ?)
		ON CONFLICT (number) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at`
	sqlInsReply = `INSERT INTO replies (provider, event_id, group_id, number, to_number, text, media, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, event_id, number) DO NOTHING`
	sqlInsInbox = `INSERT INTO inbox (provider, event_id, message_id, payload, received_at, target, processed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, event_id) DO NOTHING`
)

func (st *stmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&st.fence, `SELECT epoch FROM shard_leases WHERE shard = ?`},
		{&st.headSeq, `SELECT COALESCE(MAX(seq), 0) FROM journal WHERE key = ?`},
		{&st.insEvent, `INSERT INTO journal (key, seq, type, data, time) VALUES (?, ?, ?, ?, ?)`},
		{&st.setReminder, `INSERT INTO reminders (key, name, due) VALUES (?, ?, ?)
			ON CONFLICT (key, name) DO UPDATE SET due = excluded.due`},
		{&st.delReminder, `DELETE FROM reminders WHERE key = ? AND name = ?`},
		{&st.upGroup, sqlUpGroup},
		{&st.upDelivery, sqlUpDelivery},
		{&st.ackInbox, sqlAckInbox},
		{&st.putRoute, sqlPutRoute},
		{&st.suppress, sqlSuppress},
		{&st.unsuppress, `DELETE FROM suppressions WHERE number = ?`},
		{&st.insReply, sqlInsReply},
		{&st.idemExists, `SELECT COUNT(*) FROM idempotency_keys WHERE key = ?`},
		{&st.insIdem, `INSERT INTO idempotency_keys (key, request_hash, group_id, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (key) DO NOTHING`},
		{&st.insInbox, sqlInsInbox},
		{&st.savepoint, `SAVEPOINT unit`},
		{&st.release, `RELEASE SAVEPOINT unit`},
		{&st.rollbackTo, `ROLLBACK TO SAVEPOINT unit`},
	} {
		s, err := db.PrepareContext(ctx, p.q)
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		*p.dst = s
		st.all = append(st.all, s)
	}
	return nil
}

func (st *stmts) close() error {
	var errs []error
	for _, s := range st.all {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// txStmts binds the writer's prepared statements to one transaction,
// once each.
type txStmts struct {
	ctx   context.Context
	tx    *sql.Tx
	bound map[*sql.Stmt]*sql.Stmt
}

func (t *txStmts) get(s *sql.Stmt) *sql.Stmt {
	if b, ok := t.bound[s]; ok {
		return b
	}
	b := t.tx.StmtContext(t.ctx, s)
	t.bound[s] = b
	return b
}

func (t *txStmts) exec(s *sql.Stmt, args ...any) (sql.Result, error) {
	return t.get(s).ExecContext(t.ctx, args...)
}

// Commit applies every unit in one transaction; each unit runs in its own
// savepoint so that a unit that fails (sequence conflict, fenced,
// idempotency clash, unknown effect) leaves no trace and the others
// commit. Units may target the same key in sequence. Concurrent Commit and
// InsertInbox calls share one transaction (see writeGroup).
func (s *Store) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	if len(units) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: commit: %w", err)
	}
	req := &writeReq{units: units}
	s.write(ctx, req)
	if req.err != nil {
		return nil, req.err
	}
	return req.results, nil
}

// commitUnits applies units inside the round's transaction.
func (s *Store) commitUnits(ts *txStmts, units []actor.Unit, fenced map[int]bool, now time.Time) ([]error, error) {
	ctx := ts.ctx
	results := make([]error, len(units))
	for i := range units {
		u := &units[i]
		effs, uerr := unitEffects(u)
		if uerr != nil {
			results[i] = uerr
			continue
		}
		shard := store.ShardOf(u.Key)
		f, checked := fenced[shard]
		if !checked {
			var epoch uint64
			err := ts.get(s.st.fence).QueryRowContext(ctx, shard).Scan(&epoch)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("sqlite: commit: check lease: %w", err)
			}
			mine := s.epochOf(shard)
			f = err != nil || mine == 0 || epoch != mine
			fenced[shard] = f
		}
		if f {
			results[i] = actor.ErrFenced
			continue
		}
		uerr, err := s.checkUnit(ts, u, effs)
		if err != nil {
			return nil, err
		}
		if uerr != nil {
			results[i] = uerr
			continue
		}
		if _, err := ts.exec(s.st.savepoint); err != nil {
			return nil, fmt.Errorf("sqlite: commit: savepoint: %w", err)
		}
		uerr, err = s.applyUnit(ts, u, effs, now)
		if err != nil {
			return nil, err
		}
		if uerr != nil {
			results[i] = uerr
			if _, err := ts.exec(s.st.rollbackTo); err != nil {
				return nil, fmt.Errorf("sqlite: commit: rollback unit: %w", err)
			}
		}
		if _, err := ts.exec(s.st.release); err != nil {
			return nil, fmt.Errorf("sqlite: commit: release: %w", err)
		}
	}
	return results, nil
}

// unitEffects resolves a unit's effect values before anything is written.
func unitEffects(u *actor.Unit) ([]*store.Effects, error) {
	var out []*store.Effects
	for _, e := range u.Effects {
		eff, err := store.EffectsOf(e)
		if err != nil {
			return nil, err
		}
		out = append(out, eff)
	}
	return out, nil
}

// checkUnit runs the read-only checks of a unit: expected sequence and
// idempotency keys. It returns the unit's own failure, or err when the
// database failed.
func (s *Store) checkUnit(ts *txStmts, u *actor.Unit, effs []*store.Effects) (uerr, err error) {
	var head uint64
	if err := ts.get(s.st.headSeq).QueryRowContext(ts.ctx, u.Key).Scan(&head); err != nil {
		return nil, fmt.Errorf("sqlite: commit: read head: %w", err)
	}
	if head != u.ExpectSeq {
		return &actor.ConflictError{Key: u.Key, Expected: u.ExpectSeq, Actual: head}, nil
	}
	for _, e := range effs {
		if e.Idempotency == nil {
			continue
		}
		var n int
		if err := ts.get(s.st.idemExists).QueryRowContext(ts.ctx, e.Idempotency.Key).Scan(&n); err != nil {
			return nil, fmt.Errorf("sqlite: commit: read idempotency: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("key %q: %w", e.Idempotency.Key, store.ErrIdempotencyConflict), nil
		}
	}
	return nil, nil
}

// applyUnit writes one checked unit.
func (s *Store) applyUnit(ts *txStmts, u *actor.Unit, effs []*store.Effects, now time.Time) (uerr, err error) {
	wrap := func(what string, err error) error { return fmt.Errorf("sqlite: commit: %s: %w", what, err) }
	for j, ev := range u.Events {
		t := ev.Time
		if t.IsZero() {
			t = now
		}
		data := ev.Data
		if data == nil {
			data = []byte{}
		}
		if _, err := ts.exec(s.st.insEvent, u.Key, u.ExpectSeq+uint64(j)+1, ev.Type, data, store.Nanos(t)); err != nil {
			return nil, wrap("append", err)
		}
	}
	for _, r := range u.Reminders {
		if r.Delete {
			_, err = ts.exec(s.st.delReminder, u.Key, r.Name)
		} else {
			_, err = ts.exec(s.st.setReminder, u.Key, r.Name, store.Nanos(r.Due))
		}
		if err != nil {
			return nil, wrap("reminder", err)
		}
	}
	for _, e := range effs {
		if g := e.Group; g != nil {
			counts, err := json.Marshal(nonNilCounts(g.Counts))
			if err != nil {
				return nil, wrap("group counts", err)
			}
			if _, err := ts.exec(s.st.upGroup, g.ID, string(g.Status), g.From, string(g.Mode), g.Text, g.PauseReason,
				store.Nanos(g.CreatedAt), store.Nanos(g.UpdatedAt), string(counts), g.Seq); err != nil {
				return nil, wrap("group", err)
			}
		}
		for k := range e.Deliveries {
			d := &e.Deliveries[k]
			if _, err := ts.exec(s.st.upDelivery, d.GroupID, d.Number, d.Name, string(d.Status), d.Attempts,
				d.ProviderMessageID, d.ErrorCode, string(d.ErrorClass), store.Nanos(d.ClaimedAt), store.Nanos(d.SentAt),
				store.Nanos(d.DeliveredAt), store.Nanos(d.FailedAt), store.Nanos(d.RepliedAt), string(d.Ack),
				d.LastReply, store.Nanos(d.UpdatedAt)); err != nil {
				return nil, wrap("delivery", err)
			}
		}
		for _, ref := range e.InboxDone {
			if _, err := ts.exec(s.st.ackInbox, store.Nanos(now), ref.Target, ref.Target, ref.Provider, ref.EventID); err != nil {
				return nil, wrap("inbox ack", err)
			}
		}
		for _, r := range e.Routes {
			if _, err := ts.exec(s.st.putRoute, r.Key, r.Value, store.Nanos(r.ExpiresAt)); err != nil {
				return nil, wrap("route", err)
			}
		}
		for _, sp := range e.Suppress {
			if _, err := ts.exec(s.st.suppress, sp.Number, sp.Reason, store.Nanos(orNow(sp.CreatedAt, now))); err != nil {
				return nil, wrap("suppress", err)
			}
		}
		for _, n := range e.Unsuppress {
			if _, err := ts.exec(s.st.unsuppress, n); err != nil {
				return nil, wrap("unsuppress", err)
			}
		}
		for k := range e.Replies {
			r := &e.Replies[k]
			media, err := json.Marshal(nonNilStrings(r.Media))
			if err != nil {
				return nil, wrap("reply media", err)
			}
			if _, err := ts.exec(s.st.insReply, r.Provider, r.EventID, r.GroupID, r.Number, r.To, r.Text,
				string(media), store.Nanos(orNow(r.ReceivedAt, now))); err != nil {
				return nil, wrap("reply", err)
			}
		}
		if ik := e.Idempotency; ik != nil {
			res, err := ts.exec(s.st.insIdem, ik.Key, ik.RequestHash, ik.GroupID, store.Nanos(orNow(ik.CreatedAt, now)))
			if err != nil {
				return nil, wrap("idempotency", err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return nil, wrap("idempotency", err)
			} else if n == 0 {
				// Two effects of this very unit carried the same key.
				return fmt.Errorf("key %q: %w", ik.Key, store.ErrIdempotencyConflict), nil
			}
		}
	}
	return nil, nil
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

func nonNilCounts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Load calls fn for every event of key after afterSeq, in order. Events are
// read in pages so that a slow fn does not pin one read transaction.
func (s *Store) Load(ctx context.Context, key string, afterSeq uint64, fn func(actor.Event) error) error {
	const page = 1000
	for {
		evs, err := s.loadPage(ctx, key, afterSeq, page)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
			afterSeq = e.Seq
		}
		if len(evs) < page {
			return nil
		}
	}
}

func (s *Store) loadPage(ctx context.Context, key string, afterSeq uint64, limit int) ([]actor.Event, error) {
	rows, err := s.r.QueryContext(ctx,
		`SELECT seq, type, data, time FROM journal WHERE key = ? AND seq > ? ORDER BY seq LIMIT ?`, key, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: load %q: %w", key, err)
	}
	defer rows.Close()
	var out []actor.Event
	for rows.Next() {
		var e actor.Event
		var t int64
		if err := rows.Scan(&e.Seq, &e.Type, &e.Data, &t); err != nil {
			return nil, fmt.Errorf("sqlite: load %q: %w", key, err)
		}
		e.Time = store.FromNanos(t)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: load %q: %w", key, err)
	}
	return out, nil
}

// ---- snapshots ----

// SaveSnapshot replaces key's snapshot, with its checksum, atomically.
func (s *Store) SaveSnapshot(ctx context.Context, sn actor.Snapshot) error {
	state := sn.State
	if state == nil {
		state = []byte{}
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO snapshots (key, seq, state, checksum, time) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, state = excluded.state,
		checksum = excluded.checksum, time = excluded.time`,
		sn.Key, sn.Seq, state, store.SnapshotChecksum(sn.Key, sn.Seq, state), store.Nanos(orNow(sn.Time, s.now())))
	if err != nil {
		return fmt.Errorf("sqlite: save snapshot %q: %w", sn.Key, err)
	}
	return nil
}

// LoadSnapshot returns key's snapshot, actor.ErrNotFound, or
// actor.ErrCorruptSnapshot when its bytes do not match the checksum.
func (s *Store) LoadSnapshot(ctx context.Context, key string) (actor.Snapshot, error) {
	sn := actor.Snapshot{Key: key}
	var sum []byte
	var t int64
	err := s.r.QueryRowContext(ctx, `SELECT seq, state, checksum, time FROM snapshots WHERE key = ?`, key).
		Scan(&sn.Seq, &sn.State, &sum, &t)
	if err != nil {
		return actor.Snapshot{}, fmt.Errorf("sqlite: load snapshot %q: %w", key, notFound(err))
	}
	if string(sum) != string(store.SnapshotChecksum(key, sn.Seq, sn.State)) {
		return actor.Snapshot{}, fmt.Errorf("sqlite: load snapshot %q: %w", key, actor.ErrCorruptSnapshot)
	}
	sn.Time = store.FromNanos(t)
	return sn, nil
}

// DeleteSnapshot removes key's snapshot; a missing one is not an error.
func (s *Store) DeleteSnapshot(ctx context.Context, key string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM snapshots WHERE key = ?`, key); err != nil {
		return fmt.Errorf("sqlite: delete snapshot %q: %w", key, err)
	}
	return nil
}

// ---- reminders ----

// SetReminder creates or moves the reminder (Key, Name).
func (s *Store) SetReminder(ctx context.Context, r actor.Reminder) error {
	if _, err := s.st.setReminder.ExecContext(ctx, r.Key, r.Name, store.Nanos(r.Due)); err != nil {
		return fmt.Errorf("sqlite: set reminder: %w", err)
	}
	return nil
}

// DeleteReminder removes a reminder; a missing one is not an error.
func (s *Store) DeleteReminder(ctx context.Context, key, name string) error {
	if _, err := s.st.delReminder.ExecContext(ctx, key, name); err != nil {
		return fmt.Errorf("sqlite: delete reminder: %w", err)
	}
	return nil
}

// DueReminders returns up to limit reminders due at or before before,
// earliest first.
func (s *Store) DueReminders(ctx context.Context, before time.Time, limit int) ([]actor.Reminder, error) {
	limit = store.ClampLimit(limit, 1000, 100000)
	rows, err := s.r.QueryContext(ctx,
		`SELECT key, name, due FROM reminders WHERE due <= ? ORDER BY due, key, name LIMIT ?`, store.Nanos(before), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: due reminders: %w", err)
	}
	defer rows.Close()
	var out []actor.Reminder
	for rows.Next() {
		var r actor.Reminder
		var due int64
		if err := rows.Scan(&r.Key, &r.Name, &due); err != nil {
			return nil, fmt.Errorf("sqlite: due reminders: %w", err)
		}
		r.Due = store.FromNanos(due)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: due reminders: %w", err)
	}
	return out, nil
}
