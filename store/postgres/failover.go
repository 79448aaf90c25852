package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crewcast/crewcast/store"
)

// Failover records (docs/design.md §19). Every new connection of either
// pool asks which primary it reached (PrimaryIdentity's system identifier
// and timeline) before it is used. When that is not the identity recorded
// in store_primary, the connection records a failover in store_failovers
// (once per new primary, whichever node comes first) and moves
// store_primary on. A pool's connections to a dead primary fail; the ones
// that replace them reach the new primary through this check, so by the
// time anything is read or written there the store knows of the failover
// (LastFailover), and a group loaded from the new primary reconciles its
// unsent recipients before it claims (tracker/reconcile.go). The record
// is a row, so a node started after the failover, or restarted during the
// reconciliation, finds it too.

// primaryGate holds what this store knows of its primary.
type primaryGate struct {
	now    func() time.Time
	logger *slog.Logger

	mu    sync.Mutex
	known string // the identity checked last ("" before the first check)
	last  store.Failover
	has   bool
}

// sqlIdentity is PrimaryIdentity's query, on one connection.
const sqlIdentity = `SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)`

// simple runs the check's statements with the simple protocol: it runs
// on every new connection, before Open could tell a transaction-mode
// pooler (pooler.go), behind which a prepared statement cached on one
// server connection may exist on the next client's ("already exists").
const simple = pgx.QueryExecModeSimpleProtocol

func connIdentity(ctx context.Context, c *pgx.Conn) (string, error) {
	var timeline string
	if err := c.QueryRow(ctx, sqlIdentity, simple).Scan(&timeline); err != nil {
		return "", err
	}
	var system string
	if err := c.QueryRow(ctx, `SELECT system_identifier::text FROM pg_control_system()`, simple).Scan(&system); err != nil {
		system = "?"
	}
	return system + "/" + timeline, nil
}

// sqlState returns the SQLSTATE of a server error ("" for others).
func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// check runs on every new connection (pgxpool's AfterConnect).
func (g *primaryGate) check(ctx context.Context, c *pgx.Conn) error {
	id, err := connIdentity(ctx, c)
	if err != nil {
		if sqlState(err) == "55000" {
			// A standby ("recovery is in progress"): nothing can be
			// written through this connection, so nothing needs the check.
			return nil
		}
		return fmt.Errorf("postgres: primary identity: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if id == g.known {
		return nil
	}
	f, found, fresh, err := recordPrimary(ctx, c, id, g.now())
	if err != nil {
		if errors.Is(err, errNotMigrated) { // Open checks again after the migrations
			return nil
		}
		return fmt.Errorf("postgres: record primary: %w", err)
	}
	g.known = id
	if found {
		g.last, g.has = f, true
	}
	if fresh {
		g.logger.Warn("store failover: a new PostgreSQL primary; groups reconcile their unsent recipients with the provider before sending",
			"before", f.Before, "after", f.ID, "last_commit_before_ms", f.DetectedAt.Sub(f.LastCommit).Milliseconds())
	}
	return nil
}

// errNotMigrated: the tables are not there yet (a connection made before
// Open's migrations).
var errNotMigrated = errors.New("postgres: failover tables not migrated yet")

// recordPrimary compares id with store_primary, records a failover when
// they differ, and returns the latest failover recorded (found) and
// whether this call recorded it (fresh).
func recordPrimary(ctx context.Context, c *pgx.Conn, id string, now time.Time) (f store.Failover, found, fresh bool, err error) {
	var migrated bool
	if err := c.QueryRow(ctx, `SELECT to_regclass('store_primary') IS NOT NULL`, simple).Scan(&migrated); err != nil {
		return f, false, false, err
	}
	if !migrated {
		return f, false, false, errNotMigrated
	}
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		var before string
		err := tx.QueryRow(ctx, `SELECT identity FROM store_primary WHERE id = 1 FOR UPDATE`, simple).Scan(&before)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			_, err = tx.Exec(ctx, `INSERT INTO store_primary (id, identity, seen_at) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING`, simple, id, store.Nanos(now))
			return err
		case err != nil:
			return err
		case before == id:
			return nil
		}
		tag, err := tx.Exec(ctx, `INSERT INTO store_failovers (id, before_id, detected_at, last_commit)
			VALUES ($1, $2, $3, (SELECT COALESCE(MAX(time), 0) FROM journal)) ON CONFLICT (id) DO NOTHING`, simple, id, before, store.Nanos(now))
		if err != nil {
			return err
		}
		fresh = tag.RowsAffected() == 1
		_, err = tx.Exec(ctx, `UPDATE store_primary SET identity = $1, seen_at = $2 WHERE id = 1`, simple, id, store.Nanos(now))
		return err
	})
	if err != nil {
		return f, false, false, err
	}
	var detected, last int64
	err = c.QueryRow(ctx, `SELECT id, before_id, detected_at, last_commit FROM store_failovers ORDER BY detected_at DESC LIMIT 1`, simple).
		Scan(&f.ID, &f.Before, &detected, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, false, false, nil
	}
	if err != nil {
		return f, false, false, err
	}
	f.DetectedAt, f.LastCommit = store.FromNanos(detected), store.FromNanos(last)
	return f, true, fresh, nil
}

// checkPrimary runs the check on one connection of the pool: Open calls
// it after the migrations, which the first connections came before.
func (s *Store) checkPrimary(ctx context.Context) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer c.Release()
	return s.gate.check(ctx, c.Conn())
}

// LastFailover returns the latest failover recorded in the database as
// this store's newest connection found it (store.FailoverLog).
func (s *Store) LastFailover() (store.Failover, bool) {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	return s.gate.last, s.gate.has
}

var _ store.FailoverLog = (*Store)(nil)
