// Package sqlq is the SQL that store/sqlite and store/postgres run alike:
// column lists, row scanners, filter and keyset-cursor builders, and the
// read, retention, admin, lease and migration code, each written once with
// ? placeholders. An engine adapts its driver to Querier (store/postgres
// turns ? into $n with Rebind) and tells DB how it starts a transaction;
// what genuinely differs between the engines — connection setup, the
// commit paths, prepared or array-bound writes — stays in the engine.
//
// DB's exported methods are store.Store methods: an engine embeds a DB so
// that they become its own. Errors start with the engine's name
// ("sqlite: list groups: ..."), as the engine's own methods' do.
//
// Concurrency: DB keeps no state of its own; it is as safe for concurrent
// use as the Queriers and transaction functions it is built from (the
// engine's Epochs are safe on their own).
package sqlq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Row is one result row. Its Scan returns actor.ErrNotFound when the query
// matched nothing, so that not-found maps to one sentinel whatever the
// driver.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result set being read. pgx.Rows satisfies it as it is;
// *sql.Rows needs Close's error dropped (neither engine ever acted on it:
// a failed read shows in Err).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs statements written with ? placeholders, on a pool or
// inside a transaction.
type Querier interface {
	// Query runs a statement that returns rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a statement that returns at most one row.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// Conn is what DB needs from one engine.
type Conn struct {
	// Engine starts every error message: "sqlite", "postgres".
	Engine string
	// Read runs reads that need no transaction.
	Read Querier
	// Write runs single writes that need no transaction.
	Write Querier
	// ReadTx runs fn in a read-only transaction that sees one consistent
	// state of the database.
	ReadTx func(ctx context.Context, fn func(Querier) error) error
	// WriteTx runs fn in one write transaction, committed when fn returns
	// nil and rolled back otherwise.
	WriteTx func(ctx context.Context, fn func(Querier) error) error
	// Now is the clock for default timestamps, route expiry and retention
	// marks.
	Now func() time.Time
	// Epochs are the shard epochs the engine's store instance holds, which
	// TakeShard and TakeFreeShards record and the engine's commits check.
	Epochs *Epochs
	// LeaseWrite and LeaseTx, when set, run the lease and membership
	// writes (heartbeat, renewal, acquisition, release, leave) instead of
	// Write and WriteTx. PostgreSQL gives them connections of their own,
	// so that a renewal never queues for a connection behind commits and
	// webhook inserts: a node that cannot renew within TTL/3 fences
	// itself, and a hand-off waits on its release.
	LeaseWrite Querier
	LeaseTx    func(ctx context.Context, fn func(Querier) error) error
}

// leaseWrite is Conn.LeaseWrite, or Write when unset.
func (c Conn) leaseWrite() Querier {
	if c.LeaseWrite != nil {
		return c.LeaseWrite
	}
	return c.Write
}

// leaseTx is Conn.LeaseTx, or WriteTx when unset.
func (c Conn) leaseTx(ctx context.Context, fn func(Querier) error) error {
	if c.LeaseTx != nil {
		return c.LeaseTx(ctx, fn)
	}
	return c.WriteTx(ctx, fn)
}

// DB runs the shared statements over one engine's Conn.
type DB struct {
	c Conn
}

// New returns the shared statements bound to c.
func New(c Conn) DB { return DB{c: c} }

// errorf formats an error that starts with the engine's name.
func (d DB) errorf(format string, args ...any) error {
	return fmt.Errorf(d.c.Engine+": "+format, args...)
}

// Rebind turns the ? placeholders of q into PostgreSQL's $1, $2, ... in
// order. It does not parse SQL: none of the shared statements has a ?
// inside a string literal, quoted identifier or comment, and none may.
func Rebind(q string) string {
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

// where joins conditions into a WHERE clause ("" for none).
func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// collect reads every row with scan and closes rows. It returns nil, not
// an empty slice, when there are no rows.
func collect[T any](rows Rows, scan func(Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// queryAll runs query on q and collects its rows with scan.
func queryAll[T any](ctx context.Context, q Querier, scan func(Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scan)
}

// scanString scans a one-column row of text.
func scanString(r Rows) (string, error) {
	var v string
	err := r.Scan(&v)
	return v, err
}

// page trims a keyset page read with LIMIT limit+1 to limit rows and, when
// a row followed, returns the cursor of the last row kept.
func page[T any](out []T, limit int, cursor func(last T) string) ([]T, string) {
	if len(out) <= limit {
		return out, ""
	}
	out = out[:limit]
	return out, cursor(out[limit-1])
}

// nanosPart formats a Unix-nanosecond time as a cursor part.
func nanosPart(t time.Time) string { return strconv.FormatInt(store.Nanos(t), 10) }

// OrNow returns t, or now when t is the zero time.
func OrNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// NonNilCounts returns m, or an empty map for nil, so that it encodes as
// {} rather than null.
func NonNilCounts(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// NonNilStrings returns s, or an empty slice for nil, so that it encodes
// as [] rather than null.
func NonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// UnitEffects resolves a unit's effect values before anything is written.
func UnitEffects(u *actor.Unit) ([]*store.Effects, error) {
	var out []*store.Effects
	for _, e := range u.Effects {
		eff, err := store.EffectsOf(e)
		if err != nil {
			return nil, err
		}
		out = append(out, eff)
	}
	return out, nil
}
