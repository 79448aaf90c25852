package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// db is what both the pool and a transaction offer.
type db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// rebind turns the ? placeholders of the engine-neutral queries shared in
// spirit with store/sqlite into PostgreSQL's $1, $2, ... None of those
// queries has a ? inside a string literal.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func query(ctx context.Context, d db, q string, args ...any) (pgx.Rows, error) {
	return d.Query(ctx, rebind(q), args...)
}

func queryRow(ctx context.Context, d db, q string, args ...any) pgx.Row {
	return d.QueryRow(ctx, rebind(q), args...)
}

func exec(ctx context.Context, d db, q string, args ...any) (pgconn.CommandTag, error) {
	return d.Exec(ctx, rebind(q), args...)
}
