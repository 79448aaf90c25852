package postgres

import (
	"context"
	"fmt"
)

// PrimaryIdentity names the PostgreSQL primary this store writes to: its
// system identifier (shared by a primary and the standbys cloned from it)
// and its current timeline, which a promotion increments. A change of
// either between two calls means the store is on another primary than
// before: a failover happened, and with asynchronous replication the old
// primary's last transactions may be gone (docs/deploy.md). On a standby
// (nothing writable) it returns an error.
func (s *Store) PrimaryIdentity(ctx context.Context) (string, error) {
	var timeline string
	// The first 8 hex digits of the current WAL file's name are the
	// timeline the primary writes on; readable by any role, unlike
	// pg_control_checkpoint(), and current right after a promotion.
	if err := s.pool.QueryRow(ctx, `SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)`).Scan(&timeline); err != nil {
		return "", fmt.Errorf("postgres: primary timeline: %w", err)
	}
	var system string
	if err := s.pool.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&system); err != nil {
		system = "?" // not granted to this role: the timeline alone tells
	}
	return system + "/" + timeline, nil
}
