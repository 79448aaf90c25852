package sqlq

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Outbound webhooks (docs/design.md §13): endpoints, the outbox fan-out, the
// delivery queue and the attempts log. The commit paths write outbox rows
// with InsertOutbox / OutboxArgs; everything else is here.

// InsertOutbox writes one outbox row (arguments: OutboxArgs). A duplicate
// msg_id is ignored, so that a row is never the reason a unit fails.
const InsertOutbox = `INSERT INTO webhook_outbox (msg_id, type, group_id, seq, endpoint_id, payload, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (msg_id) DO NOTHING`

// OutboxArgs returns InsertOutbox's arguments for r.
func OutboxArgs(r *store.OutboxRow, now time.Time) []any {
	p := r.Payload
	if p == nil {
		p = []byte{}
	}
	return []any{r.MsgID, r.Type, r.GroupID, int64(r.Seq), r.Endpoint, p, store.Nanos(OrNow(r.CreatedAt, now))}
}

const endpointCols = `id, url, description, events, signing, secret, prev_secret, prev_until, disabled_at,
	disabled_reason, failing_since, created_at, updated_at`

func endpointArgs(e *store.WebhookEndpoint) ([]any, error) {
	events, err := json.Marshal(NonNilStrings(e.Events))
	if err != nil {
		return nil, err
	}
	sec, prev := e.Secret, e.PrevSecret
	if sec == nil {
		sec = []byte{}
	}
	if prev == nil {
		prev = []byte{}
	}
	return []any{e.ID, e.URL, e.Description, string(events), e.Signing, sec, prev, store.Nanos(e.PrevUntil),
		store.Nanos(e.DisabledAt), e.DisabledReason, store.Nanos(e.FailingSince), store.Nanos(e.CreatedAt),
		store.Nanos(e.UpdatedAt)}, nil
}

func scanEndpoint(r Rows) (store.WebhookEndpoint, error) {
	var e store.WebhookEndpoint
	var events string
	var prevUntil, disabled, failing, created, updated int64
	if err := r.Scan(&e.ID, &e.URL, &e.Description, &events, &e.Signing, &e.Secret, &e.PrevSecret, &prevUntil,
		&disabled, &e.DisabledReason, &failing, &created, &updated); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(events), &e.Events); err != nil {
		return e, fmt.Errorf("endpoint %q events: %w", e.ID, err)
	}
	e.PrevUntil, e.DisabledAt, e.FailingSince = store.FromNanos(prevUntil), store.FromNanos(disabled), store.FromNanos(failing)
	e.CreatedAt, e.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
	return e, nil
}

