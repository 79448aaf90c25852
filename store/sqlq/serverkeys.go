package sqlq

import (
	"context"
	"time"

	"github.com/crewcast/crewcast/store"
)

// EnsureServerKey stores value under name unless a key is there, then
// reads what is stored: of servers starting at once, the first insert
// wins and every one returns its key. See store.ServerKeys.
func (d DB) EnsureServerKey(ctx context.Context, name string, value []byte) ([]byte, error) {
	if _, err := d.c.Write.Exec(ctx, `INSERT INTO server_keys (name, value, created_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO NOTHING`, name, value, store.Nanos(d.c.Now())); err != nil {
		return nil, d.errorf("store server key: %w", err)
	}
	var stored []byte
	// On the writer: the read sees the insert just made (or the one that
	// won over it).
	if err := d.c.Write.QueryRow(ctx, `SELECT value FROM server_keys WHERE name = ?`, name).Scan(&stored); err != nil {
		return nil, d.errorf("read server key: %w", err)
	}
	return stored, nil
}

// ServerKey returns the key stored under name (actor.ErrNotFound when
// there is none).
func (d DB) ServerKey(ctx context.Context, name string) ([]byte, error) {
	var stored []byte
	if err := d.c.Read.QueryRow(ctx, `SELECT value FROM server_keys WHERE name = ?`, name).Scan(&stored); err != nil {
		return nil, d.errorf("read server key: %w", err)
	}
	return stored, nil
}

// PurgeReplays deletes the replay records of events first seen before t
// and returns how many. See store.Inbox.
func (d DB) PurgeReplays(ctx context.Context, seenBefore time.Time) (int, error) {
	n, err := d.c.Write.Exec(ctx, `DELETE FROM webhook_seen WHERE seen_at < ?`, store.Nanos(seenBefore))
	if err != nil {
		return 0, d.errorf("purge replay records: %w", err)
	}
	return int(n), nil
}
