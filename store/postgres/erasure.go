package postgres

import (
	"context"
	"strconv"

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
		(SELECT id FROM webhook_outbox WHERE position(?::bytea in payload) > 0) OR strpos(response, ?) > 0`, Args: attemptArgs},
	{Place: "webhook_deliveries", SQL: `DELETE FROM webhook_deliveries WHERE outbox_id IN
		(SELECT id FROM webhook_outbox WHERE position(?::bytea in payload) > 0)`, Args: outboxArgs},
	{Place: "webhook_outbox", SQL: `DELETE FROM webhook_outbox WHERE position(?::bytea in payload) > 0`, Args: outboxArgs},
}

func outboxArgs(n, _ string) []any { return []any{sqlq.OutboxNeedle(n)} }

// attemptArgs are the payload needle (a BLOB) and the number as text, for
// the receiver's answer.
func attemptArgs(n, _ string) []any { return []any{sqlq.OutboxNeedle(n), n} }

// EraseNumber implements store.Erasure. The suppression rewrite takes the
// suppression lock, as AddSuppression does, so it is ordered with claims.
func (s *Store) EraseNumber(ctx context.Context, number, replacement, keep string, audit ...store.AuditEntry) (store.ErasedCounts, error) {
	return sqlq.EraseNumber(ctx, s.queries, number, replacement, keep, sqlq.EraseOptions{
		Lock:  `SELECT pg_advisory_xact_lock(` + strconv.FormatInt(suppressionLock, 10) + `)`,
		Extra: erasers,
		Audit: audit,
	})
}

// EraseFromGroup implements store.Erasure, fenced like a commit: the
// group's shard lease must still be this store's at its epoch (locked FOR
// SHARE until the rewrite commits), so a node that lost the shard never
// rewrites a group its new owner is committing to (docs/design.md §9).
func (s *Store) EraseFromGroup(ctx context.Context, id string, e store.GroupErasure) (store.ErasedCounts, error) {
	sh := store.ShardOf(id)
	epoch := s.epochs.Of(sh)
	if epoch == 0 { // not held here: a commit would be fenced too
		return nil, actor.ErrFenced
	}
	return sqlq.EraseFromGroupFenced(ctx, s.queries, id, e,
		`SELECT l.shard FROM shard_leases l WHERE l.shard = ? AND l.epoch = ? AND `+leaseLive+` FOR KEY SHARE OF l`, // as a commit's check (journal.go prefetch)
		int64(sh), int64(epoch))
}
