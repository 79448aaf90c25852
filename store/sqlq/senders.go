package sqlq

import (
	"context"
	"fmt"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// ---- senders (docs/design.md §16) ----

const senderCols = `number, provider, pool, mps, registration_kind, campaign_id, registration_status, created_at, updated_at`

func senderArgs(s *store.Sender) []any {
	r := s.Registration
	return []any{s.Number, s.Provider, s.Pool, s.MPS, r.Kind, r.CampaignID, r.Status,
		store.Nanos(s.CreatedAt), store.Nanos(s.UpdatedAt)}
}

func scanSender(r Rows) (store.Sender, error) {
	var s store.Sender
	var created, updated int64
	err := r.Scan(&s.Number, &s.Provider, &s.Pool, &s.MPS, &s.Registration.Kind, &s.Registration.CampaignID,
		&s.Registration.Status, &created, &updated)
	s.CreatedAt, s.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
	return s, err
}

// CreateSender stores a new sender and its audit entries in one
// transaction; store.ErrConflict when the number is taken.
func (d DB) CreateSender(ctx context.Context, s store.Sender, audit ...store.AuditEntry) error {
	now := d.c.Now()
	s.CreatedAt, s.UpdatedAt = OrNow(s.CreatedAt, now), OrNow(s.UpdatedAt, now)
	err := d.c.WriteTx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO senders (`+senderCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			senderArgs(&s)...); err != nil {
			return conflict(err)
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("create sender: %w", err)
	}
	return nil
}

// GetSender returns one sender or actor.ErrNotFound.
func (d DB) GetSender(ctx context.Context, number string) (store.Sender, error) {
	ss, err := queryAll(ctx, d.c.Read, scanSender, `SELECT `+senderCols+` FROM senders WHERE number = ?`, number)
	if err != nil {
		return store.Sender{}, d.errorf("get sender: %w", err)
	}
	if len(ss) == 0 {
		return store.Sender{}, d.errorf("get sender: %w", actor.ErrNotFound)
	}
	return ss[0], nil
}

// ListSenders returns every sender by pool, then number.
func (d DB) ListSenders(ctx context.Context) ([]store.Sender, error) {
	ss, err := queryAll(ctx, d.c.Read, scanSender, `SELECT `+senderCols+` FROM senders ORDER BY pool, number`)
	if err != nil {
		return nil, d.errorf("list senders: %w", err)
	}
	return ss, nil
}

// UpdateSender replaces a sender (keeping its creation time) and appends
// its audit entries in the same transaction.
func (d DB) UpdateSender(ctx context.Context, s store.Sender, audit ...store.AuditEntry) error {
	now := d.c.Now()
	s.UpdatedAt = OrNow(s.UpdatedAt, now)
	err := d.c.WriteTx(ctx, func(q Querier) error {
		r := s.Registration
		n, err := q.Exec(ctx, `UPDATE senders SET provider = ?, pool = ?, mps = ?, registration_kind = ?,
			campaign_id = ?, registration_status = ?, updated_at = ? WHERE number = ?`,
			s.Provider, s.Pool, s.MPS, r.Kind, r.CampaignID, r.Status, store.Nanos(s.UpdatedAt), s.Number)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("sender: %w", actor.ErrNotFound)
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("update sender: %w", err)
	}
	return nil
}

// DeleteSender removes a sender and appends its audit entries in the same
// transaction.
func (d DB) DeleteSender(ctx context.Context, number string, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `DELETE FROM senders WHERE number = ?`, number)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("sender: %w", actor.ErrNotFound)
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("delete sender: %w", err)
	}
	return nil
}

// SelectSentSince counts the sends claimed at or after ? by the from number
// of their group. The deliveries_claimed index (claimed_at, group_id) keeps
// the read to the rows claimed since, each joined to its group by key.
const SelectSentSince = `SELECT g.from_number, COUNT(*) FROM deliveries d JOIN groups g ON g.id = d.group_id
	WHERE d.claimed_at >= ? AND d.claimed_at <> 0 GROUP BY g.from_number`

// SentSince counts claimed sends by their group's from number.
func (d DB) SentSince(ctx context.Context, since time.Time) (map[string]int, error) {
	type count struct {
		from string
		n    int
	}
	rows, err := queryAll(ctx, d.c.Read, func(r Rows) (count, error) {
		var c count
		err := r.Scan(&c.from, &c.n)
		return c, err
	}, SelectSentSince, store.Nanos(since))
	if err != nil {
		return nil, d.errorf("sent since: %w", err)
	}
	out := make(map[string]int, len(rows))
	for _, c := range rows {
		out[c.from] = c.n
	}
	return out, nil
}
