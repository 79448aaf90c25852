package sqlite

import (
	"context"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// erasers are this engine's own erasure statements, run after
// sqlq.NumberErasers in EraseNumber's transaction: one entry per table that
// keeps a person and is not in migration 00001 (contacts, crew
// memberships, outbound webhook payloads, ...).
var erasers = []sqlq.Eraser{}

// EraseNumber implements store.Erasure. SQLite has one writer, so the
// suppression rewrite is serialized with claims without a lock.
func (s *Store) EraseNumber(ctx context.Context, number, replacement, keep string) (store.ErasedCounts, error) {
	return s.queries.EraseNumberWith(ctx, number, replacement, keep, sqlq.EraseOptions{Extra: erasers})
}
