package sqlite

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
// entries in the same transaction. SQLite has one writer at a time, so it
// is serialized with every claim check.
func (s *Store) AddSuppression(ctx context.Context, sp store.Suppression, audit ...store.AuditEntry) error {
	now := s.now()
	err := s.writeTx(ctx, func(q sqlq.Querier) error {
		if _, err := q.Exec(ctx, sqlSuppress, sp.Number, sp.Reason, store.Nanos(sqlq.OrNow(sp.CreatedAt, now))); err != nil {
			return err
		}
		return sqlq.AppendAuditIn(ctx, q, now, audit)
	})
	if err != nil {
		return fmt.Errorf("sqlite: add suppression: %w", err)
	}
	return nil
}