// CreateWebhookEndpoint stores a new endpoint and appends its audit
// entries in the same transaction.
func (d DB) CreateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint, audit ...store.AuditEntry) error {
	args, err := endpointArgs(&e)
	if err != nil {
		return d.errorf("create webhook endpoint: %w", err)
	}
	now := d.c.Now()
	err = d.c.WriteTx(ctx, func(q Querier) error {
		if _, err := q.Exec(ctx, `INSERT INTO webhook_endpoints (`+endpointCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...); err != nil {
			return err
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("create webhook endpoint: %w", err)
	}
	return nil
}

// GetWebhookEndpoint returns one endpoint or actor.ErrNotFound.
func (d DB) GetWebhookEndpoint(ctx context.Context, id string) (store.WebhookEndpoint, error) {
	eps, err := queryAll(ctx, d.c.Read, scanEndpoint, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE id = ?`, id)
	if err != nil {
		return store.WebhookEndpoint{}, d.errorf("get webhook endpoint: %w", err)
	}
	if len(eps) == 0 {
		return store.WebhookEndpoint{}, d.errorf("webhook endpoint %q: %w", id, actor.ErrNotFound)
	}
	return eps[0], nil
}

// ListWebhookEndpoints returns every endpoint, oldest first.
func (d DB) ListWebhookEndpoints(ctx context.Context) ([]store.WebhookEndpoint, error) {
	eps, err := queryAll(ctx, d.c.Read, scanEndpoint, `SELECT `+endpointCols+` FROM webhook_endpoints ORDER BY created_at, id`)
	if err != nil {
		return nil, d.errorf("list webhook endpoints: %w", err)
	}
	return eps, nil
}

// UpdateWebhookEndpoint replaces an endpoint and appends its audit
// entries in the same transaction.
func (d DB) UpdateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint, audit ...store.AuditEntry) error {
	args, err := endpointArgs(&e)
	if err != nil {
		return d.errorf("update webhook endpoint: %w", err)
	}
	now := d.c.Now()
	err = d.c.WriteTx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `UPDATE webhook_endpoints SET url = ?, description = ?, events = ?, signing = ?,
		secret = ?, prev_secret = ?, prev_until = ?, disabled_at = ?, disabled_reason = ?, failing_since = ?,
		created_at = ?, updated_at = ? WHERE id = ?`, append(args[1:], args[0])...)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("webhook endpoint %q: %w", e.ID, actor.ErrNotFound)
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("update webhook endpoint: %w", err)
	}
	return nil
}

// DeleteWebhookEndpoint removes an endpoint, its queue and its attempts,
// and appends its audit entries in the same transaction.
func (d DB) DeleteWebhookEndpoint(ctx context.Context, id string, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error {
		n, err := q.Exec(ctx, `DELETE FROM webhook_endpoints WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("webhook endpoint %q: %w", id, actor.ErrNotFound)
		}
		if _, err := q.Exec(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = ?`, id); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, `DELETE FROM webhook_attempts WHERE endpoint_id = ?`, id); err != nil {
			return err
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("delete webhook endpoint: %w", err)
	}
	return nil
}

// AppendOutbox writes rows outside any commit, with their audit entries.
func (d DB) AppendOutbox(ctx context.Context, rows []store.OutboxRow, audit ...store.AuditEntry) error {
	now := d.c.Now()
	err := d.c.WriteTx(ctx, func(q Querier) error {
		for i := range rows {
			if _, err := q.Exec(ctx, InsertOutbox, OutboxArgs(&rows[i], now)...); err != nil {
				return err
			}
		}
		return appendAudit(ctx, q, now, audit)
	})
	if err != nil {
		return d.errorf("append outbox: %w", err)
	}
	return nil
}

type outboxHead struct {
	id       int64
	typ      string
	endpoint string
}

func scanOutboxHead(r Rows) (outboxHead, error) {
	var h outboxHead
	err := r.Scan(&h.id, &h.typ, &h.endpoint)
	return h, err
}

const insertDelivery = `INSERT INTO webhook_deliveries (endpoint_id, outbox_id, state, attempts, next_at, updated_at)
	VALUES (?, ?, 'pending', 0, ?, ?)`

// DispatchOutbox fans undispatched outbox rows out to the endpoints that
// want them.
func (d DB) DispatchOutbox(ctx context.Context, now time.Time, limit int) (int, error) {
	limit = store.ClampLimit(limit, 500, 5000)
	n := 0
	err := d.c.WriteTx(ctx, func(q Querier) error {
		heads, err := queryAll(ctx, q, scanOutboxHead,
			`SELECT id, type, endpoint_id FROM webhook_outbox WHERE dispatched = 0 ORDER BY id LIMIT ?`, limit)
		if err != nil || len(heads) == 0 {
			return err
		}
		eps, err := queryAll(ctx, q, scanEndpoint, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE disabled_at = 0`)
		if err != nil {
			return err
		}
		ids := make([]any, 0, len(heads))
		for _, h := range heads {
			for i := range eps {
				e := &eps[i]
				if (h.endpoint == "" && e.Wants(h.typ)) || h.endpoint == e.ID {
					if _, err := q.Exec(ctx, insertDelivery+` ON CONFLICT (endpoint_id, outbox_id) DO NOTHING`,
						e.ID, h.id, store.Nanos(now), store.Nanos(now)); err != nil {
						return err
					}
				}
			}
			ids = append(ids, h.id)
		}
		// By id, not by range: a PostgreSQL commit may make a lower id
		// visible after a higher one was read.
		if _, err := q.Exec(ctx, `UPDATE webhook_outbox SET dispatched = 1 WHERE id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")+`)`, ids...); err != nil {
			return err
		}
		n = len(heads)
		return nil
	})
	if err != nil {
		return 0, d.errorf("dispatch outbox: %w", err)
	}
	return n, nil
}

func scanWebhookDelivery(r Rows) (store.WebhookDelivery, error) {
	var w store.WebhookDelivery
	var attempts, seq, created int64
	err := r.Scan(&w.EndpointID, &w.Row.ID, &attempts, &w.Row.MsgID, &w.Row.Type, &w.Row.GroupID, &seq,
		&w.Row.Endpoint, &w.Row.Payload, &created)
	w.Attempts, w.Row.Seq, w.Row.CreatedAt = int(attempts), uint64(seq), store.FromNanos(created)
	return w, err
}

// ClaimWebhookDeliveries takes due deliveries for a lease, endpoint by
// endpoint (index webhook_deliveries_due gives each its rows in order).
func (d DB) ClaimWebhookDeliveries(ctx context.Context, c store.WebhookClaim) ([]store.WebhookDelivery, error) {
	now := store.Nanos(c.Now)
	until := store.Nanos(c.Now.Add(c.Lease))
	var out []store.WebhookDelivery
	err := d.c.WriteTx(ctx, func(q Querier) error {
		out = out[:0]
		room := c.Room
		if room == nil {
			ids, err := queryAll(ctx, q, scanString, `SELECT id FROM webhook_endpoints WHERE disabled_at = 0`)
			if err != nil {
				return err
			}
			room = map[string]int{}
			for _, id := range ids {
				room[id] = store.ClampLimit(c.Limit, 100, 1000)
			}
		}
		ids := make([]string, 0, len(room))
		for id, n := range room {
			if n > 0 {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		for _, id := range ids {
			ds, err := queryAll(ctx, q, scanWebhookDelivery, `SELECT d.endpoint_id, d.outbox_id, d.attempts, o.msg_id,
				o.type, o.group_id, o.seq, o.endpoint_id, o.payload, o.created_at FROM webhook_deliveries d
				JOIN webhook_outbox o ON o.id = d.outbox_id
				JOIN webhook_endpoints e ON e.id = d.endpoint_id
				WHERE d.endpoint_id = ? AND d.state = 'pending' AND d.next_at <= ? AND e.disabled_at = 0
				ORDER BY d.next_at, d.outbox_id LIMIT ?`, id, now, min(room[id], 1000))
			if err != nil {
				return err
			}
			for _, w := range ds {
				// Another worker that claimed the row first moved next_at.
				n, err := q.Exec(ctx, `UPDATE webhook_deliveries SET next_at = ?, claimed_by = ? WHERE endpoint_id = ?
					AND outbox_id = ? AND state = 'pending' AND next_at <= ?`, until, c.Owner, w.EndpointID, w.Row.ID, now)
				if err != nil {
					return err
				}
				if n == 1 {
					out = append(out, w)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, d.errorf("claim webhook deliveries: %w", err)
	}
	return out, nil
}

// ReleaseWebhookClaims hands an owner's leased deliveries back at once.
func (d DB) ReleaseWebhookClaims(ctx context.Context, owner string, now time.Time) (int, error) {
	n, err := d.c.Write.Exec(ctx, `UPDATE webhook_deliveries SET next_at = ?, claimed_by = '' WHERE claimed_by = ?
		AND state = 'pending' AND next_at > ?`, store.Nanos(now), owner, store.Nanos(now))
	if err != nil {
		return 0, d.errorf("release webhook claims: %w", err)
	}
	return int(n), nil
}

// RecordWebhookAttempt writes an attempt and its consequences.
func (d DB) RecordWebhookAttempt(ctx context.Context, o store.WebhookOutcome) (bool, error) {
	dis, err := d.RecordWebhookAttempts(ctx, []store.WebhookOutcome{o})
	if err != nil {
		return false, err
	}
	return dis[0], nil
}

// RecordWebhookAttempts writes attempts, the deliveries' new states, the
// endpoints' health and, when one disables its endpoint, its event, all in
// one transaction (the worker batches its attempts this way).
func (d DB) RecordWebhookAttempts(ctx context.Context, os []store.WebhookOutcome) ([]bool, error) {
	disabled := make([]bool, len(os))
	err := d.c.WriteTx(ctx, func(q Querier) error {
		for i := range os {
			dis, err := recordAttempt(ctx, q, &os[i])
			if err != nil {
				return err
			}
			disabled[i] = dis
		}
		return nil
	})
	if err != nil {
		return nil, d.errorf("record webhook attempt: %w", err)
	}
	return disabled, nil
}

func recordAttempt(ctx context.Context, q Querier, o *store.WebhookOutcome) (bool, error) {
	a := &o.Attempt
	at := store.Nanos(a.At)
	if _, err := q.Exec(ctx, `INSERT INTO webhook_attempts (endpoint_id, outbox_id, msg_id, type, at, status_code,
		result, latency_ms, response, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.EndpointID, a.OutboxID, a.MsgID, a.Type, at, int64(a.StatusCode), a.Result, a.Latency.Milliseconds(),
		a.Response, a.Error); err != nil {
		return false, err
	}
	var err error
	switch {
	case o.Delivered:
		_, err = q.Exec(ctx, `UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, claimed_by = '', updated_at = ?
			WHERE endpoint_id = ? AND outbox_id = ?`, at, a.EndpointID, a.OutboxID)
		if err == nil {
			_, err = q.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = 0 WHERE id = ? AND failing_since <> 0`, a.EndpointID)
		}
	default:
		state, next := "pending", store.Nanos(o.NextAt)
		if o.NextAt.IsZero() {
			state, next = "failed", at
		}
		_, err = q.Exec(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_at = ?, claimed_by = '', updated_at = ?
			WHERE endpoint_id = ? AND outbox_id = ?`, state, next, at, a.EndpointID, a.OutboxID)
		if err == nil {
			_, err = q.Exec(ctx, `UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since = 0`,
				at, a.EndpointID)
		}
	}
	if err != nil || o.Disable == "" {
		return false, err
	}
	n, err := q.Exec(ctx, `UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?, updated_at = ?
		WHERE id = ? AND disabled_at = 0`, at, o.Disable, at, a.EndpointID)
	if err != nil || n == 0 {
		return false, err
	}
	if o.Disabled != nil {
		if _, err := q.Exec(ctx, InsertOutbox, OutboxArgs(o.Disabled, a.At)...); err != nil {
			return false, err
		}
	}
	return true, nil
}

func scanAttempt(r Rows) (store.WebhookAttempt, error) {
	var a store.WebhookAttempt
	var at, code, ms int64
	err := r.Scan(&a.ID, &a.EndpointID, &a.OutboxID, &a.MsgID, &a.Type, &at, &code, &a.Result, &ms, &a.Response, &a.Error)
	a.At, a.StatusCode, a.Latency = store.FromNanos(at), int(code), time.Duration(ms)*time.Millisecond
	return a, err
}

// ListWebhookAttempts returns an endpoint's latest attempts, newest first.
func (d DB) ListWebhookAttempts(ctx context.Context, endpointID string, limit int) ([]store.WebhookAttempt, error) {
	limit = store.ClampLimit(limit, 50, 1000)
	as, err := queryAll(ctx, d.c.Read, scanAttempt, `SELECT id, endpoint_id, outbox_id, msg_id, type, at, status_code,
		result, latency_ms, response, error FROM webhook_attempts WHERE endpoint_id = ? ORDER BY id DESC LIMIT ?`,
		endpointID, limit)
	if err != nil {
		return nil, d.errorf("list webhook attempts: %w", err)
	}
	return as, nil
}

// RecoverWebhookDeliveries queues again what an endpoint did not receive
// since a time.
func (d DB) RecoverWebhookDeliveries(ctx context.Context, endpointID string, since, now time.Time, audit ...store.AuditEntry) (int, error) {
	total := 0
	err := d.c.WriteTx(ctx, func(q Querier) error {
		total = 0
		var e store.WebhookEndpoint
		eps, err := queryAll(ctx, q, scanEndpoint, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE id = ?`, endpointID)
		if err != nil {
			return err
		}
		if len(eps) == 0 {
			return fmt.Errorf("webhook endpoint %q: %w", endpointID, actor.ErrNotFound)
		}
		e = eps[0]
		heads, err := queryAll(ctx, q, scanOutboxHead, `SELECT id, type, endpoint_id FROM webhook_outbox
			WHERE created_at >= ? AND dispatched = 1 ORDER BY id`, store.Nanos(since))
		if err != nil {
			return err
		}
		for _, h := range heads {
			if h.endpoint != "" || !e.Wants(h.typ) {
				continue
			}
			n, err := q.Exec(ctx, insertDelivery+` ON CONFLICT (endpoint_id, outbox_id) DO UPDATE SET state = 'pending',
				next_at = excluded.next_at, updated_at = excluded.updated_at WHERE webhook_deliveries.state <> 'delivered'`,
				endpointID, h.id, store.Nanos(now), store.Nanos(now))
			if err != nil {
				return err
			}
			total += int(n)
		}
		return appendAudit(ctx, q, d.c.Now(), audit)
	})
	if err != nil {
		return 0, d.errorf("recover webhook deliveries: %w", err)
	}
	return total, nil
}

// WebhookQueue reports the queue depth and the age of its oldest event.
func (d DB) WebhookQueue(ctx context.Context) (int, time.Time, error) {
	var n1, n2, o1, o2 int64
	err := d.c.ReadTx(ctx, func(q Querier) error {
		if err := q.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MIN(o.created_at), 0) FROM webhook_deliveries d
			JOIN webhook_outbox o ON o.id = d.outbox_id WHERE d.state = 'pending'`).Scan(&n1, &o1); err != nil {
			return err
		}
		return q.QueryRow(ctx, `SELECT COUNT(*), COALESCE(MIN(created_at), 0) FROM webhook_outbox WHERE dispatched = 0`).
			Scan(&n2, &o2)
	})
	if err != nil {
		return 0, time.Time{}, d.errorf("webhook queue: %w", err)
	}
	oldest := o1
	if o2 != 0 && (oldest == 0 || o2 < oldest) {
		oldest = o2
	}
	return int(n1 + n2), store.FromNanos(oldest), nil
}

// PurgeWebhooks deletes what the recover window no longer needs.
func (d DB) PurgeWebhooks(ctx context.Context, before, dropPending time.Time) (int, error) {
	t, drop := store.Nanos(before), store.Nanos(dropPending)
	total := 0
	err := d.c.WriteTx(ctx, func(q Querier) error {
		total = 0
		n, err := q.Exec(ctx, `DELETE FROM webhook_attempts WHERE at < ?`, t)
		if err != nil {
			return err
		}
		total += int(n)
		// Old rows that are dispatched and owe nobody a delivery.
		done := `SELECT o.id FROM webhook_outbox o WHERE o.created_at < ? AND o.dispatched = 1 AND (o.created_at < ? OR
			NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.outbox_id = o.id AND d.state = 'pending'))`
		if n, err = q.Exec(ctx, `DELETE FROM webhook_deliveries WHERE outbox_id IN (`+done+`)`, t, drop); err != nil {
			return err
		}
		total += int(n)
		if n, err = q.Exec(ctx, `DELETE FROM webhook_outbox WHERE id IN (`+done+`)`, t, drop); err != nil {
			return err
		}
		total += int(n)
		return nil
	})
	if err != nil {
		return 0, d.errorf("purge webhooks: %w", err)
	}
	return total, nil
}
