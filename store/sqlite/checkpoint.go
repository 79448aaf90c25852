package sqlite

import (
	"context"
	"fmt"
	"os"
	"time"
)

// Bounding the write-ahead log.
//
// SQLite's automatic checkpoint (every 1,000 pages, PASSIVE) copies WAL
// frames into the database but can only restart the log from the
// beginning when, at that moment, no reader still uses a snapshot inside
// it. Under sustained load some reader always does (SSE streams, report
// pages, group activations read while commits land), so the log never
// restarts and grows with every byte written: 93 MB in the project's own
// 30-minute soak (issue 12, finding 11). So after a write round that left
// the log larger than Config.CheckpointBytes, the round's leader runs a
// TRUNCATE checkpoint on the writer connection: it copies what is left,
// waits briefly (checkpointBusy) for the readers still inside the log to
// finish — new readers start on the database file — and truncates the log
// to zero bytes. Readers are short (no read transaction outlives a query),
// so it usually succeeds within milliseconds. When a long read blocks it,
// the log is left as it is and the next try waits checkpointRetry or until
// the log has doubled, so a reader that holds on cannot stall every write;
// each try waits longer the further the log is past the bound (up to the
// busy timeout): past twice the bound, bounding the log matters more than
// a write's latency.

const (
	// defaultCheckpointBytes is Config.CheckpointBytes' default.
	defaultCheckpointBytes = 16 << 20
	// checkpointBusy is how long a TRUNCATE checkpoint waits for readers.
	checkpointBusy = 200 * time.Millisecond
	// checkpointRetry is the pause after a checkpoint readers blocked.
	checkpointRetry = time.Second
)

// walState is the checkpoint bookkeeping; only a write round's leader
// touches it, so rounds serialize its use.
type walState struct {
	blockedAt   time.Time // last checkpoint that readers blocked
	blockedSize int64     // the WAL's size then
	// checkpoints and blocked count TRUNCATE checkpoints run and those
	// readers kept from completing (for tests and measurements).
	checkpoints, blocked int
}

// maybeCheckpoint runs a TRUNCATE checkpoint when the WAL is past
// Config.CheckpointBytes. Errors are returned for the caller to ignore or
// report: the write that preceded it has committed either way.
func (s *Store) maybeCheckpoint(ctx context.Context) error {
	limit := s.cfg.CheckpointBytes
	if limit < 0 {
		return nil
	}
	fi, err := os.Stat(s.cfg.Path + "-wal")
	if err != nil || fi.Size() <= limit {
		return nil // no WAL file (yet) or small enough
	}
	ws := &s.wal
	if !ws.blockedAt.IsZero() && time.Since(ws.blockedAt) < checkpointRetry && fi.Size() < 2*ws.blockedSize {
		return nil
	}
	wait := min(checkpointBusy*time.Duration(fi.Size()/limit), s.cfg.BusyTimeout)
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	defer conn.Close()
	// The writer's busy timeout (for other processes' locks) is long; the
	// wait for readers must not be.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", wait.Milliseconds())); err != nil {
		return fmt.Errorf("sqlite: checkpoint: %w", err)
	}
	var busy, logFrames, done int
	cerr := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done)
	_, rerr := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", s.cfg.BusyTimeout.Milliseconds()))
	ws.checkpoints++
	if cerr != nil || busy != 0 {
		ws.blocked++
		ws.blockedAt, ws.blockedSize = time.Now(), fi.Size()
	} else {
		ws.blockedAt = time.Time{}
	}
	if cerr != nil {
		return fmt.Errorf("sqlite: checkpoint: %w", cerr)
	}
	if rerr != nil {
		return fmt.Errorf("sqlite: checkpoint: restore busy timeout: %w", rerr)
	}
	return nil
}
