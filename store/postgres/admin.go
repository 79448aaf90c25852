package postgres

import (
	"context"
	"fmt"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// The other suppression, API key and idempotency statements are shared:
// see sqlq.DB. These two write through the same statements as Commit's
// effects.

// AddSuppression creates or replaces a suppression (CreatedAt defaults to
// now).
func (s *Store) AddSuppression(ctx context.Context, sp store.Suppression) error {
	if _, err := s.pool.Exec(ctx, sqlSuppress, []string{sp.Number}, []string{sp.Reason}, []int64{store.Nanos(sqlq.OrNow(sp.CreatedAt, s.now()))}); err != nil {
		return fmt.Errorf("postgres: add suppression: %w", err)
	}
	return nil
}

// RemoveSuppression deletes a suppression; a missing one is not an error.
func (s *Store) RemoveSuppression(ctx context.Context, number string) error {
	if _, err := s.pool.Exec(ctx, sqlUnsuppress, []string{number}); err != nil {
		return fmt.Errorf("postgres: remove suppression: %w", err)
	}
	return nil
}
