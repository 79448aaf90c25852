package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// crewcast behind PgBouncer (docs/deploy.md): session pooling works, and
// transaction (or statement) pooling is refused at start. Several nodes
// wake each other with LISTEN/NOTIFY, and a LISTEN lives in a session:
// behind a transaction pooler it is run on whichever server connection the
// pooler lent for that one statement, and the notifications never reach
// crewcast's connection (pgbouncer issue #655). Rather than run with
// wake-ups silently lost, Open checks one round trip and stops with a
// clear error.

// ErrTransactionPooling is Open's error when LISTEN/NOTIFY does not reach
// the listening connection (a transaction-mode pooler in between).
var ErrTransactionPooling = errors.New("postgres: LISTEN/NOTIFY does not reach this connection: " +
	"a connection pooler in transaction or statement mode is in between (PgBouncer pool_mode = transaction). " +
	"crewcast needs session pooling (pool_mode = session) or a direct connection")

// listenProbeWait bounds the wait for the probe's notification; on a
// direct connection or behind a session pooler it arrives in milliseconds.
var listenProbeWait = 3 * time.Second

// sessionSettings SETs the session parameters crewcast relies on after
// each connection is made. PgBouncer refuses unknown startup parameters
// ("unsupported startup parameter"), so they are not sent as such.
func sessionSettings(cfg Config) func(context.Context, *pgx.Conn) error {
	sets := []string{"SET synchronous_commit = on"}
	if cfg.IdleInTxLimit > 0 {
		sets = append(sets, "SET idle_in_transaction_session_timeout = "+strconv.FormatInt(max(cfg.IdleInTxLimit.Milliseconds(), 1), 10))
	}
	if cfg.Schema != "" { // a lower-case identifier (Config.validate)
		sets = append(sets, "SET search_path = "+cfg.Schema)
	}
	q := strings.Join(sets, "; ")
	return func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, q); err != nil {
			return fmt.Errorf("postgres: session settings: %w", err)
		}
		return nil
	}
}

// checkSessionPooling LISTENs on a fresh channel on one connection,
// NOTIFYs it from another, and waits for the notification.
func (s *Store) checkSessionPooling(ctx context.Context) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	channel := "crewcast_probe_" + hex.EncodeToString(b[:])
	lc, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	listener := lc.Hijack() // a connection that LISTENed never goes back to the pool
	defer func() { _ = listener.Close(context.WithoutCancel(ctx)) }()
	if _, err := listener.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("postgres: listen probe: %w", err)
	}
	nc, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	_, err = nc.Exec(ctx, "NOTIFY "+channel+", 'probe'")
	nc.Release()
	if err != nil {
		return fmt.Errorf("postgres: notify probe: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, listenProbeWait)
	defer cancel()
	n, err := listener.WaitForNotification(wctx)
	switch {
	case err == nil && n.Channel == channel:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil || wctx.Err() != nil:
		return ErrTransactionPooling
	default:
		return fmt.Errorf("postgres: listen probe: %w", err)
	}
}
