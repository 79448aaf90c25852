package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/crewcast/crewcast/store/sqlq"
)

// queries supplies the store.Store methods whose SQL is shared with
// store/sqlite; embedded in Store under this unexported name, it adds
// those methods and nothing else to Store's API.
type queries = sqlq.DB

// db is what both the pool and a transaction offer.
type db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// querier adapts the pool or a transaction to sqlq.Querier, rebinding the
// shared statements' ? placeholders to $n.
type querier struct{ d db }

// Query runs a statement that returns rows.
func (q querier) Query(ctx context.Context, query string, args ...any) (sqlq.Rows, error) {
	rows, err := q.d.Query(ctx, sqlq.Rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// QueryRow runs a statement that returns at most one row.
func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlq.Row {
	return resultRow{q.d.QueryRow(ctx, sqlq.Rebind(query), args...)}
}

// Exec runs a statement and returns how many rows it changed.
func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.d.Exec(ctx, sqlq.Rebind(query), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// resultRow reports pgx.ErrNoRows as actor.ErrNotFound, as sqlq.Row does.
type resultRow struct{ row pgx.Row }

func (r resultRow) Scan(dest ...any) error { return notFound(r.row.Scan(dest...)) }

// readTx runs fn in a read-only repeatable-read transaction, so that its
// reads see one snapshot.
func (s *Store) readTx(ctx context.Context, fn func(sqlq.Querier) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	return fn(querier{tx})
}

// writeTx runs fn in one transaction.
func (s *Store) writeTx(ctx context.Context, fn func(sqlq.Querier) error) error {
	return writeTx(ctx, s.pool, fn)
}

// writeTx runs fn in one transaction on pool.
func writeTx(ctx context.Context, pool *pgxpool.Pool, fn func(sqlq.Querier) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(querier{tx}); err != nil {
		if rerr := tx.Rollback(context.WithoutCancel(ctx)); rerr != nil && !errors.Is(rerr, pgx.ErrTxClosed) {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit(ctx)
}
