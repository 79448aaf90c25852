package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// Statements of the commit pipeline. Multi-row effects go through unnest so
// that each is one statement whatever its size.
const (
	sqlInsEvents = `INSERT INTO journal (key, seq, type, data, time, epoch, node)
		SELECT $1, u.*, $6::bigint, $7::text FROM unnest($2::bigint[], $3::text[], $4::bytea[], $5::bigint[]) AS u`
	sqlSetReminder = `INSERT INTO reminders (key, name, due) VALUES ($1, $2, $3)
		ON CONFLICT (key, name) DO UPDATE SET due = excluded.due`
	sqlDelReminder  = `DELETE FROM reminders WHERE key = $1 AND name = $2`
	sqlUpDeliveries = sqlq.InsertDeliveries + `
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
			$8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::text[], $15::text[], $16::bigint[], $17::text[], $18::text[])` +
		sqlq.OnDeliveryConflict
	// Acknowledging keeps the first processing time, so a replayed ack
	// does not move the entry's purge horizon, and drops the payload
	// (see the SQLite engine's sqlAckInbox for why).
	sqlAckOne = `UPDATE inbox SET processed_at = CASE WHEN processed_at = 0 THEN $1 ELSE processed_at END,
		target = CASE WHEN $2 <> '' THEN $2 ELSE target END, payload = ''::bytea WHERE provider = $3 AND event_id = $4`
	sqlPutRoutes = `INSERT INTO routes (key, value, expires_at) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at`
	sqlSuppress = `INSERT INTO suppressions (number, reason, created_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
		ON CONFLICT (number) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at
		WHERE ` + sqlq.SuppressionReplaceable
	// sqlUnsuppress is a START: it lifts only what STOP or a provider
	// opt-out created.
	sqlUnsuppress = `DELETE FROM suppressions WHERE number = ANY($1::text[]) AND ` + sqlq.LiftedByStart
	// suppressionLock is the transaction-level advisory lock that orders
	// claims (shared) against suppression writes (exclusive), across
	// nodes: in READ COMMITTED a claim's check that ran before a
	// concurrent suppression committed would otherwise let the claim
	// commit after it. The value is arbitrary ("crewsupp").
	suppressionLock int64 = 0x6372657773757070
	sqlInsReplies         = `INSERT INTO replies (provider, event_id, group_id, number, to_number, text, media, received_at, possible_opt_out, ambiguous)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[])
		ON CONFLICT (provider, event_id, number) DO NOTHING`
	sqlInsIdem = `INSERT INTO idempotency_keys (key, request_hash, group_id, created_at) VALUES ($1, $2, $3, $4)`
)

var sqlUpGroup = sqlq.Rebind(sqlq.UpsertGroup)

// stamp is what every journal event records about who committed it: the
// epoch of its shard's lease that this commit checked (and locked) and the
// node (docs/design.md §9: an audit can prove no stale owner wrote).
type stamp struct {
	node  string
	epoch func(key string) int64
}

// stamp stamps with the epochs the commit's prefetch checked, never with
// what this instance holds when the events are queued: a release, a
// self-fencing or an acquisition may change that between the two, and
// the commit (its lease row locked since the check) is still valid at
// the epoch it checked. T8 once counted events stamped with epoch 0 that
// way as stale writes.
func (s *Store) stamp(checked map[int]int64) stamp {
	return stamp{node: s.cfg.Owner, epoch: func(key string) int64 { return checked[store.ShardOf(key)] }}
}

// leaseLive is the commit's expiry check: a lease with an expiry must not
// have lapsed on the database clock (cluster.go's leases; docs/design.md §9).
var leaseLive = sqlq.LeaseLive("postgres", "l.")

// Constraint names (see migrations) that turn a unique violation into a
// unit's own failure instead of a batch failure.
const (
	constraintJournal     = "journal_key_seq"
	constraintIdempotency = "idempotency_keys_pkey"
)

// commitState is what the batch has made true so far inside the
// transaction: each key's journal head and the idempotency keys in use.
type commitState struct {
	heads map[string]uint64
	idem  map[string]bool
	// suppressed holds the claimed numbers that are suppressed, read under
	// suppressionLock, plus those suppressed by units already planned.
	suppressed map[string]bool
}

func (c commitState) clone() commitState {
	return commitState{heads: maps.Clone(c.heads), idem: maps.Clone(c.idem), suppressed: maps.Clone(c.suppressed)}
}

