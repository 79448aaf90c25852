package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// writeReq is one write call waiting for a group commit: an InsertInbox
// (entries) or a Commit (units).
type writeReq struct {
	entries []store.InboxEntry
	isNew   []bool
	units   []actor.Unit
	results []error
	err     error
	done    chan struct{} // closed once a leader committed (or failed) it
	lead    chan struct{} // receives when this call is to lead the next round
}

// writeGroup coalesces concurrent writes — webhook inbox inserts and
// actors' commit batches alike — into one transaction (group commit): with
// synchronous=FULL every transaction costs an fsync, so writes arriving
// together share one instead of queueing for one each. No goroutine runs in
// the background: one waiting caller at a time leads a round, committing
// every call queued so far (its own included), then hands the lead to the
// first call queued behind it.
type writeGroup struct {
	mu      sync.Mutex
	queue   []*writeReq
	leading bool
	rounds  int // transactions committed or tried, for tests
	// queued, when set (tests only), is called under mu after each enqueue
	// with the queue length.
	queued func(n int)
}

// write queues req for the next group-commit round and returns when it was
// committed or failed. Once queued, a call waits for its round even if ctx
// is canceled: the round is bounded by the busy timeout.
func (s *Store) write(ctx context.Context, req *writeReq) {
	req.done, req.lead = make(chan struct{}), make(chan struct{}, 1)
	g := &s.writes
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if g.queued != nil {
		g.queued(len(g.queue))
	}
	if !g.leading {
		g.leading = true
		req.lead <- struct{}{}
	}
	g.mu.Unlock()
	select {
	case <-req.done:
		return
	case <-req.lead:
	}
	g.mu.Lock()
	batch := g.queue // req is in it: only leaders drain the queue
	g.queue = nil
	g.rounds++
	g.mu.Unlock()
	// The round serves other callers too: the leader's cancellation must
	// not abort it.
	err := s.writeBatch(context.WithoutCancel(ctx), batch)
	for _, r := range batch {
		if err != nil {
			r.isNew, r.results, r.err = nil, nil, err
		}
		close(r.done)
	}
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].lead <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
}

// InsertInbox stores entries durably; isNew[i] is false when (Provider,
// EventID) was already stored (that row is left untouched) or appears
// earlier in the same commit. Concurrent calls (and commits) may share one
// transaction; a failed transaction fails every call in it, so none
// reports success for what was not stored.
func (s *Store) InsertInbox(ctx context.Context, entries []store.InboxEntry) ([]bool, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: insert inbox: %w", err)
	}
	req := &writeReq{entries: entries}
	s.write(ctx, req)
	return req.isNew, req.err
}

