package sqlq

import (
	"context"
	"slices"
	"strconv"

	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// ---- users ----

const userCols = `id, email, name, role, password_hash, created_at, updated_at, disabled_at, session_epoch, must_change_password`

func scanUser(r Row) (store.User, error) {
	var u store.User
	var created, updated, disabled, mustChange int64
	if err := r.Scan(&u.ID, &u.Email, &u.Name, &u.Role, &u.PasswordHash, &created, &updated, &disabled, &u.SessionEpoch, &mustChange); err != nil {
		return store.User{}, err
	}
	u.MustChangePassword = mustChange != 0
	u.CreatedAt, u.UpdatedAt, u.DisabledAt = store.FromNanos(created), store.FromNanos(updated), store.FromNanos(disabled)
	return u, nil
}

// CreateUser stores u and its audit entries in one transaction;
// store.ErrEmailTaken when the email is used.
func (d DB) CreateUser(ctx context.Context, u store.User, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `INSERT INTO users (`+userCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (email) DO NOTHING`, u.ID, u.Email, u.Name, u.Role, u.PasswordHash,
			store.Nanos(OrNow(u.CreatedAt, now)), store.Nanos(OrNow(u.UpdatedAt, now)), store.Nanos(u.DisabledAt), u.SessionEpoch,
			boolInt(u.MustChangePassword))
		if err != nil {
			return err
		}
		if n == 0 {
			return store.ErrEmailTaken
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("create user: %w", err)
	}
	return nil
}

// UserByID returns the user or actor.ErrNotFound.
func (d DB) UserByID(ctx context.Context, id string) (store.User, error) {
	u, err := scanUser(d.c.Read.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = ?`, id))
	if err != nil {
		return store.User{}, d.errorf("user by id: %w", err)
	}
	return u, nil
}

// UserByEmail returns the user or actor.ErrNotFound.
func (d DB) UserByEmail(ctx context.Context, email string) (store.User, error) {
	u, err := scanUser(d.c.Read.QueryRow(ctx, `SELECT `+userCols+` FROM users WHERE email = ?`, email))
	if err != nil {
		return store.User{}, d.errorf("user by email: %w", err)
	}
	return u, nil
}

// ListUsers returns every user, oldest first.
func (d DB) ListUsers(ctx context.Context) ([]store.User, error) {
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.User, error) { return scanUser(r) },
		`SELECT `+userCols+` FROM users ORDER BY created_at, id`)
	if err != nil {
		return nil, d.errorf("list users: %w", err)
	}
	return out, nil
}

// UpdateUser replaces the user's fields (not CreatedAt) and appends its
// audit entries in one transaction.
func (d DB) UpdateUser(ctx context.Context, u store.User, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error { return updateUser(ctx, q, now, u, audit) })
	if err != nil {
		return d.errorf("update user %q: %w", u.ID, err)
	}
	return nil
}

