// Package postgres is the store engine for several nodes sharing one
// PostgreSQL database, through jackc/pgx/v5.
//
// Durability: every session runs with synchronous_commit=on, so a write
// that returned nil is on the server's disk. Commit applies a whole batch
// of units in one transaction: the lease epochs and journal heads are read
// first (the lease rows FOR KEY SHARE, so a takeover by another node,
// which locks them FOR UPDATE, waits for this transaction or fences it,
// while the holder's renewals do not wait), then every unit is sent in one
// pipelined batch, each inside its own SAVEPOINT; a unit that fails is
// rolled back to its savepoint alone and the rest of the batch is resent.
// Commits of one Store are serialized, so journal positions (LoadAllEvents)
// increase with commit order within one node; across nodes LoadAllEvents
// waits out positions still in flight (positions.go). Schema migrations are
// embedded and applied by Open and Migrate; Config.Schema isolates a store
// in its own schema.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures Open.
type Config struct {
	// URL is the connection string (postgres://user@host:port/db?...).
	// Required.
	URL string
	// Schema, when set, is created if missing and used through
	// search_path for every table (default: the server's search_path).
	Schema string
	// Owner names this store instance in shard leases (default "local").
	Owner string
	// Leased: Open takes no shard; the node takes and renews expiring
	// leases through AcquireShards and RenewShards (several nodes, design
	// §9). Otherwise Open takes every shard nobody holds, without expiry.
	Leased bool
	// Now is the clock for route expiry, retention and default
	// timestamps (default time.Now).
	Now func() time.Time
	// IdleInTxLimit, when set, is how long PostgreSQL lets one of this
	// store's sessions sit idle inside a transaction before it ends the
	// session (idle_in_transaction_session_timeout), rolling the
	// transaction back. A commit holds its shards' lease rows FOR KEY SHARE
	// until it ends; a node paused or cut off mid-commit would otherwise
	// keep every other node's takeover of those shards waiting until it
	// resumes, however long that is. Several nodes set it
	// below the lease TTL; no statement of a healthy node is idle that long.
	IdleInTxLimit time.Duration
	// MaxConns bounds the connection pool (default 10).
	MaxConns int32
	// Logger receives migration progress (default: discard).
	Logger *slog.Logger
}

