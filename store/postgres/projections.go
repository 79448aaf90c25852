package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

const groupCols = `id, status, from_number, mode, text, pause_reason, created_at, updated_at, counts, seq`

type scanner interface{ Scan(dest ...any) error }

func scanGroup(sc scanner) (store.GroupRow, error) {
	var g store.GroupRow
	var status, mode, counts string
	var created, updated int64
	if err := sc.Scan(&g.ID, &status, &g.From, &mode, &g.Text, &g.PauseReason, &created, &updated, &counts, &g.Seq); err != nil {
		return store.GroupRow{}, err
	}
	g.Status, g.Mode = crewcast.GroupStatus(status), crewcast.Mode(mode)
	g.CreatedAt, g.UpdatedAt = store.FromNanos(created), store.FromNanos(updated)
	if err := json.Unmarshal([]byte(counts), &g.Counts); err != nil {
		return store.GroupRow{}, fmt.Errorf("group %q counts: %w", g.ID, err)
	}
	return g, nil
}

// GetGroup returns the group's report row or actor.ErrNotFound.
func (s *Store) GetGroup(ctx context.Context, id string) (store.GroupRow, error) {
	g, err := scanGroup(queryRow(ctx, s.pool, `SELECT `+groupCols+` FROM groups WHERE id = ?`, id))
	if err != nil {
		return store.GroupRow{}, fmt.Errorf("postgres: get group %q: %w", id, notFound(err))
	}
	return g, nil
}

// ListGroups returns groups newest first, one page at a time.
func (s *Store) ListGroups(ctx context.Context, q store.GroupQuery) ([]store.GroupRow, string, error) {
	limit := store.ClampLimit(q.Limit, 50, 1000)
	var where []string
	var args []any
	if q.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(q.Status))
	}
	if q.Cursor != "" {
		p, err := store.DecodeCursor(q.Cursor, 2)
		if err != nil {
			return nil, "", err
		}
		created, err := store.CursorInt(p[0])
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at, id) < (?, ?)")
		args = append(args, created, p[1])
	}
	stmt := `SELECT ` + groupCols + ` FROM groups` + whereSQL(where) + ` ORDER BY created_at DESC, id DESC LIMIT ?`
	rows, err := query(ctx, s.pool, stmt, append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list groups: %w", err)
	}
	defer rows.Close()
	var out []store.GroupRow
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, "", fmt.Errorf("postgres: list groups: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("postgres: list groups: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = store.EncodeCursor(strconv.FormatInt(store.Nanos(last.CreatedAt), 10), last.ID)
	}
	return out, next, nil
}

func whereSQL(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(where, " AND ")
}

const deliveryCols = `group_id, number, name, status, attempts, provider_message_id, error_code, error_class,
	claimed_at, sent_at, delivered_at, failed_at, replied_at, ack, last_reply, updated_at`

func scanDelivery(sc scanner) (store.DeliveryRow, error) {
	var d store.DeliveryRow
	var status, class, ack string
	var claimed, sent, delivered, failed, replied, updated int64
	if err := sc.Scan(&d.GroupID, &d.Number, &d.Name, &status, &d.Attempts, &d.ProviderMessageID, &d.ErrorCode,
		&class, &claimed, &sent, &delivered, &failed, &replied, &ack, &d.LastReply, &updated); err != nil {
		return store.DeliveryRow{}, err
	}
	d.Status, d.ErrorClass, d.Ack = crewcast.Status(status), crewcast.ErrorClass(class), crewcast.Ack(ack)
	d.ClaimedAt, d.SentAt, d.DeliveredAt = store.FromNanos(claimed), store.FromNanos(sent), store.FromNanos(delivered)
	d.FailedAt, d.RepliedAt, d.UpdatedAt = store.FromNanos(failed), store.FromNanos(replied), store.FromNanos(updated)
	return d, nil
}

// deliveryFilter turns a DeliveryQuery's filters (not its cursor) into SQL.
func deliveryFilter(q store.DeliveryQuery) ([]string, []any) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		where = append(where, cond)
		args = append(args, v)
	}
	if q.GroupID != "" {
		add("group_id = ?", q.GroupID)
	}
	if q.Number != "" {
		add("number = ?", q.Number)
	}
	if q.Status != "" {
		add("status = ?", string(q.Status))
	}
	if q.ErrorClass != "" {
		add("error_class = ?", string(q.ErrorClass))
	}
	if !q.Since.IsZero() {
		add("updated_at >= ?", store.Nanos(q.Since))
	}
	if !q.Until.IsZero() {
		add("updated_at < ?", store.Nanos(q.Until))
	}
	return where, args
}

// ListDeliveries returns deliveries matching q ordered by (UpdatedAt,
// GroupID, Number), one page at a time.
func (s *Store) ListDeliveries(ctx context.Context, q store.DeliveryQuery) ([]store.DeliveryRow, string, error) {
	limit := store.ClampLimit(q.Limit, 100, 10000)
	where, args := deliveryFilter(q)
	if q.Cursor != "" {
		p, err := store.DecodeCursor(q.Cursor, 3)
		if err != nil {
			return nil, "", err
		}
		updated, err := store.CursorInt(p[0])
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(updated_at, group_id, number) > (?, ?, ?)")
		args = append(args, updated, p[1], p[2])
	}
	stmt := `SELECT ` + deliveryCols + ` FROM deliveries` + whereSQL(where) +
		` ORDER BY updated_at, group_id, number LIMIT ?`
	rows, err := query(ctx, s.pool, stmt, append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list deliveries: %w", err)
	}
	defer rows.Close()
	var out []store.DeliveryRow
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, "", fmt.Errorf("postgres: list deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("postgres: list deliveries: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = store.EncodeCursor(strconv.FormatInt(store.Nanos(last.UpdatedAt), 10), last.GroupID, last.Number)
	}
	return out, next, nil
}