// claimsSuppressed reports whether a unit claims a number in suppressed.
func claimsSuppressed(effs []*store.Effects, suppressed map[string]bool) bool {
	for _, e := range effs {
		for _, n := range e.Claim {
			if suppressed[n] {
				return true
			}
		}
	}
	return false
}

// addSuppressed records the numbers a unit suppresses. A START in the
// batch is not subtracted: a claim it would allow is refused once, and
// its actor claims again after reloading.
func addSuppressed(effs []*store.Effects, suppressed map[string]bool) {
	for _, e := range effs {
		for _, sp := range e.Suppress {
			suppressed[sp.Number] = true
		}
	}
}

// Commit applies every unit in one transaction. Lease epochs (FOR SHARE),
// journal heads and existing idempotency keys are read first; units that
// pass are sent in one pipelined batch, each inside a savepoint. A unit
// that fails while running is rolled back to its savepoint and the units
// after it are planned and sent again.
func (s *Store) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	if len(units) == 0 {
		return nil, nil
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	results := make([]error, len(units))
	effs := make([][]*store.Effects, len(units))
	var pending []int
	for i := range units {
		e, err := sqlq.UnitEffects(&units[i])
		if err != nil {
			results[i] = err
			continue
		}
		effs[i] = e
		pending = append(pending, i)
	}
	if len(pending) == 0 {
		return results, nil
	}
	now := s.now()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("postgres: commit: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	checked, state, err := s.prefetch(ctx, tx, units, effs, pending)
	if err != nil {
		return nil, err
	}
	if s.afterPrefetch != nil {
		s.afterPrefetch()
	}
	// Fast path: every unit that passed its checks, merged into a few
	// multi-row statements inside one savepoint. Anything that fails in it
	// (a race the prefetch could not see) rolls it back whole and the
	// per-unit path below runs instead.
	if ok, err := s.commitBulk(ctx, tx, units, effs, pending, checked, state, results, now); err != nil {
		return nil, err
	} else if ok {
		if err := tx.Commit(ctx); err != nil {
			return nil, fmt.Errorf("postgres: commit: %w", err)
		}
		return results, nil
	}
	if err := s.commitEach(ctx, tx, units, effs, pending, checked, state, results, now); err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("postgres: commit: %w", err)
	}
	return results, nil
}

// commitEach is Commit's per-unit path: rounds of the units that pass
// planRound, each in its own savepoint in one pipelined batch; the first
// that fails is rolled back to its savepoint, its error recorded
// (unitFailed), and the units after it planned and sent again.
func (s *Store) commitEach(ctx context.Context, tx pgx.Tx, units []actor.Unit, effs [][]*store.Effects, pending []int,
	checked map[int]int64, state commitState, results []error, now time.Time) error {
	for len(pending) > 0 {
		sent := planRound(units, effs, pending, checked, state.clone(), results)
		if len(sent) == 0 {
			return nil
		}
		b := &pgx.Batch{}
		var owner []int // owner[q] is the index in sent of query q's unit
		for k, i := range sent {
			before := b.Len()
			b.Queue(`SAVEPOINT unit`)
			if err := queueUnit(b, &units[i], effs[i], now, s.stamp(checked)); err != nil {
				return err
			}
			b.Queue(`RELEASE SAVEPOINT unit`)
			for range b.Len() - before {
				owner = append(owner, k)
			}
		}
		failed, uerr, err := runBatch(ctx, tx, b, owner)
		if err != nil {
			return err
		}
		// Units before the failed one are in the transaction now.
		upTo := len(sent)
		if failed >= 0 {
			upTo = failed
		}
		for _, i := range sent[:upTo] {
			u := &units[i]
			state.heads[u.Key] = u.ExpectSeq + uint64(len(u.Events))
			for _, e := range effs[i] {
				if e.Idempotency != nil {
					state.idem[e.Idempotency.Key] = true
				}
			}
			addSuppressed(effs[i], state.suppressed)
		}
		if failed < 0 {
			return nil
		}
		fi := sent[failed]
		if results[fi], err = unitFailed(ctx, tx, &units[fi], effs[fi], uerr, state); err != nil {
			return err
		}
		pending = sent[failed+1:]
	}
	return nil
}

