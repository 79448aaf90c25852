package sqlq

import (
	"context"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

const inboxCols = `provider, event_id, message_id, payload, received_at, target, processed_at`

// scanInbox reads a row of inboxCols.
func scanInbox(r Rows) (store.InboxEntry, error) {
	var e store.InboxEntry
	var recv, proc int64
	err := r.Scan(&e.Provider, &e.EventID, &e.MessageID, &e.Payload, &recv, &e.Target, &proc)
	e.ReceivedAt, e.ProcessedAt = store.FromNanos(recv), store.FromNanos(proc)
	return e, err
}

// PendingInbox returns up to limit unprocessed entries in arrival order,
// after the given entry (zero value, or an entry no longer stored: from the
// start, which is safe because processing is idempotent).
func (d DB) PendingInbox(ctx context.Context, after store.InboxRef, limit int) ([]store.InboxEntry, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	out, err := queryAll(ctx, d.c.Read, scanInbox, `SELECT `+inboxCols+` FROM inbox
		WHERE processed_at = 0 AND id > COALESCE((SELECT id FROM inbox WHERE provider = ? AND event_id = ?), 0)
		ORDER BY id LIMIT ?`, after.Provider, after.EventID, limit)
	if err != nil {
		return nil, d.errorf("pending inbox: %w", err)
	}
	return out, nil
}

// SelectInboxByMessageID is InboxByMessageID's statement. Its
// non-empty message_id test repeats the partial index inbox_message's condition
// so that the planner may use the index (it cannot prove "message_id = ?"
// implies it); without it SQLite read every inbox row of the provider.
const SelectInboxByMessageID = `SELECT ` + inboxCols + ` FROM inbox
		WHERE provider = ? AND message_id = ? AND message_id <> '' AND processed_at = 0 ORDER BY id`

// InboxByMessageID returns the unprocessed entries for a provider message
// id, in arrival order.
func (d DB) InboxByMessageID(ctx context.Context, provider, messageID string) ([]store.InboxEntry, error) {
	if messageID == "" {
		return nil, nil
	}
	out, err := queryAll(ctx, d.c.Read, scanInbox, SelectInboxByMessageID, provider, messageID)
	if err != nil {
		return nil, d.errorf("inbox by message id: %w", err)
	}
	return out, nil
}

// PurgeInbox deletes entries processed before t and returns how many.
func (d DB) PurgeInbox(ctx context.Context, processedBefore time.Time) (int, error) {
	n, err := d.c.Write.Exec(ctx, `DELETE FROM inbox WHERE processed_at <> 0 AND processed_at < ?`,
		store.Nanos(processedBefore))
	if err != nil {
		return 0, d.errorf("purge inbox: %w", err)
	}
	return int(n), nil
}

// ---- routes ----

// GetRoute returns the route for key, or actor.ErrNotFound when it is
// missing or expired by the injected clock.
func (d DB) GetRoute(ctx context.Context, key string) (store.Route, error) {
	r := store.Route{Key: key}
	var exp int64
	if err := d.c.Read.QueryRow(ctx, `SELECT value, expires_at FROM routes WHERE key = ?`, key).Scan(&r.Value, &exp); err != nil {
		return store.Route{}, d.errorf("get route: %w", err)
	}
	r.ExpiresAt = store.FromNanos(exp)
	if exp != 0 && !d.c.Now().Before(r.ExpiresAt) {
		return store.Route{}, d.errorf("get route: %w", actor.ErrNotFound)
	}
	return r, nil
}

// GetRoutes returns the routes of keys that exist and have not expired,
// by key, in one query (missing keys are simply absent). See
// store.RouteBatchReader.
func (d DB) GetRoutes(ctx context.Context, keys []string) (map[string]store.Route, error) {
	out := make(map[string]store.Route, len(keys))
	for len(keys) > 0 {
		n := min(len(keys), 500)
		args := make([]any, n)
		for i, k := range keys[:n] {
			args[i] = k
		}
		keys = keys[n:]
		rs, err := queryAll(ctx, d.c.Read, func(r Rows) (store.Route, error) {
			var rt store.Route
			var exp int64
			err := r.Scan(&rt.Key, &rt.Value, &exp)
			rt.ExpiresAt = store.FromNanos(exp)
			return rt, err
		}, `SELECT key, value, expires_at FROM routes WHERE key IN (`+strings.TrimSuffix(strings.Repeat("?, ", n), ", ")+`)`, args...)
		if err != nil {
			return nil, d.errorf("get routes: %w", err)
		}
		now := d.c.Now()
		for _, rt := range rs {
			if rt.ExpiresAt.IsZero() || now.Before(rt.ExpiresAt) {
				out[rt.Key] = rt
			}
		}
	}
	return out, nil
}

// DeleteRoute removes a route; a missing one is not an error.
func (d DB) DeleteRoute(ctx context.Context, key string) error {
	if _, err := d.c.Write.Exec(ctx, `DELETE FROM routes WHERE key = ?`, key); err != nil {
		return d.errorf("delete route: %w", err)
	}
	return nil
}
