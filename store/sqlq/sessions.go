package sqlq

import (
	"context"
	"time"

	"github.com/crewcast/crewcast/store"
)

// ---- board sessions ----

const sessionCols = `id_hash, user_id, key_id, key_prefix, name, epoch, created_at, expires_at, last_seen_at`

// purgeSessions is the statement that deletes ended sessions.
const purgeSessions = `DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at < ?`

// CreateSession deletes ended sessions, makes room within lim and stores
// s, in one transaction.
func (d DB) CreateSession(ctx context.Context, s store.Session, lim store.SessionLimits) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, purgeSessions, store.Nanos(now), store.Nanos(lim.IdleBefore)); err != nil {
			return err
		}
		col, owner := "key_id", s.KeyID
		if s.UserID != "" {
			col, owner = "user_id", s.UserID
		}
		var mine, all int64
		if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM sessions WHERE `+col+` = ?`, owner).Scan(&mine); err != nil {
			return err
		}
		if lim.PerOwner > 0 && mine >= int64(lim.PerOwner) {
			// The owner's own oldest sessions make room.
			if _, err := q.Exec(ctx, `DELETE FROM sessions WHERE id_hash IN (SELECT id_hash FROM sessions
				WHERE `+col+` = ? ORDER BY expires_at, id_hash LIMIT ?)`, owner, mine-int64(lim.PerOwner)+1); err != nil {
				return err
			}
		} else if lim.Total > 0 {
			if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&all); err != nil {
				return err
			}
			if all >= int64(lim.Total) {
				return store.ErrTooManySessions
			}
		}
		_, err := q.Exec(ctx, `INSERT INTO sessions (`+sessionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.IDHash, s.UserID, s.KeyID, s.KeyPrefix, s.Name, s.Epoch, store.Nanos(OrNow(s.CreatedAt, now)),
			store.Nanos(s.ExpiresAt), store.Nanos(OrNow(s.LastSeen, now)))
		return err
	})
	if err != nil {
		return d.errorf("create session: %w", err)
	}
	return nil
}

// SessionByHash returns the session or actor.ErrNotFound.
func (d DB) SessionByHash(ctx context.Context, idHash []byte) (store.Session, error) {
	var s store.Session
	var created, expires, seen int64
	err := d.c.Read.QueryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id_hash = ?`, idHash).
		Scan(&s.IDHash, &s.UserID, &s.KeyID, &s.KeyPrefix, &s.Name, &s.Epoch, &created, &expires, &seen)
	if err != nil {
		return store.Session{}, d.errorf("session by hash: %w", err)
	}
	s.CreatedAt, s.ExpiresAt, s.LastSeen = store.FromNanos(created), store.FromNanos(expires), store.FromNanos(seen)
	return s, nil
}

// TouchSession moves the session's last use forward to at (never back).
func (d DB) TouchSession(ctx context.Context, idHash []byte, at time.Time) error {
	if _, err := d.c.Write.Exec(ctx, `UPDATE sessions SET last_seen_at = ? WHERE id_hash = ? AND last_seen_at < ?`,
		store.Nanos(at), idHash, store.Nanos(at)); err != nil {
		return d.errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession deletes one session.
func (d DB) DeleteSession(ctx context.Context, idHash []byte) error {
	if _, err := d.c.Write.Exec(ctx, `DELETE FROM sessions WHERE id_hash = ?`, idHash); err != nil {
		return d.errorf("delete session: %w", err)
	}
	return nil
}

// DeleteSessionsOf deletes every session of a user or key.
func (d DB) DeleteSessionsOf(ctx context.Context, owner string) (int, error) {
	if owner == "" {
		return 0, nil // "" is no one's id: it must not match every key session's user_id
	}
	n, err := d.c.Write.Exec(ctx, `DELETE FROM sessions WHERE user_id = ? OR key_id = ?`, owner, owner)
	if err != nil {
		return 0, d.errorf("delete sessions of %q: %w", owner, err)
	}
	return int(n), nil
}

// PurgeSessions deletes sessions past their absolute end or idle too long.
func (d DB) PurgeSessions(ctx context.Context, now, idleBefore time.Time) (int, error) {
	n, err := d.c.Write.Exec(ctx, purgeSessions, store.Nanos(now), store.Nanos(idleBefore))
	if err != nil {
		return 0, d.errorf("purge sessions: %w", err)
	}
	return int(n), nil
}
