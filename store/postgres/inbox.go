package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

// InsertInbox stores entries with one statement (atomic on its own);
// isNew[i] is false when (Provider, EventID) was already stored (that row
// is left untouched), appears earlier in entries, or is in the replay
// record (IngestInbox).
func (s *Store) InsertInbox(ctx context.Context, entries []store.InboxEntry) ([]bool, error) {
	res, err := s.IngestInbox(ctx, entries)
	return store.InboxIsNew(res), err
}

// sqlIngestInbox records every entry's replay hash and inserts the inbox
// rows of the hashes it recorded, in one statement: no round trip more
// than the inbox insert alone. It returns 'n' for each inbox row it
// inserted and 'k' for each entry that is not a replay (its hash was
// recorded now, or its inbox row is there: a duplicate, or a row stored
// before the record existed); any other entry is a replay. ORDER BY ord
// keeps arrival order, so ids (PendingInbox order) follow the order of
// entries. Concurrent ingests of one event: the record's primary key
// makes all but one wait and then skip, so exactly one sees 'n' (a loser
// whose statement began before the winner committed finds no inbox row
// in its snapshot and reports a replay: not new either way).
const sqlIngestInbox = `WITH u AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bigint[], $6::text[], $7::bigint[], $8::bytea[])
			WITH ORDINALITY AS u(p, e, m, pl, r, t, pr, h, ord)
	), seen AS (
		INSERT INTO webhook_seen (id_hash, seen_at) SELECT h, $9::bigint FROM u ORDER BY ord
		ON CONFLICT (id_hash) DO NOTHING RETURNING id_hash
	), ins AS (
		INSERT INTO inbox (provider, event_id, message_id, payload, received_at, target, processed_at)
		SELECT p, e, m, pl, r, t, pr FROM u WHERE h IN (SELECT id_hash FROM seen) ORDER BY ord
		ON CONFLICT (provider, event_id) DO NOTHING RETURNING provider, event_id
	)
	SELECT 'n', provider, event_id FROM ins
	UNION ALL
	SELECT 'k', u.p, u.e FROM u WHERE u.h IN (SELECT id_hash FROM seen)
		OR EXISTS (SELECT 1 FROM inbox i WHERE i.provider = u.p AND i.event_id = u.e)`

// IngestInbox is InsertInbox with what it found per entry, the replay
// record written by the same statement as the inbox rows. See
// store.Inbox.
func (s *Store) IngestInbox(ctx context.Context, entries []store.InboxEntry) ([]store.InboxResult, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	now := s.now()
	n := len(entries)
	prov, ids, msgs, targets := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads, hashes := make([][]byte, n), make([][]byte, n)
	recv, proc := make([]int64, n), make([]int64, n)
	for i, e := range entries {
		prov[i], ids[i], msgs[i], targets[i] = e.Provider, e.EventID, e.MessageID, e.Target
		payloads[i], hashes[i] = e.Payload, store.ReplayHash(e.Provider, e.EventID)
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
		recv[i], proc[i] = store.Nanos(sqlq.OrNow(e.ReceivedAt, now)), store.Nanos(e.ProcessedAt)
	}
	rows, err := s.pool.Query(ctx, sqlIngestInbox, prov, ids, msgs, payloads, recv, targets, proc, hashes, store.Nanos(now))
	if err != nil {
		return nil, fmt.Errorf("postgres: insert inbox: %w", err)
	}
	inserted, known := map[[2]string]bool{}, map[[2]string]bool{}
	err = forEach(rows, func() error {
		var kind string
		var k [2]string
		if err := rows.Scan(&kind, &k[0], &k[1]); err != nil {
			return err
		}
		if kind == "n" {
			inserted[k] = true
		} else {
			known[k] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: insert inbox: %w", err)
	}
	res := make([]store.InboxResult, n)
	for i := range entries {
		k := [2]string{prov[i], ids[i]}
		switch {
		case inserted[k]:
			res[i] = store.InboxNew
			delete(inserted, k) // a later duplicate in entries is not new
		case known[k]:
			res[i] = store.InboxDuplicate
		default:
			res[i] = store.InboxReplay
		}
	}
	return res, nil
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
