package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/crewcast/crewcast/store/sqlq"
)

// db is what both the pool and a transaction offer.
type db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// query, queryRow and exec run a statement written with ? placeholders
// (the form shared with store/sqlite) on d.
func query(ctx context.Context, d db, q string, args ...any) (pgx.Rows, error) {
	return d.Query(ctx, sqlq.Rebind(q), args...)
}

func queryRow(ctx context.Context, d db, q string, args ...any) pgx.Row {
	return d.QueryRow(ctx, sqlq.Rebind(q), args...)
}

func exec(ctx context.Context, d db, q string, args ...any) (pgconn.CommandTag, error) {
	return d.Exec(ctx, sqlq.Rebind(q), args...)
}
