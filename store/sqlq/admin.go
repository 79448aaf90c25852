package sqlq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// ---- suppressions ----

// LiftedByStart is the SQL condition (on table suppressions) of
// store.LiftedByStart: the suppressions an inbound START may delete.
const LiftedByStart = `suppressions.reason IN ('` + store.ReasonStop + `', '` + store.ReasonProviderOptOut + `')`

// SuppressionReplaceable is the ON CONFLICT condition of a suppression
// upsert: a START-liftable reason never replaces one that is not, so a STOP
// on top of an operator's suppression cannot make START lift it.
const SuppressionReplaceable = `(` + LiftedByStart + ` OR excluded.reason NOT IN ('` +
	store.ReasonStop + `', '` + store.ReasonProviderOptOut + `'))`

// scanSuppression reads (number, reason, created_at).
func scanSuppression(r Rows) (store.Suppression, error) {
	var sp store.Suppression
	var created int64
	err := r.Scan(&sp.Number, &sp.Reason, &created)
	sp.CreatedAt = store.FromNanos(created)
	return sp, err
}

// Suppressed returns the suppressions among numbers, keyed by number.
func (d DB) Suppressed(ctx context.Context, numbers []string) (map[string]store.Suppression, error) {
	out := map[string]store.Suppression{}
	const chunk = 500 // stays far below SQLite's bound-parameter limit
	if len(numbers) > chunk {
		// A large group against a shorter list (100,000 numbers, a few
		// hundred suppressions): reading the list is cheaper than 200
		// queries that look each number up.
		var n int
		if err := d.c.Read.QueryRow(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM suppressions LIMIT ?) s`, len(numbers)).Scan(&n); err != nil {
			return nil, d.errorf("suppressed: %w", err)
		}
		if n < len(numbers) {
			return d.suppressedByScan(ctx, numbers)
		}
	}
	for len(numbers) > 0 {
		n := min(chunk, len(numbers))
		part := numbers[:n]
		numbers = numbers[n:]
		args := make([]any, len(part))
		for i, v := range part {
			args[i] = v
		}
		sps, err := queryAll(ctx, d.c.Read, scanSuppression, `SELECT number, reason, created_at FROM suppressions WHERE number IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+`)`, args...)
		if err != nil {
			return nil, d.errorf("suppressed: %w", err)
		}
		for _, sp := range sps {
			out[sp.Number] = sp
		}
	}
	return out, nil
}

// suppressedByScan is Suppressed by reading the whole list.
func (d DB) suppressedByScan(ctx context.Context, numbers []string) (map[string]store.Suppression, error) {
	all, err := queryAll(ctx, d.c.Read, scanSuppression, `SELECT number, reason, created_at FROM suppressions`)
	if err != nil {
		return nil, d.errorf("suppressed: %w", err)
	}
	byNumber := make(map[string]store.Suppression, len(all))
	for _, sp := range all {
		byNumber[sp.Number] = sp
	}
	out := map[string]store.Suppression{}
	for _, n := range numbers {
		if sp, ok := byNumber[n]; ok {
			out[n] = sp
		}
	}
	return out, nil
}

// ListSuppressions returns suppressions ordered by number, one page at a
// time.
func (d DB) ListSuppressions(ctx context.Context, cursor string, limit int) ([]store.Suppression, string, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	after := ""
	if cursor != "" {
		p, err := store.DecodeCursor(cursor, 1)
		if err != nil {
			return nil, "", err
		}
		after = p[0]
	}
	out, err := queryAll(ctx, d.c.Read, scanSuppression,
		`SELECT number, reason, created_at FROM suppressions WHERE number > ? ORDER BY number LIMIT ?`, after, limit+1)
	if err != nil {
		return nil, "", d.errorf("list suppressions: %w", err)
	}
	out, next := page(out, limit, func(sp store.Suppression) string { return store.EncodeCursor(sp.Number) })
	return out, next, nil
}

// ---- API keys ----