// Summarize aggregates the deliveries matching q (cursor and limit
// ignored) from one consistent read.
func (s *Store) Summarize(ctx context.Context, q store.DeliveryQuery) (store.Summary, error) {
	where, args := deliveryFilter(q)
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	sum := store.Summary{ByStatus: map[crewcast.Status]int{}}
	rows, err := query(ctx, tx, `SELECT status, COUNT(*), COUNT(*) FILTER (WHERE replied_at <> 0), COUNT(*) FILTER (WHERE ack <> '') FROM deliveries`+
		whereSQL(where)+` GROUP BY status`, args...)
	if err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	for rows.Next() {
		var status string
		var n, replied, acked int
		if err := rows.Scan(&status, &n, &replied, &acked); err != nil {
			rows.Close()
			return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
		}
		sum.ByStatus[crewcast.Status(status)] = n
		sum.Total += n
		sum.Replied += replied
		sum.Acknowledged += acked
	}
	if err := rows.Err(); err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	dw := append(where[:len(where):len(where)], "status = 'delivered'", "sent_at <> 0", "delivered_at <> 0")
	rows, err = query(ctx, tx, `SELECT delivered_at - sent_at FROM deliveries`+whereSQL(dw), args...)
	if err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	var durs []time.Duration
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
		}
		durs = append(durs, time.Duration(d))
	}
	if err := rows.Err(); err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	ew := append(where[:len(where):len(where)], "error_code <> ''")
	rows, err = query(ctx, tx, `SELECT error_code, error_class, COUNT(*) AS n FROM deliveries`+whereSQL(ew)+
		` GROUP BY error_code, error_class ORDER BY n DESC, error_code, error_class LIMIT 10`, args...)
	if err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	for rows.Next() {
		var c store.CodeCount
		var class string
		if err := rows.Scan(&c.Code, &class, &c.Count); err != nil {
			rows.Close()
			return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
		}
		c.Class = crewcast.ErrorClass(class)
		sum.TopErrorCodes = append(sum.TopErrorCodes, c)
	}
	if err := rows.Err(); err != nil {
		return store.Summary{}, fmt.Errorf("postgres: summarize: %w", err)
	}
	store.FinishSummary(&sum, durs)
	return sum, nil
}

const replyCols = `id, provider, event_id, group_id, number, to_number, text, media, received_at`

// ListReplies returns replies newest first, one page at a time.
func (s *Store) ListReplies(ctx context.Context, q store.ReplyQuery) ([]store.Reply, string, error) {
	limit := store.ClampLimit(q.Limit, 100, 1000)
	var where []string
	var args []any
	switch {
	case q.Unmatched:
		where = append(where, "group_id = ''")
	case q.GroupID != "":
		where = append(where, "group_id = ?")
		args = append(args, q.GroupID)
	}
	if q.Number != "" {
		where = append(where, "number = ?")
		args = append(args, q.Number)
	}
	if q.Cursor != "" {
		p, err := store.DecodeCursor(q.Cursor, 2)
		if err != nil {
			return nil, "", err
		}
		recv, err := store.CursorInt(p[0])
		if err != nil {
			return nil, "", err
		}
		id, err := store.CursorInt(p[1])
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(received_at, id) < (?, ?)")
		args = append(args, recv, id)
	}
	rows, err := query(ctx, s.pool, `SELECT `+replyCols+` FROM replies`+whereSQL(where)+
		` ORDER BY received_at DESC, id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: list replies: %w", err)
	}
	defer rows.Close()
	var out []store.Reply
	var ids []int64
	for rows.Next() {
		var r store.Reply
		var id, recv int64
		var media string
		if err := rows.Scan(&id, &r.Provider, &r.EventID, &r.GroupID, &r.Number, &r.To, &r.Text, &media, &recv); err != nil {
			return nil, "", fmt.Errorf("postgres: list replies: %w", err)
		}
		if err := json.Unmarshal([]byte(media), &r.Media); err != nil {
			return nil, "", fmt.Errorf("postgres: list replies: media: %w", err)
		}
		if len(r.Media) == 0 {
			r.Media = nil
		}
		r.ReceivedAt = store.FromNanos(recv)
		out = append(out, r)
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("postgres: list replies: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = store.EncodeCursor(strconv.FormatInt(store.Nanos(out[limit-1].ReceivedAt), 10),
			strconv.FormatInt(ids[limit-1], 10))
	}
	return out, next, nil
}

// LoadAllEvents returns up to limit events of every key after position
// pos, in commit order (positions come from the single writer, so they
// increase with commit order).
func (s *Store) LoadAllEvents(ctx context.Context, afterPos int64, limit int) ([]store.PositionedEvent, error) {
	limit = store.ClampLimit(limit, 1000, 10000)
	rows, err := query(ctx, s.pool,
		`SELECT pos, key, seq, type, data, time FROM journal WHERE pos > ? ORDER BY pos LIMIT ?`, afterPos, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: load all events: %w", err)
	}
	defer rows.Close()
	var out []store.PositionedEvent
	for rows.Next() {
		var e store.PositionedEvent
		var t int64
		if err := rows.Scan(&e.Pos, &e.Key, &e.Seq, &e.Type, &e.Data, &t); err != nil {
			return nil, fmt.Errorf("postgres: load all events: %w", err)
		}
		e.Time = store.FromNanos(t)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: load all events: %w", err)
	}
	return out, nil
}
