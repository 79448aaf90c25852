package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// InsertInbox stores entries with one statement (atomic on its own);
// isNew[i] is false when (Provider, EventID) was already stored (that row is
// left untouched) or appears earlier in entries. Concurrent inserts of one
// event: the unique index makes all but one wait and then skip, so exactly
// one caller sees isNew.
func (s *Store) InsertInbox(ctx context.Context, entries []store.InboxEntry) ([]bool, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	now := s.now()
	n := len(entries)
	prov, ids, msgs, targets := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads := make([][]byte, n)
	recv, proc := make([]int64, n), make([]int64, n)
	for i, e := range entries {
		prov[i], ids[i], msgs[i], targets[i] = e.Provider, e.EventID, e.MessageID, e.Target
		payloads[i] = e.Payload
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
		recv[i], proc[i] = store.Nanos(sqlq.OrNow(e.ReceivedAt, now)), store.Nanos(e.ProcessedAt)
	}
	// ORDER BY ord keeps arrival order, so ids (PendingInbox order) follow
	// the order of entries.
	rows, err := s.pool.Query(ctx, `INSERT INTO inbox (provider, event_id, message_id, payload, received_at, target, processed_at)
		SELECT p, e, m, pl, r, t, pr FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::text[], $7::bigint[])
			WITH ORDINALITY AS u(p, e, m, pl, r, t, pr, ord) ORDER BY ord
		ON CONFLICT (provider, event_id) DO NOTHING RETURNING provider, event_id`,
		prov, ids, msgs, payloads, recv, targets, proc)
	if err != nil {
		return nil, fmt.Errorf("postgres: insert inbox: %w", err)
	}
	inserted := map[[2]string]bool{}
	err = forEach(rows, func() error {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			return err
		}
		inserted[k] = true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: insert inbox: %w", err)
	}
	isNew := make([]bool, n)
	for i := range entries {
		k := [2]string{prov[i], ids[i]}
		if inserted[k] {
			isNew[i] = true
			delete(inserted, k) // a later duplicate in entries is not new
		}
	}
	return isNew, nil
}

// AckInbox marks entries processed (keeping an earlier processing time).
func (s *Store) AckInbox(ctx context.Context, refs []store.InboxRef) error {
	if len(refs) == 0 {
		return nil
	}
	now := store.Nanos(s.now())
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: ack inbox: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	b := &pgx.Batch{}
	for _, r := range refs {
		b.Queue(sqlAckOne, now, r.Target, r.Provider, r.EventID)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres: ack inbox: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: ack inbox: commit: %w", err)
	}
	return nil
}

// ---- routes ----

// PendingInbox, InboxByMessageID, PurgeInbox, GetRoute and DeleteRoute
// are shared: see sqlq.DB.

// PutRoute creates or replaces a route.
func (s *Store) PutRoute(ctx context.Context, r store.Route) error {
	if _, err := s.pool.Exec(ctx, sqlPutRoutes, []string{r.Key}, []string{r.Value}, []int64{store.Nanos(r.ExpiresAt)}); err != nil {
		return fmt.Errorf("postgres: put route: %w", err)
	}
	return nil
}