// unitFailed rolls the failed unit u back to its savepoint and returns the
// error it ends with, learning what it says into state: the journal's
// head after a conflict (read again), an idempotency key that exists.
func unitFailed(ctx context.Context, tx pgx.Tx, u *actor.Unit, effs []*store.Effects, uerr error, state commitState) (error, error) {
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT unit`); err != nil {
		return nil, fmt.Errorf("postgres: commit: rollback unit: %w", err)
	}
	if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT unit`); err != nil {
		return nil, fmt.Errorf("postgres: commit: release: %w", err)
	}
	switch {
	case errors.Is(uerr, actor.ErrConflict):
		// Another writer moved the head: learn where it is now.
		var head int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM journal WHERE key = $1`, u.Key).Scan(&head); err != nil {
			return nil, fmt.Errorf("postgres: commit: read head: %w", err)
		}
		state.heads[u.Key] = uint64(head)
		uerr = &actor.ConflictError{Key: u.Key, Expected: u.ExpectSeq, Actual: uint64(head)}
	case errors.Is(uerr, store.ErrIdempotencyConflict):
		for _, e := range effs {
			if e.Idempotency != nil {
				state.idem[e.Idempotency.Key] = true
			}
		}
	}
	return uerr, nil
}

// planRound checks pending units in order against plan (a copy of the
// commit state that it advances as units pass): fenced shards (no epoch in
// checked, the shards whose lease the prefetch found live), expected
// sequences, idempotency keys. Failures go to results; the units that pass
// are returned in order.
func planRound(units []actor.Unit, effs [][]*store.Effects, pending []int, checked map[int]int64, plan commitState, results []error) []int {
	var sent []int
	for _, i := range pending {
		u := &units[i]
		if checked[store.ShardOf(u.Key)] == 0 {
			results[i] = actor.ErrFenced
			continue
		}
		if head := plan.heads[u.Key]; head != u.ExpectSeq {
			results[i] = &actor.ConflictError{Key: u.Key, Expected: u.ExpectSeq, Actual: head}
			continue
		}
		if k, clash := idemClash(effs[i], plan.idem); clash {
			results[i] = fmt.Errorf("key %q: %w", k, store.ErrIdempotencyConflict)
			continue
		}
		if claimsSuppressed(effs[i], plan.suppressed) {
			results[i] = fmt.Errorf("claim: %w", store.ErrSuppressed)
			continue
		}
		addSuppressed(effs[i], plan.suppressed)
		plan.heads[u.Key] = u.ExpectSeq + uint64(len(u.Events))
		for _, e := range effs[i] {
			if e.Idempotency != nil {
				plan.idem[e.Idempotency.Key] = true
			}
		}
		sent = append(sent, i)
	}
	return sent
}

// commitBulk writes every unit that passes planning with merged
// statements inside one savepoint. It reports false (with the savepoint
// rolled back) when a statement failed in a way that belongs to one unit.
func (s *Store) commitBulk(ctx context.Context, tx pgx.Tx, units []actor.Unit, effs [][]*store.Effects, pending []int,
	checked map[int]int64, state commitState, results []error, now time.Time) (bool, error) {
	sent := planRound(units, effs, pending, checked, state.clone(), results)
	if len(sent) == 0 {
		return true, nil
	}
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT bulk`)
	if err := queueMerged(b, units, effs, sent, now, s.stamp(checked)); err != nil {
		return false, err
	}
	b.Queue(`RELEASE SAVEPOINT bulk`)
	owner := make([]int, b.Len())
	failed, _, err := runBatch(ctx, tx, b, owner)
	if err != nil {
		return false, err
	}
	if failed < 0 {
		return true, nil
	}
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT bulk`); err != nil {
		return false, fmt.Errorf("postgres: commit: rollback bulk: %w", err)
	}
	if _, err := tx.Exec(ctx, `RELEASE SAVEPOINT bulk`); err != nil {
		return false, fmt.Errorf("postgres: commit: release bulk: %w", err)
	}
	return false, nil
}

// queueMerged queues the writes of the units in sent (in order) as a few
// multi-row statements with the same outcome as applying the units one
// after another: for every row the last write wins (reminders, group rows,
// deliveries, routes, suppressions), inbox acks keep the last non-empty
// target, replies keep the first of a duplicate, events append in order.
func queueMerged(b *pgx.Batch, units []actor.Unit, effs [][]*store.Effects, sent []int, now time.Time, st stamp) error {
	m := merged{rems: map[[2]string]remOp{}, acks: map[[2]string]string{}, sups: map[string]supOp{}}
	for _, i := range sent {
		m.addEvents(&units[i], now, st)
		for _, e := range effs[i] {
			m.addEffects(e, now)
		}
	}
	return m.queue(b, now, st)
}

// merged gathers the rows of several units for queueMerged, in unit
// order: the later of two writes to one key wins, as it would unit by
// unit.
type merged struct {
	evKeys, evTypes           []string
	evSeqs, evTimes, evEpochs []int64
	evData                    [][]byte
	rems                      map[[2]string]remOp
	remOrder                  [][2]string
	groups                    []store.GroupRow
	deliveries                []store.DeliveryRow
	acks                      map[[2]string]string
	ackOrder                  [][2]string
	routes                    []store.Route
	sups                      map[string]supOp
	supOrder                  []string
	replies                   []store.Reply
	idem                      []*store.IdempotencyKey
	audit                     []store.AuditEntry
	outbox                    []store.OutboxRow
	consent                   []store.ConsentEntry
}

type remOp struct {
	due    int64
	delete bool
}

type supOp struct {
	sp     store.Suppression
	delete bool
}

// addEvents adds a unit's events and reminders.
func (m *merged) addEvents(u *actor.Unit, now time.Time, st stamp) {
	for j, ev := range u.Events {
		m.evKeys = append(m.evKeys, u.Key)
		m.evSeqs = append(m.evSeqs, int64(u.ExpectSeq)+int64(j)+1)
		m.evTypes = append(m.evTypes, ev.Type)
		d := ev.Data
		if d == nil {
			d = []byte{}
		}
		m.evData = append(m.evData, d)
		m.evTimes = append(m.evTimes, store.Nanos(sqlq.OrNow(ev.Time, now)))
		m.evEpochs = append(m.evEpochs, st.epoch(u.Key))
	}
	for _, r := range u.Reminders {
		k := [2]string{u.Key, r.Name}
		if _, ok := m.rems[k]; !ok {
			m.remOrder = append(m.remOrder, k)
		}
		m.rems[k] = remOp{due: store.Nanos(r.Due), delete: r.Delete}
	}
}

// addEffects adds one Effects of a unit.
func (m *merged) addEffects(e *store.Effects, now time.Time) {
	if e.Group != nil {
		m.groups = append(m.groups, *e.Group)
	}
	m.deliveries = append(m.deliveries, e.Deliveries...)
	for _, r := range e.InboxDone {
		k := [2]string{r.Provider, r.EventID}
		prev, ok := m.acks[k]
		if !ok {
			m.ackOrder = append(m.ackOrder, k)
		}
		if r.Target != "" {
			prev = r.Target
		}
		m.acks[k] = prev
	}
	m.routes = append(m.routes, e.Routes...)
	m.addSuppressions(e, now)
	m.replies = append(m.replies, e.Replies...)
	if e.Idempotency != nil {
		m.idem = append(m.idem, e.Idempotency)
	}
	m.audit = append(m.audit, e.Audit...)
	m.outbox = append(m.outbox, e.Outbox...)
	m.consent = append(m.consent, e.Consent...)
}

// addSuppressions adds an Effects' suppressions and START lifts, in the
// order the engine applies them unit by unit.
func (m *merged) addSuppressions(e *store.Effects, now time.Time) {
	for _, sp := range e.Suppress {
		prev, ok := m.sups[sp.Number]
		if !ok {
			m.supOrder = append(m.supOrder, sp.Number)
		}
		if ok && !prev.delete && !store.LiftedByStart(prev.sp.Reason) && store.LiftedByStart(sp.Reason) {
			continue // a STOP does not replace an operator's suppression
		}
		sp.CreatedAt = sqlq.OrNow(sp.CreatedAt, now)
		m.sups[sp.Number] = supOp{sp: sp}
	}
	for _, n := range e.Unsuppress {
		prev, ok := m.sups[n]
		if !ok {
			m.supOrder = append(m.supOrder, n)
		}
		if ok && !prev.delete && !store.LiftedByStart(prev.sp.Reason) {
			continue // a START does not lift an operator's suppression
		}
		m.sups[n] = supOp{delete: true}
	}
}

// queue queues the merged rows' statements on b.
func (m *merged) queue(b *pgx.Batch, now time.Time, st stamp) error {
	if len(m.evKeys) > 0 {
		b.Queue(`INSERT INTO journal (key, seq, type, data, time, epoch, node)
			SELECT u.*, $7::text FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[], $5::bigint[], $6::bigint[]) AS u`,
			m.evKeys, m.evSeqs, m.evTypes, m.evData, m.evTimes, m.evEpochs, st.node)
	}
	for _, k := range m.remOrder {
		if op := m.rems[k]; op.delete {
			b.Queue(sqlDelReminder, k[0], k[1])
		} else {
			b.Queue(sqlSetReminder, k[0], k[1], op.due)
		}
	}
	for _, g := range lastPerKey(m.groups, func(g *store.GroupRow) string { return g.ID }) {
		if err := queueGroup(b, &g); err != nil {
			return err
		}
	}
	if ds := lastPerKey(m.deliveries, func(d *store.DeliveryRow) string { return d.GroupID + "\x00" + d.Number }); len(ds) > 0 {
		queueDeliveries(b, ds)
	}
	// One joined UPDATE for all acks (each ref is distinct here): measured
	// several times faster than one statement per ref for large batches.
	if len(m.ackOrder) > 0 {
		prov, ids, targets := make([]string, len(m.ackOrder)), make([]string, len(m.ackOrder)), make([]string, len(m.ackOrder))
		for j, k := range m.ackOrder {
			prov[j], ids[j], targets[j] = k[0], k[1], m.acks[k]
		}
		b.Queue(`UPDATE inbox i SET processed_at = CASE WHEN i.processed_at = 0 THEN $1 ELSE i.processed_at END,
		target = CASE WHEN r.target <> '' THEN r.target ELSE i.target END, payload = ''::bytea
		FROM unnest($2::text[], $3::text[], $4::text[]) AS r(provider, event_id, target)
		WHERE i.provider = r.provider AND i.event_id = r.event_id`, store.Nanos(now), prov, ids, targets)
	}
	if rs := lastPerKey(m.routes, func(r *store.Route) string { return r.Key }); len(rs) > 0 {
		keys, vals, exp := make([]string, len(rs)), make([]string, len(rs)), make([]int64, len(rs))
		for j, r := range rs {
			keys[j], vals[j], exp[j] = r.Key, r.Value, store.Nanos(r.ExpiresAt)
		}
		b.Queue(sqlPutRoutes, keys, vals, exp)
	}
	m.queueSuppressions(b)
	if len(m.replies) > 0 {
		if err := queueReplies(b, m.replies, now); err != nil {
			return err
		}
	}
	for _, ik := range m.idem {
		b.Queue(sqlInsIdem, ik.Key, ik.RequestHash, ik.GroupID, store.Nanos(sqlq.OrNow(ik.CreatedAt, now)))
	}
	queueAudit(b, m.audit, now)
	queueConsent(b, m.consent, now)
	queueOutbox(b, m.outbox, now)
	return nil
}

// queueSuppressions queues the merged suppressions and lifts, each kind
// in one statement.
func (m *merged) queueSuppressions(b *pgx.Batch) {
	var supNums, supReasons, unsup []string
	var supCreated []int64
	for _, n := range m.supOrder {
		if op := m.sups[n]; op.delete {
			unsup = append(unsup, n)
		} else {
			supNums, supReasons = append(supNums, n), append(supReasons, op.sp.Reason)
			supCreated = append(supCreated, store.Nanos(op.sp.CreatedAt))
		}
	}
	if len(supNums) > 0 {
		b.Queue(sqlSuppress, supNums, supReasons, supCreated)
	}
	if len(unsup) > 0 {
		b.Queue(sqlUnsuppress, unsup)
	}
}

// sqlInsAudit appends one audit entry (docs/design.md §14).
var sqlInsAudit = sqlq.Rebind(sqlq.InsertAudit)

// queueAudit queues the audit entries a commit carries, in order.
func queueAudit(b *pgx.Batch, entries []store.AuditEntry, now time.Time) {
	for k := range entries {
		b.Queue(sqlInsAudit, sqlq.AuditArgs(&entries[k], now)...)
	}
}

// sqlInsConsent appends one consent entry (store.Effects.Consent).
var sqlInsConsent = sqlq.Rebind(sqlq.InsertConsent)

func queueConsent(b *pgx.Batch, entries []store.ConsentEntry, now time.Time) {
	for k := range entries {
		b.Queue(sqlInsConsent, sqlq.ConsentArgs(&entries[k], now)...)
	}
}

// prefetch reads, inside tx, which shards this store still holds (locking
// those lease rows FOR KEY SHARE until the end of the transaction: a
// takeover, which locks them FOR UPDATE, waits for this commit or skips
// the shard, while a renewal, which only moves the expiry, does not wait;
// the result maps each to the epoch checked), the journal head of every
// key and which idempotency keys already exist.
func (s *Store) prefetch(ctx context.Context, tx pgx.Tx, units []actor.Unit, effs [][]*store.Effects, pending []int) (map[int]int64, commitState, error) {
	seenShard := map[int]bool{}
	seenKey := map[string]bool{}
	var shards, epochs []int64
	var keys, idem, claimed []string
	suppressing := false
	for _, i := range pending {
		u := &units[i]
		if sh := store.ShardOf(u.Key); !seenShard[sh] {
			seenShard[sh] = true
			if e := s.epochs.Of(sh); e != 0 {
				shards = append(shards, int64(sh))
				epochs = append(epochs, int64(e))
			}
		}
		if !seenKey[u.Key] {
			seenKey[u.Key] = true
			keys = append(keys, u.Key)
		}
		for _, e := range effs[i] {
			if e.Idempotency != nil {
				idem = append(idem, e.Idempotency.Key)
			}
			claimed = append(claimed, e.Claim...)
			suppressing = suppressing || len(e.Suppress) > 0
		}
	}
	state := commitState{heads: map[string]uint64{}, idem: map[string]bool{}, suppressed: map[string]bool{}}
	ok := map[int]int64{}
	b := &pgx.Batch{}
	// Claims against suppressions: take the lock first, so the suppression
	// read below (its own statement, so its own snapshot) sees every
	// suppression committed before this transaction commits.
	switch {
	case suppressing:
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, suppressionLock)
	case len(claimed) > 0:
		b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, suppressionLock)
	}
	if len(claimed) > 0 {
		b.Queue(`SELECT number FROM suppressions WHERE number = ANY($1::text[])`, claimed).Query(func(rows pgx.Rows) error {
			return forEach(rows, func() error {
				var n string
				if err := rows.Scan(&n); err != nil {
					return err
				}
				state.suppressed[n] = true
				return nil
			})
		})
	}
	b.Queue(`SELECT l.shard, l.epoch FROM shard_leases l
		JOIN unnest($1::bigint[], $2::bigint[]) AS m(shard, epoch) ON l.shard = m.shard AND l.epoch = m.epoch
		WHERE `+leaseLive+`
		ORDER BY l.shard FOR KEY SHARE OF l`, shards, epochs).Query(func(rows pgx.Rows) error {
		return forEach(rows, func() error {
			var sh, epoch int64
			if err := rows.Scan(&sh, &epoch); err != nil {
				return err
			}
			ok[int(sh)] = epoch
			return nil
		})
	})
	// One backward index probe per key, however long its journal is.
	b.Queue(`SELECT k.key, COALESCE((SELECT seq FROM journal j WHERE j.key = k.key ORDER BY seq DESC LIMIT 1), 0)
		FROM unnest($1::text[]) AS k(key)`, keys).Query(func(rows pgx.Rows) error {
		return forEach(rows, func() error {
			var k string
			var seq int64
			if err := rows.Scan(&k, &seq); err != nil {
				return err
			}
			state.heads[k] = uint64(seq)
			return nil
		})
	})
	b.Queue(`SELECT key FROM idempotency_keys WHERE key = ANY($1::text[])`, idem).Query(func(rows pgx.Rows) error {
		return forEach(rows, func() error {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			state.idem[k] = true
			return nil
		})
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, commitState{}, fmt.Errorf("postgres: commit: read leases and heads: %w", err)
	}
	return ok, state, nil
}

func forEach(rows pgx.Rows, fn func() error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(); err != nil {
			return err
		}
	}
	return rows.Err()
}

// runBatch sends b and reads its results. It returns the index (in sent
// order) of the unit whose statement failed with a unit-level error, -1
// when every statement succeeded, or err for any other failure.
func runBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch, owner []int) (failed int, uerr, err error) {
	br := tx.SendBatch(ctx, b)
	for q := range b.Len() {
		if _, qerr := br.Exec(); qerr != nil {
			_ = br.Close() // the statements after qerr were skipped by the server
			var pgErr *pgconn.PgError
			if errors.As(qerr, &pgErr) && pgErr.Code == "23505" {
				switch pgErr.ConstraintName {
				case constraintJournal:
					return owner[q], actor.ErrConflict, nil
				case constraintIdempotency:
					return owner[q], store.ErrIdempotencyConflict, nil
				}
			}
			return 0, nil, fmt.Errorf("postgres: commit: %w", qerr)
		}
	}
	if err := br.Close(); err != nil {
		return 0, nil, fmt.Errorf("postgres: commit: %w", err)
	}
	return -1, nil, nil
}

// idemClash reports the first idempotency key of a unit already in use.
func idemClash(effs []*store.Effects, used map[string]bool) (string, bool) {
	mine := map[string]bool{}
	for _, e := range effs {
		if ik := e.Idempotency; ik != nil {
			if used[ik.Key] || mine[ik.Key] {
				return ik.Key, true
			}
			mine[ik.Key] = true
		}
	}
	return "", false
}

// lastPerKey keeps the last row for each key, in first-seen order: one
// INSERT ... ON CONFLICT DO UPDATE may not touch a row twice.
func lastPerKey[T any](rows []T, key func(*T) string) []T {
	if len(rows) < 2 {
		return rows
	}
	idx := make(map[string]int, len(rows))
	out := make([]T, 0, len(rows))
	for i := range rows {
		k := key(&rows[i])
		if j, ok := idx[k]; ok {
			out[j] = rows[i]
			continue
		}
		idx[k] = len(out)
		out = append(out, rows[i])
	}
	return out
}

// mergeSuppress keeps one suppression per number, the last one, except
// that a START-liftable reason never replaces one that is not (as the
// upsert's ON CONFLICT condition does between statements).
func mergeSuppress(ss []store.Suppression) []store.Suppression {
	if len(ss) < 2 {
		return ss
	}
	idx := make(map[string]int, len(ss))
	out := make([]store.Suppression, 0, len(ss))
	for _, sp := range ss {
		if j, ok := idx[sp.Number]; ok {
			if store.LiftedByStart(sp.Reason) && !store.LiftedByStart(out[j].Reason) {
				continue
			}
			out[j] = sp
			continue
		}
		idx[sp.Number] = len(out)
		out = append(out, sp)
	}
	return out
}

// queueUnit queues the statements that write one unit.
func queueUnit(b *pgx.Batch, u *actor.Unit, effs []*store.Effects, now time.Time, st stamp) error {
	if n := len(u.Events); n > 0 {
		seqs, times := make([]int64, n), make([]int64, n)
		types, data := make([]string, n), make([][]byte, n)
		for j, ev := range u.Events {
			seqs[j] = int64(u.ExpectSeq) + int64(j) + 1
			types[j] = ev.Type
			data[j] = ev.Data
			if data[j] == nil {
				data[j] = []byte{}
			}
			times[j] = store.Nanos(sqlq.OrNow(ev.Time, now))
		}
		b.Queue(sqlInsEvents, u.Key, seqs, types, data, times, st.epoch(u.Key), st.node)
	}
	for _, r := range u.Reminders {
		if r.Delete {
			b.Queue(sqlDelReminder, u.Key, r.Name)
		} else {
			b.Queue(sqlSetReminder, u.Key, r.Name, store.Nanos(r.Due))
		}
	}
	for _, e := range effs {
		if g := e.Group; g != nil {
			if err := queueGroup(b, g); err != nil {
				return err
			}
		}
		if ds := lastPerKey(e.Deliveries, func(d *store.DeliveryRow) string { return d.GroupID + "\x00" + d.Number }); len(ds) > 0 {
			queueDeliveries(b, ds)
		}
		// One statement per ack: a unit acks few entries, and each is a
		// unique-index update.
		for _, r := range e.InboxDone {
			b.Queue(sqlAckOne, store.Nanos(now), r.Target, r.Provider, r.EventID)
		}
		if rs := lastPerKey(e.Routes, func(r *store.Route) string { return r.Key }); len(rs) > 0 {
			keys, vals, exp := make([]string, len(rs)), make([]string, len(rs)), make([]int64, len(rs))
			for j, r := range rs {
				keys[j], vals[j], exp[j] = r.Key, r.Value, store.Nanos(r.ExpiresAt)
			}
			b.Queue(sqlPutRoutes, keys, vals, exp)
		}
		if ss := mergeSuppress(e.Suppress); len(ss) > 0 {
			nums, reasons, created := make([]string, len(ss)), make([]string, len(ss)), make([]int64, len(ss))
			for j, sp := range ss {
				nums[j], reasons[j], created[j] = sp.Number, sp.Reason, store.Nanos(sqlq.OrNow(sp.CreatedAt, now))
			}
			b.Queue(sqlSuppress, nums, reasons, created)
		}
		if len(e.Unsuppress) > 0 {
			b.Queue(sqlUnsuppress, e.Unsuppress)
		}
		if len(e.Replies) > 0 {
			if err := queueReplies(b, e.Replies, now); err != nil {
				return err
			}
		}
		if ik := e.Idempotency; ik != nil {
			b.Queue(sqlInsIdem, ik.Key, ik.RequestHash, ik.GroupID, store.Nanos(sqlq.OrNow(ik.CreatedAt, now)))
		}
		queueAudit(b, e.Audit, now)
		queueConsent(b, e.Consent, now)
		queueOutbox(b, e.Outbox, now)
	}
	return nil
}

// queueOutbox queues the outbound webhook rows of a commit (docs/design.md §13).
// One array-bound statement however many rows.
func queueOutbox(b *pgx.Batch, rows []store.OutboxRow, now time.Time) {
	if len(rows) == 0 {
		return
	}
	n := len(rows)
	ids, types, groups, eps := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seqs, created := make([]int64, n), make([]int64, n)
	payloads := make([][]byte, n)
	for k := range rows {
		r := &rows[k]
		ids[k], types[k], groups[k], eps[k] = r.MsgID, r.Type, r.GroupID, r.Endpoint
		seqs[k], created[k] = int64(r.Seq), store.Nanos(sqlq.OrNow(r.CreatedAt, now))
		payloads[k] = r.Payload
		if payloads[k] == nil {
			payloads[k] = []byte{}
		}
	}
	b.Queue(`INSERT INTO webhook_outbox (msg_id, type, group_id, seq, endpoint_id, payload, created_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bytea[], $7::bigint[])
		ON CONFLICT (msg_id) DO NOTHING`, ids, types, groups, seqs, eps, payloads, created)
}

func queueGroup(b *pgx.Batch, g *store.GroupRow) error {
	args, err := sqlq.GroupArgs(g)
	if err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	b.Queue(sqlUpGroup, args...)
	return nil
}

func queueReplies(b *pgx.Batch, rs []store.Reply, now time.Time) error {
	n := len(rs)
	cols := make([][]string, 7)
	for c := range cols {
		cols[c] = make([]string, n)
	}
	recv, possible, ambiguous := make([]int64, n), make([]int64, n), make([]int64, n)
	for j, r := range rs {
		media, err := json.Marshal(sqlq.NonNilStrings(r.Media))
		if err != nil {
			return fmt.Errorf("postgres: commit: reply media: %w", err)
		}
		cols[0][j], cols[1][j], cols[2][j], cols[3][j] = r.Provider, r.EventID, r.GroupID, r.Number
		cols[4][j], cols[5][j], cols[6][j] = r.To, r.Text, string(media)
		recv[j] = store.Nanos(sqlq.OrNow(r.ReceivedAt, now))
		possible[j] = sqlq.Flag(r.PossibleOptOut)
		ambiguous[j] = sqlq.Flag(r.Ambiguous)
	}
	b.Queue(sqlInsReplies, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], recv, possible, ambiguous)
	return nil
}

func queueDeliveries(b *pgx.Batch, ds []store.DeliveryRow) {
	n := len(ds)
	txt := make([][]string, 11)
	for c := range txt {
		txt[c] = make([]string, n)
	}
	num := make([][]int64, 7)
	for c := range num {
		num[c] = make([]int64, n)
	}
	for j, d := range ds {
		txt[0][j], txt[1][j], txt[2][j], txt[3][j] = d.GroupID, d.Number, d.Name, string(d.Status)
		txt[4][j], txt[5][j], txt[6][j] = d.ProviderMessageID, d.ErrorCode, string(d.ErrorClass)
		txt[7][j], txt[8][j], txt[9][j], txt[10][j] = string(d.Ack), d.LastReply, d.Response, d.Code
		num[0][j] = int64(d.Attempts)
		num[1][j], num[2][j], num[3][j] = store.Nanos(d.ClaimedAt), store.Nanos(d.SentAt), store.Nanos(d.DeliveredAt)
		num[4][j], num[5][j], num[6][j] = store.Nanos(d.FailedAt), store.Nanos(d.RepliedAt), store.Nanos(d.UpdatedAt)
	}
	b.Queue(sqlUpDeliveries, txt[0], txt[1], txt[2], txt[3], num[0], txt[4], txt[5], txt[6],
		num[1], num[2], num[3], num[4], num[5], txt[7], txt[8], num[6], txt[9], txt[10])
}

// ---- reminders ----

// Load, the snapshot methods and DueReminders are shared: see sqlq.DB.

// SetReminder creates or moves the reminder (Key, Name).
func (s *Store) SetReminder(ctx context.Context, r actor.Reminder) error {
	if _, err := s.pool.Exec(ctx, sqlSetReminder, r.Key, r.Name, store.Nanos(r.Due)); err != nil {
		return fmt.Errorf("postgres: set reminder: %w", err)
	}
	return nil
}

// DeleteReminder removes a reminder; a missing one is not an error.
func (s *Store) DeleteReminder(ctx context.Context, key, name string) error {
	if _, err := s.pool.Exec(ctx, sqlDelReminder, key, name); err != nil {
		return fmt.Errorf("postgres: delete reminder: %w", err)
	}
	return nil
}
