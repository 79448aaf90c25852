package sqlq

import (
	"context"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Load calls fn for every event of key after afterSeq, in order. Events are
// read in pages so that a slow fn pins no read transaction or connection.
func (d DB) Load(ctx context.Context, key string, afterSeq uint64, fn func(actor.Event) error) error {
	const page = 1000
	for {
		evs, err := queryAll(ctx, d.c.Read, func(r Rows) (actor.Event, error) {
			var e actor.Event
			var seq, t int64
			err := r.Scan(&seq, &e.Type, &e.Data, &t)
			e.Seq, e.Time = uint64(seq), store.FromNanos(t)
			return e, err
		}, `SELECT seq, type, data, time FROM journal WHERE key = ? AND seq > ? ORDER BY seq LIMIT ?`,
			key, int64(afterSeq), page)
		if err != nil {
			return d.errorf("load %q: %w", key, err)
		}
		for _, e := range evs {
			if err := fn(e); err != nil {
				return err
			}
			afterSeq = e.Seq
		}
		if len(evs) < page {
			return nil
		}
	}
}

// ---- snapshots ----

// SaveSnapshot replaces key's snapshot, with its checksum, atomically.
func (d DB) SaveSnapshot(ctx context.Context, sn actor.Snapshot) error {
	state := sn.State
	if state == nil {
		state = []byte{}
	}
	_, err := d.c.Write.Exec(ctx, `INSERT INTO snapshots (key, seq, state, checksum, time) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, state = excluded.state,
		checksum = excluded.checksum, time = excluded.time`,
		sn.Key, int64(sn.Seq), state, store.SnapshotChecksum(sn.Key, sn.Seq, state), store.Nanos(OrNow(sn.Time, d.c.Now())))
	if err != nil {
		return d.errorf("save snapshot %q: %w", sn.Key, err)
	}
	return nil
}

// LoadSnapshot returns key's snapshot, actor.ErrNotFound, or
// actor.ErrCorruptSnapshot when its bytes do not match the checksum.
func (d DB) LoadSnapshot(ctx context.Context, key string) (actor.Snapshot, error) {
	sn := actor.Snapshot{Key: key}
	var seq, t int64
	var sum []byte
	err := d.c.Read.QueryRow(ctx, `SELECT seq, state, checksum, time FROM snapshots WHERE key = ?`, key).
		Scan(&seq, &sn.State, &sum, &t)
	if err != nil {
		return actor.Snapshot{}, d.errorf("load snapshot %q: %w", key, err)
	}
	sn.Seq = uint64(seq)
	if string(sum) != string(store.SnapshotChecksum(key, sn.Seq, sn.State)) {
		return actor.Snapshot{}, d.errorf("load snapshot %q: %w", key, actor.ErrCorruptSnapshot)
	}
	sn.Time = store.FromNanos(t)
	return sn, nil
}

// DeleteSnapshot removes key's snapshot; a missing one is not an error.
func (d DB) DeleteSnapshot(ctx context.Context, key string) error {
	if _, err := d.c.Write.Exec(ctx, `DELETE FROM snapshots WHERE key = ?`, key); err != nil {
		return d.errorf("delete snapshot %q: %w", key, err)
	}
	return nil
}

// ---- reminders ----

// DueReminders returns up to limit reminders due at or before before,
// earliest first.
func (d DB) DueReminders(ctx context.Context, before time.Time, limit int) ([]actor.Reminder, error) {
	limit = store.ClampLimit(limit, 1000, 100000)
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (actor.Reminder, error) {
		var rem actor.Reminder
		var due int64
		err := r.Scan(&rem.Key, &rem.Name, &due)
		rem.Due = store.FromNanos(due)
		return rem, err
	}, `SELECT key, name, due FROM reminders WHERE due <= ? ORDER BY due, key, name LIMIT ?`, store.Nanos(before), limit)
	if err != nil {
		return nil, d.errorf("due reminders: %w", err)
	}
	return out, nil
}
