package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
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
		recv[i], proc[i] = store.Nanos(orNow(e.ReceivedAt, now)), store.Nanos(e.ProcessedAt)
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

const inboxCols = `provider, event_id, message_id, payload, received_at, target, processed_at`

func scanInbox(rows pgx.Rows) ([]store.InboxEntry, error) {
	var out []store.InboxEntry
	err := forEach(rows, func() error {
		var e store.InboxEntry
		var recv, proc int64
		if err := rows.Scan(&e.Provider, &e.EventID, &e.MessageID, &e.Payload, &recv, &e.Target, &proc); err != nil {
			return err
		}
		e.ReceivedAt, e.ProcessedAt = store.FromNanos(recv), store.FromNanos(proc)
		out = append(out, e)
		return nil
	})
	return out, err
}

// PendingInbox returns up to limit unprocessed entries in arrival order,
// after the given entry (zero value, or an entry no longer stored: from the
// start, which is safe because processing is idempotent).
func (s *Store) PendingInbox(ctx context.Context, after store.InboxRef, limit int) ([]store.InboxEntry, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	rows, err := s.pool.Query(ctx, `SELECT `+inboxCols+` FROM inbox
		WHERE processed_at = 0 AND id > COALESCE((SELECT id FROM inbox WHERE provider = $1 AND event_id = $2), 0)
		ORDER BY id LIMIT $3`, after.Provider, after.EventID, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending inbox: %w", err)
	}
	out, err := scanInbox(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending inbox: %w", err)
	}
	return out, nil
}

// InboxByMessageID returns the unprocessed entries for a provider message
// id, in arrival order.
func (s *Store) InboxByMessageID(ctx context.Context, provider, messageID string) ([]store.InboxEntry, error) {
	if messageID == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+inboxCols+` FROM inbox
		WHERE provider = $1 AND message_id = $2 AND processed_at = 0 ORDER BY id`, provider, messageID)
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox by message id: %w", err)
	}
	out, err := scanInbox(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: inbox by message id: %w", err)
	}
	return out, nil
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

// PurgeInbox deletes entries processed before t and returns how many.
func (s *Store) PurgeInbox(ctx context.Context, processedBefore time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM inbox WHERE processed_at <> 0 AND processed_at < $1`, store.Nanos(processedBefore))
	if err != nil {
		return 0, fmt.Errorf("postgres: purge inbox: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ---- routes ----

// PutRoute creates or replaces a route.
func (s *Store) PutRoute(ctx context.Context, r store.Route) error {
	if _, err := s.pool.Exec(ctx, sqlPutRoutes, []string{r.Key}, []string{r.Value}, []int64{store.Nanos(r.ExpiresAt)}); err != nil {
		return fmt.Errorf("postgres: put route: %w", err)
	}
	return nil
}

// GetRoute returns the route for key, or actor.ErrNotFound when it is
// missing or expired by the injected clock.
func (s *Store) GetRoute(ctx context.Context, key string) (store.Route, error) {
	r := store.Route{Key: key}
	var exp int64
	if err := s.pool.QueryRow(ctx, `SELECT value, expires_at FROM routes WHERE key = $1`, key).Scan(&r.Value, &exp); err != nil {
		return store.Route{}, fmt.Errorf("postgres: get route: %w", notFound(err))
	}
	r.ExpiresAt = store.FromNanos(exp)
	if exp != 0 && !s.now().Before(r.ExpiresAt) {
		return store.Route{}, fmt.Errorf("postgres: get route: %w", actor.ErrNotFound)
	}
	return r, nil
}

// DeleteRoute removes a route; a missing one is not an error.
func (s *Store) DeleteRoute(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM routes WHERE key = $1`, key); err != nil {
		return fmt.Errorf("postgres: delete route: %w", err)
	}
	return nil
}