// CreateKey stores a new API key and its audit entries in one
// transaction; a duplicate id or prefix is an error.
func (d DB) CreateKey(ctx context.Context, k store.APIKey, audit ...store.AuditEntry) error {
	scopes, err := json.Marshal(NonNilStrings(k.Scopes))
	if err != nil {
		return d.errorf("create key: %w", err)
	}
	hash := k.Hash
	if hash == nil {
		hash = []byte{}
	}
	now := d.c.Now()
	err = d.withAudit(ctx, now, audit, func(q Querier) error {
		_, err := q.Exec(ctx, `INSERT INTO api_keys (id, name, prefix, hash, scopes, created_at, last_used_at, revoked_at,
			created_by, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, k.ID, k.Name, k.Prefix, hash, string(scopes),
			store.Nanos(OrNow(k.CreatedAt, now)), store.Nanos(k.LastUsedAt), store.Nanos(k.RevokedAt), k.CreatedBy, store.Nanos(k.ExpiresAt))
		return err
	})
	if err != nil {
		return d.errorf("create key: %w", err)
	}
	return nil
}

// withAudit runs the write fn and appends audit after it, in one write
// transaction when there are entries (a lone statement needs none).
func (d DB) withAudit(ctx context.Context, now time.Time, audit []store.AuditEntry, fn func(Querier) error) error {
	if len(audit) == 0 {
		return fn(d.c.Write)
	}
	return d.c.WriteTx(ctx, func(q Querier) error {
		if err := fn(q); err != nil {
			return err
		}
		return appendAudit(ctx, q, now, audit)
	})
}

// keyCols are the columns scanKey reads, from api_keys; the last one says
// whether the key is suspended: it has an owner and the owner is not an
// enabled user (disabled, or unknown).
const keyCols = `id, name, prefix, hash, scopes, created_at, last_used_at, revoked_at, created_by, expires_at,
	CASE WHEN created_by = '' THEN 0
		WHEN EXISTS (SELECT 1 FROM users WHERE users.id = api_keys.created_by AND users.disabled_at = 0) THEN 0
		ELSE 1 END`

// scanKey reads a row of keyCols.
func scanKey(r Row) (store.APIKey, error) {
	var k store.APIKey
	var scopes string
	var created, used, revoked, expires, suspended int64
	if err := r.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &scopes, &created, &used, &revoked, &k.CreatedBy, &expires, &suspended); err != nil {
		return store.APIKey{}, err
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return store.APIKey{}, fmt.Errorf("key %q scopes: %w", k.ID, err)
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = store.FromNanos(created), store.FromNanos(used), store.FromNanos(revoked)
	k.ExpiresAt, k.Suspended = store.FromNanos(expires), suspended != 0
	return k, nil
}

// KeyByPrefix returns the key with prefix or actor.ErrNotFound.
func (d DB) KeyByPrefix(ctx context.Context, prefix string) (store.APIKey, error) {
	k, err := scanKey(d.c.Read.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys WHERE prefix = ?`, prefix))
	if err != nil {
		return store.APIKey{}, d.errorf("key by prefix: %w", err)
	}
	return k, nil
}

// ListKeys returns every key (revoked ones too), oldest first.
func (d DB) ListKeys(ctx context.Context) ([]store.APIKey, error) {
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.APIKey, error) { return scanKey(r) },
		`SELECT `+keyCols+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, d.errorf("list keys: %w", err)
	}
	return out, nil
}

// TouchKey records a use of the key; actor.ErrNotFound for an unknown id.
func (d DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	return d.updateKey(ctx, "touch key", `UPDATE api_keys SET last_used_at = ? WHERE id = ?`, id, at)
}

// RevokeKey revokes the key (a second revoke keeps the first time) and
// appends its audit entries in one transaction; actor.ErrNotFound (and no
// entry) for an unknown id.
func (d DB) RevokeKey(ctx context.Context, id string, at time.Time, audit ...store.AuditEntry) error {
	return d.updateKey(ctx, "revoke key",
		`UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`, id, at, audit...)
}

func (d DB) updateKey(ctx context.Context, what, stmt, id string, at time.Time, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.withAudit(ctx, now, audit, func(q Querier) error {
		n, err := q.Exec(ctx, stmt, store.Nanos(OrNow(at, now)), id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%q: %w", id, actor.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return d.errorf("%s: %w", what, err)
	}
	return nil
}

// ---- suppressions ----

// RemoveSuppression deletes a suppression (a missing one is not an error)
// and appends its audit entries in the same transaction. Adding one stays
// in the engines: each binds its rows its own way.
func (d DB) RemoveSuppression(ctx context.Context, number string, audit ...store.AuditEntry) error {
	err := d.withAudit(ctx, d.c.Now(), audit, func(q Querier) error {
		_, err := q.Exec(ctx, `DELETE FROM suppressions WHERE number = ?`, number)
		return err
	})
	if err != nil {
		return d.errorf("remove suppression: %w", err)
	}
	return nil
}

// ---- idempotency ----

// GetIdempotency returns a group-creation idempotency key or
// actor.ErrNotFound.
func (d DB) GetIdempotency(ctx context.Context, key string) (store.IdempotencyKey, error) {
	k := store.IdempotencyKey{Key: key}
	var created int64
	err := d.c.Read.QueryRow(ctx, `SELECT request_hash, group_id, created_at FROM idempotency_keys WHERE key = ?`, key).
		Scan(&k.RequestHash, &k.GroupID, &created)
	if err != nil {
		return store.IdempotencyKey{}, d.errorf("get idempotency: %w", err)
	}
	k.CreatedAt = store.FromNanos(created)
	return k, nil
}