// writeBatch runs every request of a round in one transaction: inbox
// entries are inserted, commit units applied each in its own savepoint,
// and each request gets its own results.
func (s *Store) writeBatch(ctx context.Context, batch []*writeReq) error {
	now := s.now()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	ts := &txStmts{ctx: ctx, tx: tx, bound: map[*sql.Stmt]*sql.Stmt{}}
	// The lease rows cannot change while this transaction holds the write
	// lock, so each shard is checked once per round.
	fenced := map[int]bool{}
	for _, r := range batch {
		if len(r.units) > 0 {
			r.results, err = s.commitUnits(ts, r.units, fenced, now)
			if err != nil {
				return err
			}
			continue
		}
		r.isNew = make([]bool, len(r.entries))
		for i, e := range r.entries {
			payload := e.Payload
			if payload == nil {
				payload = []byte{}
			}
			res, err := ts.exec(s.st.insInbox, e.Provider, e.EventID, e.MessageID, payload,
				store.Nanos(orNow(e.ReceivedAt, now)), e.Target, store.Nanos(e.ProcessedAt))
			if err != nil {
				return fmt.Errorf("sqlite: insert inbox: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("sqlite: insert inbox: %w", err)
			}
			r.isNew[i] = n == 1
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

const inboxCols = `provider, event_id, message_id, payload, received_at, target, processed_at`

func scanInbox(rows *sql.Rows) ([]store.InboxEntry, error) {
	defer rows.Close()
	var out []store.InboxEntry
	for rows.Next() {
		var e store.InboxEntry
		var recv, proc int64
		if err := rows.Scan(&e.Provider, &e.EventID, &e.MessageID, &e.Payload, &recv, &e.Target, &proc); err != nil {
			return nil, err
		}
		e.ReceivedAt, e.ProcessedAt = store.FromNanos(recv), store.FromNanos(proc)
		out = append(out, e)
	}
	return out, rows.Err()
}

// PendingInbox returns up to limit unprocessed entries in arrival order,
// after the given entry (zero value: from the start; an entry that no
// longer exists also restarts from the start, which is safe because
// processing is idempotent).
func (s *Store) PendingInbox(ctx context.Context, after store.InboxRef, limit int) ([]store.InboxEntry, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	rows, err := s.r.QueryContext(ctx, `SELECT `+inboxCols+` FROM inbox
		WHERE processed_at = 0 AND id > COALESCE((SELECT id FROM inbox WHERE provider = ? AND event_id = ?), 0)
		ORDER BY id LIMIT ?`, after.Provider, after.EventID, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending inbox: %w", err)
	}
	out, err := scanInbox(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending inbox: %w", err)
	}
	return out, nil
}

// InboxByMessageID returns the unprocessed entries for a provider message
// id, in arrival order.
func (s *Store) InboxByMessageID(ctx context.Context, provider, messageID string) ([]store.InboxEntry, error) {
	if messageID == "" {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+inboxCols+` FROM inbox
		WHERE provider = ? AND message_id = ? AND processed_at = 0 ORDER BY id`, provider, messageID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: inbox by message id: %w", err)
	}
	out, err := scanInbox(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: inbox by message id: %w", err)
	}
	return out, nil
}

// AckInbox marks entries processed (keeping an earlier processing time).
func (s *Store) AckInbox(ctx context.Context, refs []store.InboxRef) error {
	if len(refs) == 0 {
		return nil
	}
	now := store.Nanos(s.now())
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: ack inbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	ack := tx.StmtContext(ctx, s.st.ackInbox)
	for _, r := range refs {
		if _, err := ack.ExecContext(ctx, now, r.Target, r.Target, r.Provider, r.EventID); err != nil {
			return fmt.Errorf("sqlite: ack inbox: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: ack inbox: commit: %w", err)
	}
	return nil
}

// PurgeInbox deletes entries processed before t and returns how many.
func (s *Store) PurgeInbox(ctx context.Context, processedBefore time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM inbox WHERE processed_at <> 0 AND processed_at < ?`,
		store.Nanos(processedBefore))
	if err != nil {
		return 0, fmt.Errorf("sqlite: purge inbox: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlite: purge inbox: %w", err)
	}
	return int(n), nil
}

// ---- routes ----

// PutRoute creates or replaces a route.
func (s *Store) PutRoute(ctx context.Context, r store.Route) error {
	if _, err := s.st.putRoute.ExecContext(ctx, r.Key, r.Value, store.Nanos(r.ExpiresAt)); err != nil {
		return fmt.Errorf("sqlite: put route: %w", err)
	}
	return nil
}

// GetRoute returns the route for key, or actor.ErrNotFound when it is
// missing or expired by the injected clock.
func (s *Store) GetRoute(ctx context.Context, key string) (store.Route, error) {
	r := store.Route{Key: key}
	var exp int64
	err := s.r.QueryRowContext(ctx, `SELECT value, expires_at FROM routes WHERE key = ?`, key).Scan(&r.Value, &exp)
	if err != nil {
		return store.Route{}, fmt.Errorf("sqlite: get route: %w", notFound(err))
	}
	r.ExpiresAt = store.FromNanos(exp)
	if exp != 0 && !s.now().Before(r.ExpiresAt) {
		return store.Route{}, fmt.Errorf("sqlite: get route: %w", actor.ErrNotFound)
	}
	return r, nil
}

// DeleteRoute removes a route; a missing one is not an error.
func (s *Store) DeleteRoute(ctx context.Context, key string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM routes WHERE key = ?`, key); err != nil {
		return fmt.Errorf("sqlite: delete route: %w", err)
	}
	return nil
}
