package sqlite

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
// now; see store.Suppressions for which reason wins). SQLite has one
// writer at a time, so it is serialized with every claim check.
func (s *Store) AddSuppression(ctx context.Context, sp store.Suppression) error {
	if _, err := s.st.suppress.ExecContext(ctx, sp.Number, sp.Reason, store.Nanos(sqlq.OrNow(sp.CreatedAt, s.now()))); err != nil {
		return fmt.Errorf("sqlite: add suppression: %w", err)
	}
	return nil
}

// RemoveSuppression deletes a suppression; a missing one is not an error.
func (s *Store) RemoveSuppression(ctx context.Context, number string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM suppressions WHERE number = ?`, number); err != nil {
		return fmt.Errorf("sqlite: remove suppression: %w", err)
	}
	return nil
}
