package sqlite

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

// Suppressed returns the suppressions among numbers, keyed by number.
func (s *Store) Suppressed(ctx context.Context, numbers []string) (map[string]store.Suppression, error) {
	out := map[string]store.Suppression{}
	const chunk = 500 // stays far below SQLite's bound-parameter limit
	for len(numbers) > 0 {
		n := min(chunk, len(numbers))
		part := numbers[:n]
		numbers = numbers[n:]
		args := make([]any, len(part))
		for i, v := range part {
			args[i] = v
		}
		rows, err := s.r.QueryContext(ctx, `SELECT number, reason, created_at FROM suppressions WHERE number IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: suppressed: %w", err)
		}
		for rows.Next() {
			var sp store.Suppression
			var created int64
			if err := rows.Scan(&sp.Number, &sp.Reason, &created); err != nil {
				_ = rows.Close()
				return nil, fmt.Errorf("sqlite: suppressed: %w", err)
			}
			sp.CreatedAt = store.FromNanos(created)
			out[sp.Number] = sp
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: suppressed: %w", err)
		}
	}
	return out, nil
}

// AddSuppression creates or replaces a suppression (CreatedAt defaults to
// now).
func (s *Store) AddSuppression(ctx context.Context, sp store.Suppression) error {
	if _, err := s.st.suppress.ExecContext(ctx, sp.Number, sp.Reason, store.Nanos(orNow(sp.CreatedAt, s.now()))); err != nil {
		return fmt.Errorf("sqlite: add suppression: %w", err)
	}
	return nil
}

// RemoveSuppression deletes a suppression; a missing one is not an error.
func (s *Store) RemoveSuppression(ctx context.Context, number string) error {
	if _, err := s.st.unsuppress.ExecContext(ctx, number); err != nil {
		return fmt.Errorf("sqlite: remove suppression: %w", err)
	}
	return nil
}

// ListSuppressions returns suppressions ordered by number, one page at a
// time.
func (s *Store) ListSuppressions(ctx context.Context, cursor string, limit int) ([]store.Suppression, string, error) {
	limit = store.ClampLimit(limit, 100, 10000)
	after := ""
	if cursor != "" {
		p, err := store.DecodeCursor(cursor, 1)
		if err != nil {
			return nil, "", err
		}
		after = p[0]
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT number, reason, created_at FROM suppressions WHERE number > ? ORDER BY number LIMIT ?`, after, limit+1)
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: list suppressions: %w", err)
	}
	defer rows.Close()
	var out []store.Suppression
	for rows.Next() {
		var sp store.Suppression
		var created int64
		if err := rows.Scan(&sp.Number, &sp.Reason, &created); err != nil {
			return nil, "", fmt.Errorf("sqlite: list suppressions: %w", err)
		}
		sp.CreatedAt = store.FromNanos(created)
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("sqlite: list suppressions: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = store.EncodeCursor(out[limit-1].Number)
	}
	return out, next, nil
}

// ---- API keys ----

// CreateKey stores a new API key; a duplicate id or prefix is an error.
func (s *Store) CreateKey(ctx context.Context, k store.APIKey) error {
	scopes, err := json.Marshal(nonNilStrings(k.Scopes))
	if err != nil {
		return fmt.Errorf("sqlite: create key: %w", err)
	}
	hash := k.Hash
	if hash == nil {
		hash = []byte{}
	}
	_, err = s.w.ExecContext(ctx, `INSERT INTO api_keys (id, name, prefix, hash, scopes, created_at, last_used_at, revoked_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, k.ID, k.Name, k.Prefix, hash, string(scopes),
		store.Nanos(orNow(k.CreatedAt, s.now())), store.Nanos(k.LastUsedAt), store.Nanos(k.RevokedAt))
	if err != nil {
		return fmt.Errorf("sqlite: create key: %w", err)
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

const keyCols = `id, name, prefix, hash, scopes, created_at, last_used_at, revoked_at`

func scanKey(sc scanner) (store.APIKey, error) {
	var k store.APIKey
	var scopes string
	var created, used, revoked int64
	if err := sc.Scan(&k.ID, &k.Name, &k.Prefix, &k.Hash, &scopes, &created, &used, &revoked); err != nil {
		return store.APIKey{}, err
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return store.APIKey{}, fmt.Errorf("key %q scopes: %w", k.ID, err)
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = store.FromNanos(created), store.FromNanos(used), store.FromNanos(revoked)
	return k, nil
}

// KeyByPrefix returns the key with prefix or actor.ErrNotFound.
func (s *Store) KeyByPrefix(ctx context.Context, prefix string) (store.APIKey, error) {
	k, err := scanKey(s.r.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE prefix = ?`, prefix))
	if err != nil {
		return store.APIKey{}, fmt.Errorf("sqlite: key by prefix: %w", notFound(err))
	}
	return k, nil
}

// ListKeys returns every key (revoked ones too), oldest first.
func (s *Store) ListKeys(ctx context.Context) ([]store.APIKey, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	defer rows.Close()
	var out []store.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list keys: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	return out, nil
}

// TouchKey records a use of the key; actor.ErrNotFound for an unknown id.
func (s *Store) TouchKey(ctx context.Context, id string, at time.Time) error {
	return s.updateKey(ctx, "touch key", `UPDATE api_keys SET last_used_at = ? WHERE id = ?`, id, at)
}

// RevokeKey revokes the key (a second revoke keeps the first time);
// actor.ErrNotFound for an unknown id.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	return s.updateKey(ctx, "revoke key",
		`UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`, id, at)
}

func (s *Store) updateKey(ctx context.Context, what, query, id string, at time.Time) error {
	res, err := s.w.ExecContext(ctx, query, store.Nanos(orNow(at, s.now())), id)
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: %s %q: %w", what, id, actor.ErrNotFound)
	}
	return nil
}

// ---- idempotency ----

// GetIdempotency returns a group-creation idempotency key or
// actor.ErrNotFound.
func (s *Store) GetIdempotency(ctx context.Context, key string) (store.IdempotencyKey, error) {
	k := store.IdempotencyKey{Key: key}
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT request_hash, group_id, created_at FROM idempotency_keys WHERE key = ?`, key).
		Scan(&k.RequestHash, &k.GroupID, &created)
	if err != nil {
		return store.IdempotencyKey{}, fmt.Errorf("sqlite: get idempotency: %w", notFound(err))
	}
	k.CreatedAt = store.FromNanos(created)
	return k, nil
}