// ChangePassword stores u as UpdateUser does and ends every session of
// the user but keep (a session id hash), in one transaction.
func (d DB) ChangePassword(ctx context.Context, u store.User, keep []byte, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error {
		if err := updateUser(ctx, q, now, u, audit); err != nil {
			return err
		}
		_, err := q.Exec(ctx, `DELETE FROM sessions WHERE user_id = ? AND id_hash <> ?`, u.ID, keep)
		return err
	})
	if err != nil {
		return d.errorf("change password of %q: %w", u.ID, err)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// updateUser is UpdateUser's transaction body.
func updateUser(ctx context.Context, q Querier, now time.Time, u store.User, audit []store.AuditEntry) error {
	var other int64
	if err := q.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE email = ? AND id <> ?`, u.Email, u.ID).Scan(&other); err != nil {
		return err
	}
	if other > 0 {
		return store.ErrEmailTaken
	}
	n, err := q.Exec(ctx, `UPDATE users SET email = ?, name = ?, role = ?, password_hash = ?, updated_at = ?,
		disabled_at = ?, session_epoch = ?, must_change_password = ? WHERE id = ?`, u.Email, u.Name, u.Role, u.PasswordHash,
		store.Nanos(OrNow(u.UpdatedAt, now)), store.Nanos(u.DisabledAt), u.SessionEpoch, boolInt(u.MustChangePassword), u.ID)
	if err != nil {
		return err
	}
	if n == 0 {
		return actor.ErrNotFound
	}
	return appendAudit(ctx, q, now, audit)
}

// ---- audit log ----

// InsertAudit appends one audit entry (arguments: AuditArgs).
const InsertAudit = `INSERT INTO audit_log (at, actor_type, actor_id, actor_name, action, target, ip) VALUES (?, ?, ?, ?, ?, ?, ?)`

// AuditArgs returns InsertAudit's arguments for e.
func AuditArgs(e *store.AuditEntry, now time.Time) []any {
	return []any{store.Nanos(OrNow(e.At, now)), e.Actor.Type, e.Actor.ID, e.Actor.Name, e.Action, e.Target, e.Actor.IP}
}

// AppendAuditIn appends entries through q, inside the caller's write
// transaction, so that they commit with the change they record.
func AppendAuditIn(ctx context.Context, q Querier, now time.Time, entries []store.AuditEntry) error {
	return appendAudit(ctx, q, now, entries)
}

func appendAudit(ctx context.Context, q Querier, now time.Time, entries []store.AuditEntry) error {
	for i := range entries {
		if _, err := q.Exec(ctx, InsertAudit, AuditArgs(&entries[i], now)...); err != nil {
			return err
		}
	}
	return nil
}

// AppendAudit appends entries in one transaction.
func (d DB) AppendAudit(ctx context.Context, entries ...store.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	now := d.c.Now()
	if err := d.c.WriteTx(ctx, func(q Querier) error { return appendAudit(ctx, q, now, entries) }); err != nil {
		return d.errorf("append audit: %w", err)
	}
	return nil
}

// ListAudit returns entries newest first, one page at a time.
func (d DB) ListAudit(ctx context.Context, aq store.AuditQuery) ([]store.AuditEntry, string, error) {
	limit := store.ClampLimit(aq.Limit, 100, 10000)
	var conds []string
	var args []any
	if aq.Cursor != "" {
		p, err := store.DecodeCursor(aq.Cursor, 1)
		if err != nil {
			return nil, "", err
		}
		id, err := store.CursorInt(p[0])
		if err != nil {
			return nil, "", err
		}
		conds, args = append(conds, "id < ?"), append(args, id)
	}
	if !aq.Since.IsZero() {
		conds, args = append(conds, "at >= ?"), append(args, store.Nanos(aq.Since))
	}
	if !aq.Until.IsZero() {
		conds, args = append(conds, "at < ?"), append(args, store.Nanos(aq.Until))
	}
	if aq.Actor != "" {
		conds, args = append(conds, "actor_id = ?"), append(args, aq.Actor)
	}
	if aq.Action != "" {
		conds, args = append(conds, "action = ?"), append(args, aq.Action)
	}
	args = append(args, limit+1)
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.AuditEntry, error) {
		var e store.AuditEntry
		var at int64
		err := r.Scan(&e.ID, &at, &e.Actor.Type, &e.Actor.ID, &e.Actor.Name, &e.Action, &e.Target, &e.Actor.IP)
		e.At = store.FromNanos(at)
		return e, err
	}, `SELECT id, at, actor_type, actor_id, actor_name, action, target, ip FROM audit_log`+where(conds)+
		` ORDER BY id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, "", d.errorf("list audit: %w", err)
	}
	out, next := page(out, limit, func(e store.AuditEntry) string { return store.EncodeCursor(strconv.FormatInt(e.ID, 10)) })
	return out, next, nil
}

// PurgeAudit deletes entries older than before (audit retention) and
// appends audit, the entries of the pass that purges, in one transaction.
func (d DB) PurgeAudit(ctx context.Context, before time.Time, audit ...store.AuditEntry) (int, error) {
	now := d.c.Now()
	var n int64
	err := d.c.WriteTx(ctx, func(q Querier) error {
		var err error
		if n, err = q.Exec(ctx, `DELETE FROM audit_log WHERE at < ?`, store.Nanos(before)); err != nil {
			return err
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return 0, d.errorf("purge audit: %w", err)
	}
	return int(n), nil
}

// DeleteUser stores u (disabled by the caller) and revokes its keys, with
// an audit entry per revoked key, in one transaction.
func (d DB) DeleteUser(ctx context.Context, u store.User, keyAudit store.AuditEntry, audit ...store.AuditEntry) ([]string, error) {
	now := d.c.Now()
	at := store.Nanos(OrNow(u.UpdatedAt, now))
	var ids []string
	err := d.c.WriteTx(ctx, func(q Querier) error {
		ids = nil // a retried transaction starts over
		n, err := q.Exec(ctx, `UPDATE users SET email = ?, name = ?, role = ?, password_hash = ?, updated_at = ?,
			disabled_at = ?, session_epoch = ? WHERE id = ?`, u.Email, u.Name, u.Role, u.PasswordHash,
			at, store.Nanos(u.DisabledAt), u.SessionEpoch, u.ID)
		if err != nil {
			return err
		}
		if n == 0 {
			return actor.ErrNotFound
		}
		if ids, err = queryAll(ctx, q, func(r Rows) (string, error) {
			var id string
			return id, r.Scan(&id)
		}, `SELECT id FROM api_keys WHERE created_by = ? AND revoked_at = 0 ORDER BY created_at, id`, u.ID); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE created_by = ? AND revoked_at = 0`, at, u.ID); err != nil {
			return err
		}
		entries := slices.Clone(audit)
		for _, id := range ids {
			e := keyAudit
			e.Target = id
			entries = append(entries, e)
		}
		return appendAudit(ctx, q, now, entries)
	})
	if err != nil {
		return nil, d.errorf("delete user %q: %w", u.ID, err)
	}
	return ids, nil
}
