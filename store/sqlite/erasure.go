package sqlite

import (
	"context"
	"fmt"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// erasers are this engine's own erasure statements, run after
// sqlq.NumberErasers in EraseNumber's transaction: one entry per table that
// keeps a person and is not in migration 00001 (contacts, crew
// memberships, outbound webhook payloads, ...).
var erasers = []sqlq.Eraser{
	// Outbound webhook payloads naming them (migration 00007), delivered
	// or not: their attempts (an attempt names its event by a hash of the
	// number, and keeps the receiver's answer, which may echo the payload)
	// and queue entries first, then the events.
	{Place: "webhook_attempts", SQL: `DELETE FROM webhook_attempts WHERE outbox_id IN
		(SELECT id FROM webhook_outbox WHERE instr(payload, ?) > 0) OR instr(response, ?) > 0`, Args: attemptArgs},
	{Place: "webhook_deliveries", SQL: `DELETE FROM webhook_deliveries WHERE outbox_id IN
		(SELECT id FROM webhook_outbox WHERE instr(payload, ?) > 0)`, Args: outboxArgs},
	{Place: "webhook_outbox", SQL: `DELETE FROM webhook_outbox WHERE instr(payload, ?) > 0`, Args: outboxArgs},
}

// outboxArgs passes the needle as a BLOB, so instr compares bytes.
func outboxArgs(n, _ string) []any { return []any{sqlq.OutboxNeedle(n)} }

// attemptArgs are the payload needle (a BLOB) and the number as text, for
// the receiver's answer.
func attemptArgs(n, _ string) []any { return []any{sqlq.OutboxNeedle(n), n} }

// EraseNumber implements store.Erasure. SQLite has one writer, so the
// suppression rewrite is serialized with claims without a lock.
// Afterwards the WAL, which still holds the pages as they were before, is
// checkpointed into the database file and truncated; secure_delete (set
// when the store opens) has zeroed the erased content there, in the pages
// of rows deleted or rewritten and in the pages freed.
func (s *Store) EraseNumber(ctx context.Context, number, replacement, keep string, audit ...store.AuditEntry) (store.ErasedCounts, error) {
	counts, err := sqlq.EraseNumber(ctx, s.queries, number, replacement, keep, sqlq.EraseOptions{Extra: erasers, Audit: audit})
	if err != nil {
		return nil, err
	}
	// The checkpoint waits up to the busy timeout for readers still on an
	// older snapshot. One that holds on keeps it from finishing: the
	// erasure stands (it committed), but the WAL keeps the old pages until
	// a later TRUNCATE checkpoint (checkpoint.go) or a restart removes it,
	// so the operator is told.
	var busy, logPages, done int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done); err != nil {
		return nil, fmt.Errorf("sqlite: erase number: checkpoint: %w", err)
	}
	if busy != 0 {
		s.cfg.Logger.Warn("erasure: a long read kept the checkpoint from truncating the WAL, which still holds pages as they were before the erasure until the next TRUNCATE checkpoint",
			"wal_frames", logPages, "checkpointed", done)
	}
	return counts, nil
}

// EraseFromGroup implements store.Erasure, fenced like a commit: the
// group's shard lease must still be this store's at its epoch (SQLite's
// single writer serializes the check with every commit and takeover).
func (s *Store) EraseFromGroup(ctx context.Context, id string, e store.GroupErasure) (store.ErasedCounts, error) {
	sh := store.ShardOf(id)
	epoch := s.epochs.Of(sh)
	if epoch == 0 { // not held here: a commit would be fenced too
		return nil, actor.ErrFenced
	}
	return sqlq.EraseFromGroupFenced(ctx, s.queries, id, e,
		`SELECT shard FROM shard_leases WHERE shard = ? AND epoch = ? AND `+sqlq.LeaseLive("sqlite", ""),
		int64(sh), int64(epoch))
}