// leaseConns bounds the lease pool: the keeper's heartbeat and its
// renewal, acquisition or release (one at a time, sqlq.Epochs), and a
// leaving node's release beside them.
const leaseConns = 3

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c Config) withDefaults() Config {
	if c.Owner == "" {
		c.Owner = "local"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 10
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

func (c Config) validate() error {
	if c.URL == "" {
		return errors.New("postgres: Config.URL is required")
	}
	if c.Schema != "" && !schemaName.MatchString(c.Schema) {
		return fmt.Errorf("postgres: Config.Schema %q must be a lower-case identifier", c.Schema)
	}
	return nil
}

// Store is the PostgreSQL engine. It is safe for concurrent use.
//
// Besides the methods listed with it, Store has every store.Store method
// whose SQL both engines share (the reads and lists, snapshots, retention,
// API keys, idempotency, routes, inbox reads and leases), promoted from the
// embedded sqlq.DB: see package store/sqlq.
type Store struct {
	queries // reads, retention and admin statements shared with store/sqlite

	cfg  Config
	pool *pgxpool.Pool
	// leasePool runs the lease and membership writes (sqlq.Conn.LeaseTx):
	// a renewal never waits for one of pool's connections.
	leasePool *pgxpool.Pool
	sqldb     *sql.DB // the pool seen through database/sql, for goose
	now       func() time.Time

	commitMu sync.Mutex // serializes Commit: positions follow commit order
	// afterPrefetch, when set (tests only), runs inside Commit between the
	// prefetch and the unit batch, to stage the races that the in-batch
	// conflict handling exists for.
	afterPrefetch func()
	// holeWait bounds LoadAllEvents' wait for in-flight journal positions
	// (zero: defaultHoleWait); tests shorten it.
	holeWait time.Duration

	epochs sqlq.Epochs // the shard epochs this instance holds

	gate *primaryGate // the primary last seen and the latest failover (failover.go)

	mu     sync.Mutex
	closed bool
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.ExpiringLeases = (*Store)(nil)
	_ store.JournalAudit   = (*Store)(nil)
	_ store.Membership     = (*Store)(nil)
)

// Open connects, creates cfg.Schema if needed, applies pending migrations
// and takes every shard lease nobody holds.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	if cfg.Schema != "" {
		if err := createSchema(ctx, pc.ConnConfig.Copy(), cfg.Schema); err != nil {
			return nil, err
		}
	}
	// Session settings are SET after connecting, not sent as startup
	// parameters, which PgBouncer refuses (pooler.go).
	settings := sessionSettings(cfg)
	gate := &primaryGate{now: cfg.Now, logger: cfg.Logger}
	pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if err := settings(ctx, c); err != nil {
			return err
		}
		return gate.check(ctx, c) // failover.go
	}
	lc := pc.Copy()
	lc.MaxConns = leaseConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	leasePool, err := pgxpool.NewWithConfig(ctx, lc)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := &Store{cfg: cfg, pool: pool, leasePool: leasePool, sqldb: stdlib.OpenDBFromPool(pool), now: cfg.Now, gate: gate}
	s.queries = sqlq.New(sqlq.Conn{Engine: "postgres", Read: querier{pool}, Write: querier{pool},
		ReadTx: s.readTx, WriteTx: s.writeTx, Now: cfg.Now, Epochs: &s.epochs,
		LeaseWrite: querier{leasePool}, LeaseTx: func(ctx context.Context, fn func(sqlq.Querier) error) error {
			return writeTx(ctx, leasePool, fn)
		}})
	if err := s.checkSessionPooling(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.checkPrimary(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	if cfg.Leased {
		return s, nil
	}
	if err := sqlq.TakeFreeShards(ctx, s.queries, cfg.Owner); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func createSchema(ctx context.Context, cc *pgx.ConnConfig, schema string) error {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	// The name was validated as a plain identifier, so quoting is enough.
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS "`+schema+`"`); err != nil {
		return fmt.Errorf("postgres: create schema %s: %w", schema, err)
	}
	return nil
}

// Engine returns "postgres".
func (s *Store) Engine() string { return "postgres" }

func (s *Store) migrations() sqlq.Migrations {
	return sqlq.Migrations{Engine: "postgres", Dialect: goose.DialectPostgres, DB: s.sqldb, FS: migrationFS,
		Logger: s.cfg.Logger, Options: func() ([]goose.ProviderOption, error) {
			// One advisory lock per schema: nodes starting together migrate
			// one at a time, while stores in other schemas do not wait on
			// each other.
			h := fnv.New64a()
			_, _ = h.Write([]byte("crewcast-migrate:" + s.cfg.Schema))
			locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64()>>1)), lock.WithLockTimeout(1, 300))
			if err != nil {
				return nil, err
			}
			return []goose.ProviderOption{goose.WithSessionLocker(locker)}, nil
		}}
}

// Migrate applies pending embedded migrations; a second call is a no-op.
func (s *Store) Migrate(ctx context.Context) error { return s.migrations().Up(ctx) }

// MigrationVersion returns the highest applied migration version.
func (s *Store) MigrationVersion(ctx context.Context) (int64, error) {
	return s.migrations().Version(ctx)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// Close closes the pool; calling it again is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.sqldb.Close()
	s.pool.Close()
	s.leasePool.Close()
	if err != nil {
		return fmt.Errorf("postgres: close: %w", err)
	}
	return nil
}

// notFound maps pgx.ErrNoRows to actor.ErrNotFound, in one place.
func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return actor.ErrNotFound
	}
	return err
}
