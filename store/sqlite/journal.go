package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// stmts are the writer's prepared statements for the hot write paths.
type stmts struct {
	fence, headSeq, delReminder             *sql.Stmt
	upGroup, ackInbox, suppress, unsuppress *sql.Stmt
	insReply, idemExists, insIdem, insInbox *sql.Stmt
	insSeen, hasInbox                       *sql.Stmt // the replay record (IngestInbox)
	isSuppressed                            *sql.Stmt
	insAudit, insConsent                    *sql.Stmt
	savepoint, release, rollbackTo          *sql.Stmt
	// Multi-row forms of the writes a commit makes many of.
	insEvents, setReminders, upDeliveries, putRoutes *rowsStmt
	insOutbox                                        *rowsStmt // docs/design.md §13
	all                                              []*sql.Stmt
}

const (
	// Acknowledging keeps the first processing time, so a replayed ack
	// does not move the entry's purge horizon, and drops the payload:
	// nothing reads a processed entry's events again (the journal holds
	// what they changed), and the numbers and texts in it would otherwise
	// outlive retention's redaction until the inbox purge.
	sqlAckInbox = `UPDATE inbox SET processed_at = CASE WHEN processed_at = 0 THEN ? ELSE processed_at END,
		target = CASE WHEN ? <> '' THEN ? ELSE target END, payload = X'' WHERE provider = ? AND event_id = ?`
	sqlSuppress = `INSERT INTO suppressions (number, reason, created_at) VALUES (?, ?, ?)
		ON CONFLICT (number) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at
		WHERE ` + sqlq.SuppressionReplaceable
	// sqlUnsuppress is a START: it lifts only what STOP or a provider
	// opt-out created.
	sqlUnsuppress = `DELETE FROM suppressions WHERE number = ? AND ` + sqlq.LiftedByStart
	sqlInsReply   = `INSERT INTO replies (provider, event_id, group_id, number, to_number, text, media, received_at, possible_opt_out, ambiguous)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, event_id, number) DO NOTHING`
	sqlInsInbox = `INSERT INTO inbox (provider, event_id, message_id, payload, received_at, target, processed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (provider, event_id) DO NOTHING`
)

