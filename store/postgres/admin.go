package postgres

import (
	"context"
	"fmt"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// The other suppression, API key and idempotency statements are shared:
// see sqlq.DB. AddSuppression writes through the same statement as
// Commit's effects.

// AddSuppression creates or replaces a suppression (CreatedAt defaults to
// now; see store.Suppressions for which reason wins) and appends its audit
// entries in the same transaction. It holds suppressionLock exclusively,
// so it commits either before a concurrent claim reads the suppressions
// (which then sees it) or after the claim committed.
func (s *Store) AddSuppression(ctx context.Context, sp store.Suppression, audit ...store.AuditEntry) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: add suppression: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, suppressionLock); err != nil {
		return fmt.Errorf("postgres: add suppression: lock: %w", err)
	}
	now := s.now()
	if _, err := tx.Exec(ctx, sqlSuppress, []string{sp.Number}, []string{sp.Reason}, []int64{store.Nanos(sqlq.OrNow(sp.CreatedAt, now))}); err != nil {
		return fmt.Errorf("postgres: add suppression: %w", err)
	}
	if err := sqlq.AppendAuditIn(ctx, querier{tx}, now, audit); err != nil {
		return fmt.Errorf("postgres: add suppression: audit: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: add suppression: commit: %w", err)
	}
	return nil
}
