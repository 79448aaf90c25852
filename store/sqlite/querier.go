package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/crewcast/crewcast/store/sqlq"
)

// queries supplies the store.Store methods whose SQL is shared with
// store/postgres; embedded in Store under this unexported name, it adds
// those methods and nothing else to Store's API.
type queries = sqlq.DB

// runner is what both *sql.DB and *sql.Tx offer.
type runner interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// querier adapts a database/sql pool or transaction to sqlq.Querier.
type querier struct{ db runner }

// Query runs a statement that returns rows.
func (q querier) Query(ctx context.Context, query string, args ...any) (sqlq.Rows, error) {
	rows, err := q.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return resultRows{rows}, nil
}

// QueryRow runs a statement that returns at most one row.
func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlq.Row {
	return resultRow{q.db.QueryRowContext(ctx, query, args...)}
}

// Exec runs a statement and returns how many rows it changed.
func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// resultRows drops the error of Close, which sqlq.Rows does not report.
type resultRows struct{ *sql.Rows }

func (r resultRows) Close() { _ = r.Rows.Close() }

// resultRow reports sql.ErrNoRows as actor.ErrNotFound, as sqlq.Row does.
type resultRow struct{ *sql.Row }

func (r resultRow) Scan(dest ...any) error { return notFound(r.Row.Scan(dest...)) }

// readTx runs fn in a read-only transaction on the read pool.
func (s *Store) readTx(ctx context.Context, fn func(sqlq.Querier) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(querier{tx})
}

// writeTx runs fn in one write transaction on the writer connection.
func (s *Store) writeTx(ctx context.Context, fn func(sqlq.Querier) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(querier{tx}); err != nil {
		return errors.Join(err, rollback(tx))
	}
	return tx.Commit()
}

func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}