func (st *stmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&st.fence, `SELECT epoch FROM shard_leases WHERE shard = ? AND ` + sqlq.LeaseLive("sqlite", "")},
		{&st.headSeq, `SELECT COALESCE(MAX(seq), 0) FROM journal WHERE key = ?`},
		{&st.delReminder, `DELETE FROM reminders WHERE key = ? AND name = ?`},
		{&st.upGroup, sqlq.UpsertGroup},
		{&st.ackInbox, sqlAckInbox},
		{&st.suppress, sqlSuppress},
		{&st.unsuppress, sqlUnsuppress},
		{&st.isSuppressed, `SELECT COUNT(*) FROM suppressions WHERE number = ?`},
		{&st.insReply, sqlInsReply},
		{&st.idemExists, `SELECT COUNT(*) FROM idempotency_keys WHERE key = ?`},
		{&st.insIdem, `INSERT INTO idempotency_keys (key, request_hash, group_id, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (key) DO NOTHING`},
		{&st.insInbox, sqlInsInbox},
		{&st.insSeen, `INSERT INTO webhook_seen (id_hash, seen_at) VALUES (?, ?) ON CONFLICT (id_hash) DO NOTHING`},
		{&st.hasInbox, `SELECT COUNT(*) FROM inbox WHERE provider = ? AND event_id = ?`},
		{&st.insAudit, sqlq.InsertAudit},
		{&st.insConsent, sqlq.InsertConsent},
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
	st.insEvents = newRowsStmt(`INSERT INTO journal (key, seq, type, data, time, epoch, node) VALUES `, `(?, ?, ?, ?, ?, ?, ?)`, ``)
	st.setReminders = newRowsStmt(`INSERT INTO reminders (key, name, due) VALUES `, `(?, ?, ?)`,
		` ON CONFLICT (key, name) DO UPDATE SET due = excluded.due`)
	st.upDeliveries = newRowsStmt(sqlq.InsertDeliveries+`VALUES `, `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sqlq.OnDeliveryConflict).withBulk()
	st.putRoutes = newRowsStmt(`INSERT INTO routes (key, value, expires_at) VALUES `, `(?, ?, ?)`,
		` ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`)
	st.insOutbox = newRowsStmt(`INSERT INTO webhook_outbox (msg_id, type, group_id, seq, endpoint_id, payload, created_at) VALUES `,
		`(?, ?, ?, ?, ?, ?, ?)`, ` ON CONFLICT (msg_id) DO NOTHING`)
	for _, r := range []*rowsStmt{st.insEvents, st.setReminders, st.upDeliveries, st.putRoutes, st.insOutbox} {
		if err := r.prepare(ctx, db, &st.all); err != nil {
			return err
		}
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
	own   map[string]*sql.Stmt // prepared inside the transaction (closed with it)
}

// prepared returns the statement q prepared inside the transaction, once.
func (t *txStmts) prepared(q string) (*sql.Stmt, error) {
	if s, ok := t.own[q]; ok {
		return s, nil
	}
	s, err := t.tx.PrepareContext(t.ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare: %w", err)
	}
	if t.own == nil {
		t.own = map[string]*sql.Stmt{}
	}
	t.own[q] = s
	return s, nil
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

// commitUnits applies units inside the round's transaction. checked holds
// the round's lease checks: each shard's epoch as checked, 0 when fenced.
func (s *Store) commitUnits(ts *txStmts, units []actor.Unit, checked map[int]uint64, now time.Time) ([]error, error) {
	ctx := ts.ctx
	results := make([]error, len(units))
	for i := range units {
		u := &units[i]
		effs, uerr := sqlq.UnitEffects(u)
		if uerr != nil {
			results[i] = uerr
			continue
		}
		shard := store.ShardOf(u.Key)
		epoch, ok := checked[shard]
		if !ok {
			var stored uint64
			err := ts.get(s.st.fence).QueryRowContext(ctx, shard).Scan(&stored)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("sqlite: commit: check lease: %w", err)
			}
			if mine := s.epochs.Of(shard); err == nil && mine != 0 && stored == mine {
				epoch = mine
			}
			checked[shard] = epoch
		}
		if epoch == 0 {
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
		uerr, err = s.applyUnit(ts, u, effs, epoch, now)
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
	// Claims: the writer holds the database's write lock, so no
	// suppression can commit between this read and the unit's commit.
	for _, e := range effs {
		for _, number := range e.Claim {
			var n int
			if err := ts.get(s.st.isSuppressed).QueryRowContext(ts.ctx, number).Scan(&n); err != nil {
				return nil, fmt.Errorf("sqlite: commit: read suppressions: %w", err)
			}
			if n > 0 {
				return fmt.Errorf("claim: %w", store.ErrSuppressed), nil
			}
		}
	}
	return nil, nil
}

// A new recipient's delivery row has only its group, number, name,
// status and update time set. A group's creation writes 100,000 of them,
// so runs of leanBulk such rows go through sqlLeanDeliveries, which
// writes the other thirteen columns as literals: 5 values bound per row
// instead of 18 (binding, the driver's conversions and the C copy of
// each string are most of a row's cost outside the B-trees). The
// statement is prepared inside the transaction that uses it, as the bulk
// statements are.
const leanBulk = rowsBulk

var sqlLeanDeliveries = sqlq.InsertDeliveries + `VALUES ` + strings.TrimSuffix(strings.Repeat(
	`(?, ?, ?, ?, 0, '', '', '', 0, 0, 0, 0, 0, '', '', ?, '', ''), `, leanBulk), ", ") + sqlq.OnDeliveryConflict

// leanDelivery reports whether d's columns other than group, number, name,
// status and update time hold what sqlLeanDeliveries writes for them.
func leanDelivery(d *store.DeliveryRow) bool {
	return d.Attempts == 0 && d.ProviderMessageID == "" && d.ErrorCode == "" && d.ErrorClass == "" &&
		d.ClaimedAt.IsZero() && d.SentAt.IsZero() && d.DeliveredAt.IsZero() && d.FailedAt.IsZero() &&
		d.RepliedAt.IsZero() && d.Ack == "" && d.LastReply == "" && d.Response == "" && d.Code == ""
}

// deliveryArgs is how many statement arguments writeDeliveries needs at
// most at once for ds.
func deliveryArgs(ds []store.DeliveryRow) int {
	if len(ds) >= leanBulk {
		return 18 * rowsBulk // upDeliveries.exec takes one bulk statement at a time anyway
	}
	return 18 * len(ds)
}

// writeDeliveries upserts ds in their order (a row may appear twice in a
// unit: the last one wins), in runs: leanBulk lean rows at a time through
// sqlLeanDeliveries, everything else through upDeliveries. It returns
// args, the argument slice it reused.
func (s *Store) writeDeliveries(ts *txStmts, ds []store.DeliveryRow, args []any) ([]any, error) {
	// Rows of one commit mostly share their group, status and update
	// time: each is boxed once per run of equal values, not per row.
	var gid, status, updated reboxer
	for i := 0; i < len(ds); {
		lean := i
		for lean < len(ds) && leanDelivery(&ds[lean]) {
			lean++
		}
		for ; lean-i >= leanBulk; i += leanBulk {
			args = args[:0]
			for k := i; k < i+leanBulk; k++ {
				d := &ds[k]
				args = append(args, gid.string(d.GroupID), d.Number, d.Name, status.string(string(d.Status)),
					updated.int64(store.Nanos(d.UpdatedAt)))
			}
			st, err := ts.prepared(sqlLeanDeliveries)
			if err != nil {
				return args, err
			}
			if _, err := st.ExecContext(ts.ctx, args...); err != nil {
				return args, err
			}
		}
		// The lean run's rest and the rows up to the next long lean run.
		end := lean
		for end < len(ds) {
			next := end
			for next < len(ds) && leanDelivery(&ds[next]) {
				next++
			}
			if next-end >= leanBulk {
				break
			}
			end = max(next, end+1)
		}
		for lo := i; lo < end; lo += rowsBulk {
			args = args[:0]
			for k := lo; k < min(lo+rowsBulk, end); k++ {
				d := &ds[k]
				args = append(args, gid.string(d.GroupID), d.Number, d.Name, status.string(string(d.Status)), d.Attempts,
					d.ProviderMessageID, d.ErrorCode, string(d.ErrorClass), store.Nanos(d.ClaimedAt), store.Nanos(d.SentAt),
					store.Nanos(d.DeliveredAt), store.Nanos(d.FailedAt), store.Nanos(d.RepliedAt), string(d.Ack),
					d.LastReply, updated.int64(store.Nanos(d.UpdatedAt)), d.Response, d.Code)
			}
			if err := s.st.upDeliveries.exec(ts, args); err != nil {
				return args, err
			}
		}
		i = end
	}
	return args, nil
}

// reboxer boxes a column's value for a statement argument, reusing the
// last box while the value repeats (boxing a string or a large integer
// allocates).
type reboxer struct {
	box any
	s   string
	n   int64
}

func (r *reboxer) string(s string) any {
	if r.box == nil || s != r.s {
		r.box, r.s = s, s
	}
	return r.box
}

func (r *reboxer) int64(n int64) any {
	if r.box == nil || n != r.n {
		r.box, r.n = n, n
	}
	return r.box
}

// appendRecords appends a unit effect's audit and consent entries.
func (s *Store) appendRecords(ts *txStmts, e *store.Effects, now time.Time) error {
	for k := range e.Audit {
		if _, err := ts.exec(s.st.insAudit, sqlq.AuditArgs(&e.Audit[k], now)...); err != nil {
			return fmt.Errorf("sqlite: commit: audit: %w", err)
		}
	}
	for k := range e.Consent {
		if _, err := ts.exec(s.st.insConsent, sqlq.ConsentArgs(&e.Consent[k], now)...); err != nil {
			return fmt.Errorf("sqlite: commit: consent: %w", err)
		}
	}
	return nil
}

// applyUnit writes one checked unit; epoch is its shard's lease epoch as
// the commit checked it.
func (s *Store) applyUnit(ts *txStmts, u *actor.Unit, effs []*store.Effects, epoch uint64, now time.Time) (uerr, err error) {
	// One argument slice serves every multi-row write: sized once for
	// the largest (a 100,000-recipient creation's delivery values would
	// otherwise grow it by doubling, copying it 20 times).
	need := max(7*len(u.Events), 3*len(u.Reminders))
	for _, e := range effs {
		need = max(need, deliveryArgs(e.Deliveries), 3*len(e.Routes), 7*len(e.Outbox))
	}
	args := make([]any, 0, need)
	if args, err = s.writeEvents(ts, u, epoch, now, args); err != nil {
		return nil, err
	}
	if args, err = s.writeReminders(ts, u, args); err != nil {
		return nil, err
	}
	for _, e := range effs {
		if args, uerr, err = s.applyEffects(ts, e, now, args); uerr != nil || err != nil {
			return uerr, err
		}
	}
	return nil, nil
}

// commitErr says which write of a commit failed.
func commitErr(what string, err error) error { return fmt.Errorf("sqlite: commit: %s: %w", what, err) }

// writeEvents appends u's events. Every event records the epoch checked by
// this commit (not what this instance holds now: a release may have
// changed that since) and the node that wrote it (docs/design.md §9). It
// returns args (the shared argument slice) for reuse.
func (s *Store) writeEvents(ts *txStmts, u *actor.Unit, epoch uint64, now time.Time, args []any) ([]any, error) {
	args = args[:0]
	for j, ev := range u.Events {
		t := ev.Time
		if t.IsZero() {
			t = now
		}
		data := ev.Data
		if data == nil {
			data = []byte{}
		}
		args = append(args, u.Key, int64(u.ExpectSeq+uint64(j)+1), ev.Type, data, store.Nanos(t), int64(epoch), s.cfg.Owner)
	}
	if err := s.st.insEvents.exec(ts, args); err != nil {
		return args, commitErr("append", err)
	}
	return args, nil
}

// writeReminders applies u's reminder changes in their order: consecutive
// sets go together, a delete flushes the sets before it.
func (s *Store) writeReminders(ts *txStmts, u *actor.Unit, args []any) ([]any, error) {
	args = args[:0]
	for _, r := range u.Reminders {
		if !r.Delete {
			args = append(args, u.Key, r.Name, store.Nanos(r.Due))
			continue
		}
		if err := s.st.setReminders.exec(ts, args); err != nil {
			return args, commitErr("reminder", err)
		}
		args = args[:0]
		if _, err := ts.exec(s.st.delReminder, u.Key, r.Name); err != nil {
			return args, commitErr("reminder", err)
		}
	}
	if err := s.st.setReminders.exec(ts, args); err != nil {
		return args, commitErr("reminder", err)
	}
	return args, nil
}

// applyEffects writes one Effects of a unit; uerr fails the unit alone
// (an idempotency key the unit carries twice).
func (s *Store) applyEffects(ts *txStmts, e *store.Effects, now time.Time, args []any) (_ []any, uerr, err error) {
	if g := e.Group; g != nil {
		gargs, err := sqlq.GroupArgs(g)
		if err != nil {
			return args, nil, commitErr("group", err)
		}
		if _, err := ts.exec(s.st.upGroup, gargs...); err != nil {
			return args, nil, commitErr("group", err)
		}
	}
	if args, err = s.writeDeliveries(ts, e.Deliveries, args); err != nil {
		return args, nil, commitErr("delivery", err)
	}
	for _, ref := range e.InboxDone {
		if _, err := ts.exec(s.st.ackInbox, store.Nanos(now), ref.Target, ref.Target, ref.Provider, ref.EventID); err != nil {
			return args, nil, commitErr("inbox ack", err)
		}
	}
	args = args[:0]
	for _, r := range e.Routes {
		args = append(args, r.Key, r.Value, store.Nanos(r.ExpiresAt))
	}
	if err := s.st.putRoutes.exec(ts, args); err != nil {
		return args, nil, commitErr("route", err)
	}
	for _, sp := range e.Suppress {
		if _, err := ts.exec(s.st.suppress, sp.Number, sp.Reason, store.Nanos(sqlq.OrNow(sp.CreatedAt, now))); err != nil {
			return args, nil, commitErr("suppress", err)
		}
	}
	for _, n := range e.Unsuppress {
		if _, err := ts.exec(s.st.unsuppress, n); err != nil {
			return args, nil, commitErr("unsuppress", err)
		}
	}
	if err := s.writeReplies(ts, e.Replies, now); err != nil {
		return args, nil, err
	}
	args = args[:0]
	for k := range e.Outbox {
		args = append(args, sqlq.OutboxArgs(&e.Outbox[k], now)...)
	}
	if err := s.st.insOutbox.exec(ts, args); err != nil {
		return args, nil, commitErr("outbox", err)
	}
	if ik := e.Idempotency; ik != nil {
		res, err := ts.exec(s.st.insIdem, ik.Key, ik.RequestHash, ik.GroupID, store.Nanos(sqlq.OrNow(ik.CreatedAt, now)))
		if err != nil {
			return args, nil, commitErr("idempotency", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return args, nil, commitErr("idempotency", err)
		} else if n == 0 {
			// Two effects of this very unit carried the same key.
			return args, fmt.Errorf("key %q: %w", ik.Key, store.ErrIdempotencyConflict), nil
		}
	}
	return args, nil, s.appendRecords(ts, e, now)
}

// writeReplies inserts the replies of one Effects.
func (s *Store) writeReplies(ts *txStmts, replies []store.Reply, now time.Time) error {
	for k := range replies {
		r := &replies[k]
		media, err := json.Marshal(sqlq.NonNilStrings(r.Media))
		if err != nil {
			return commitErr("reply media", err)
		}
		if _, err := ts.exec(s.st.insReply, r.Provider, r.EventID, r.GroupID, r.Number, r.To, r.Text,
			string(media), store.Nanos(sqlq.OrNow(r.ReceivedAt, now)), sqlq.Flag(r.PossibleOptOut), sqlq.Flag(r.Ambiguous)); err != nil {
			return commitErr("reply", err)
		}
	}
	return nil
}

// ---- reminders ----

// Load, the snapshot methods and DueReminders are shared: see sqlq.DB.

// SetReminder creates or moves the reminder (Key, Name).
func (s *Store) SetReminder(ctx context.Context, r actor.Reminder) error {
	if _, err := s.st.setReminders.byN[1].ExecContext(ctx, r.Key, r.Name, store.Nanos(r.Due)); err != nil {
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
