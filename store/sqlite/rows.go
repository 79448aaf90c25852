package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// rowsChunk is how many rows one multi-row statement writes. Each
// statement call costs far more than each row it carries (binding, the
// database/sql round trip, VDBE start-up), so a commit of hundreds of
// recipients writes them 32 at a time: 9.4 → 3.4 µs per inserted row when
// measured.
const rowsChunk = 32

// rowsStmt is an INSERT whose VALUES list repeats one row, prepared at
// open for every row count from 1 to rowsChunk (the writer has a single
// connection, so nothing can be prepared while a transaction is open).
type rowsStmt struct {
	head, row, tail string
	cols            int
	byN             [rowsChunk + 1]*sql.Stmt
}

func newRowsStmt(head, row, tail string) *rowsStmt {
	return &rowsStmt{head: head, row: row, tail: tail, cols: strings.Count(row, "?")}
}

func (r *rowsStmt) prepare(ctx context.Context, db *sql.DB, all *[]*sql.Stmt) error {
	for k := 1; k <= rowsChunk; k++ {
		q := r.head + strings.TrimSuffix(strings.Repeat(r.row+", ", k), ", ") + r.tail
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		r.byN[k] = st
		*all = append(*all, st)
	}
	return nil
}

// exec writes the rows whose values args holds (cols per row, in order),
// rowsChunk rows per statement.
func (r *rowsStmt) exec(ts *txStmts, args []any) error {
	n := len(args) / r.cols
	for off := 0; off < n; off += rowsChunk {
		k := min(rowsChunk, n-off)
		if _, err := ts.exec(r.byN[k], args[off*r.cols:(off+k)*r.cols]...); err != nil {
			return err
		}
	}
	return nil
}
