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

// rowsBulk is how many rows one statement writes while a commit has that
// many left: a large group's creation writes 100,000 delivery rows. The
// number of statements matters beyond each one's own cost: inside a
// unit's savepoint every statement that may fail midway opens a
// statement journal, and at its end SQLite truncates the in-memory
// sub-journal by walking it from its start. When the unit has journaled
// many pages (it rewrites pages that existed before it: a second
// 100,000-person group interleaves its numbers into deliveries_number),
// 3,125 statements of 32 rows walked a journal of thousands of pages
// 3,125 times: 9.1 s instead of 1.3 s for that group's commit, past the
// actor's 10 s flush limit under load. Statements of 1,000 rows make it
// 100 walks. One statement may carry at most maxVars parameters (SQLite's
// SQLITE_MAX_VARIABLE_NUMBER default since 3.32).
const (
	rowsBulk = 1000
	maxVars  = 32766
)

// rowsStmt is an INSERT whose VALUES list repeats one row, prepared at
// open for every row count from 1 to rowsChunk (the writer has a single
// connection, so nothing can be prepared on it while a transaction is
// open, except inside that transaction).
type rowsStmt struct {
	head, row, tail string
	cols            int
	byN             [rowsChunk + 1]*sql.Stmt
	// bulk rows go in one statement while that many are left (0 = never);
	// bulkQ is that statement, prepared inside the transaction that needs
	// it: 6 ms once per large commit, where preparing it at open would
	// hold 1.5 MB per table for good.
	bulk  int
	bulkQ string
}

func newRowsStmt(head, row, tail string) *rowsStmt {
	return &rowsStmt{head: head, row: row, tail: tail, cols: strings.Count(row, "?")}
}

// query returns the statement text for k rows.
func (r *rowsStmt) query(k int) string {
	return r.head + strings.TrimSuffix(strings.Repeat(r.row+", ", k), ", ") + r.tail
}

// withBulk makes r write rowsBulk rows per statement (fewer when that
// would pass maxVars) while that many are left: for the tables one commit
// may write thousands of rows of.
func (r *rowsStmt) withBulk() *rowsStmt {
	r.bulk = min(rowsBulk, maxVars/r.cols)
	r.bulkQ = r.query(r.bulk)
	return r
}

func (r *rowsStmt) prepare(ctx context.Context, db *sql.DB, all *[]*sql.Stmt) error {
	for k := 1; k <= rowsChunk; k++ {
		st, err := db.PrepareContext(ctx, r.query(k))
		if err != nil {
			return fmt.Errorf("sqlite: prepare: %w", err)
		}
		r.byN[k] = st
		*all = append(*all, st)
	}
	return nil
}

// exec writes the rows whose values args holds (cols per row, in order):
// bulk rows per statement while that many are left, then rowsChunk rows
// per statement.
func (r *rowsStmt) exec(ts *txStmts, args []any) error {
	n := len(args) / r.cols
	off := 0
	if r.bulk > 0 && n >= r.bulk {
		st, err := ts.prepared(r.bulkQ)
		if err != nil {
			return err
		}
		for ; n-off >= r.bulk; off += r.bulk {
			if _, err := st.ExecContext(ts.ctx, args[off*r.cols:(off+r.bulk)*r.cols]...); err != nil {
				return err
			}
		}
	}
	for ; off < n; off += rowsChunk {
		k := min(rowsChunk, n-off)
		if _, err := ts.exec(r.byN[k], args[off*r.cols:(off+k)*r.cols]...); err != nil {
			return err
		}
	}
	return nil
}
