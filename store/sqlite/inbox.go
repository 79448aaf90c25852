package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// writeReq is one write call waiting for a group commit: an InsertInbox
// (entries) or a Commit (units).
type writeReq struct {
	entries []store.InboxEntry
	ingest  []store.InboxResult
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
			r.ingest, r.results, r.err = nil, nil, err
		}
		close(r.done)
	}
	// Still leading, so no other round uses the writer: keep the WAL
	// bounded. A failed checkpoint costs nothing committed; the next
	// round past the bound tries again.
	_ = s.maybeCheckpoint(context.WithoutCancel(ctx))
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].lead <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
}

// InsertInbox stores entries durably; isNew[i] is false when (Provider,
// EventID) was already stored (that row is left untouched), appears
// earlier in the same commit, or is in the replay record (IngestInbox).
// Concurrent calls (and commits) may share one transaction; a failed
// transaction fails every call in it, so none reports success for what
// was not stored.
func (s *Store) InsertInbox(ctx context.Context, entries []store.InboxEntry) ([]bool, error) {
	res, err := s.IngestInbox(ctx, entries)
	return store.InboxIsNew(res), err
}

// IngestInbox is InsertInbox with what it found per entry; the replay
// record of each new entry is written in the same transaction as its
// inbox row. See store.Inbox.
func (s *Store) IngestInbox(ctx context.Context, entries []store.InboxEntry) ([]store.InboxResult, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: insert inbox: %w", err)
	}
	req := &writeReq{entries: entries}
	s.write(ctx, req)
	return req.ingest, req.err
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
	checked := map[int]uint64{}
	for _, r := range batch {
		if len(r.units) > 0 {
			r.results, err = s.commitUnits(ts, r.units, checked, now)
			if err != nil {
				return err
			}
			continue
		}
		r.ingest = make([]store.InboxResult, len(r.entries))
		for i, e := range r.entries {
			if r.ingest[i], err = s.ingestOne(ts, e, now); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

// ingestOne records e's replay hash and, when it is new, stores e. A hash
// already recorded is a duplicate while its inbox row is there (a
// provider retry, or a repeat in the same round) and a replay once
// retention purged it; an inbox row without a record (stored before the
// record existed) is a duplicate.
func (s *Store) ingestOne(ts *txStmts, e store.InboxEntry, now time.Time) (store.InboxResult, error) {
	n, err := rowsAffected(ts.exec(s.st.insSeen, store.ReplayHash(e.Provider, e.EventID), store.Nanos(now)))
	if err != nil {
		return 0, fmt.Errorf("sqlite: insert inbox: replay record: %w", err)
	}
	if n == 0 {
		var rows int
		if err := ts.get(s.st.hasInbox).QueryRowContext(ts.ctx, e.Provider, e.EventID).Scan(&rows); err != nil {
			return 0, fmt.Errorf("sqlite: insert inbox: %w", err)
		}
		if rows == 0 {
			return store.InboxReplay, nil
		}
		return store.InboxDuplicate, nil
	}
	payload := e.Payload
	if payload == nil {
		payload = []byte{}
	}
	n, err = rowsAffected(ts.exec(s.st.insInbox, e.Provider, e.EventID, e.MessageID, payload,
		store.Nanos(sqlq.OrNow(e.ReceivedAt, now)), e.Target, store.Nanos(e.ProcessedAt)))
	if err != nil {
		return 0, fmt.Errorf("sqlite: insert inbox: %w", err)
	}
	if n == 1 {
		return store.InboxNew, nil
	}
	return store.InboxDuplicate, nil
}

func rowsAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
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

// ---- routes ----

// PendingInbox, InboxByMessageID, PurgeInbox, GetRoute and DeleteRoute
// are shared: see sqlq.DB.

// PutRoute creates or replaces a route.
func (s *Store) PutRoute(ctx context.Context, r store.Route) error {
	if _, err := s.st.putRoutes.byN[1].ExecContext(ctx, r.Key, r.Value, store.Nanos(r.ExpiresAt)); err != nil {
		return fmt.Errorf("sqlite: put route: %w", err)
	}
	return nil
}
