package sqlq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/store"
)

const groupCols = `id, status, from_number, mode, text, pause_reason, created_at, updated_at, counts, seq, answers`

// scanGroup reads a row of groupCols.
func scanGroup(r Row) (store.GroupRow, error) {
	var g store.GroupRow
	var status, mode, counts string
	var created, updated int64
	if err := r.Scan(&g.ID, &status, &g.From, &mode, &g.Text, &g.PauseReason, &created, &updated, &counts, &g.Seq, &g.Answers); err != nil {
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
func (d DB) GetGroup(ctx context.Context, id string) (store.GroupRow, error) {
	g, err := scanGroup(d.c.Read.QueryRow(ctx, `SELECT `+groupCols+` FROM groups WHERE id = ?`, id))
	if err != nil {
		return store.GroupRow{}, d.errorf("get group %q: %w", id, err)
	}
	return g, nil
}

// GroupSnapshot returns the group's row and its deliveries by number from
// one read. See store.Projections.
func (d DB) GroupSnapshot(ctx context.Context, id string) (store.GroupRow, []store.DeliveryRow, error) {
	var g store.GroupRow
	var rows []store.DeliveryRow
	err := d.c.ReadTx(ctx, func(tx Querier) error {
		var err error
		if g, err = scanGroup(tx.QueryRow(ctx, `SELECT `+groupCols+` FROM groups WHERE id = ?`, id)); err != nil {
			return err
		}
		rows, err = queryAll(ctx, tx, scanDelivery, `SELECT `+deliveryCols+` FROM deliveries WHERE group_id = ? ORDER BY number`, id)
		return err
	})
	if err != nil {
		return store.GroupRow{}, nil, d.errorf("group snapshot %q: %w", id, err)
	}
	return g, rows, nil
}

// ListGroups returns groups newest first, one page at a time.
func (d DB) ListGroups(ctx context.Context, q store.GroupQuery) ([]store.GroupRow, string, error) {
	limit := store.ClampLimit(q.Limit, 50, 1000)
	var conds []string
	var args []any
	if q.Status != "" {
		conds = append(conds, "status = ?")
		args = append(args, string(q.Status))
	}
	conds, args = groupFilters(q, conds, args)
	if q.Cursor != "" {
		p, err := store.DecodeCursor(q.Cursor, 2)
		if err != nil {
			return nil, "", err
		}
		created, err := store.CursorInt(p[0])
		if err != nil {
			return nil, "", err
		}
		conds = append(conds, "(created_at, id) < (?, ?)")
		args = append(args, created, p[1])
	}
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.GroupRow, error) { return scanGroup(r) },
		`SELECT `+groupCols+` FROM groups`+where(conds)+` ORDER BY created_at DESC, id DESC LIMIT ?`,
		append(args, limit+1)...)
	if err != nil {
		return nil, "", d.errorf("list groups: %w", err)
	}
	out, next := page(out, limit, func(g store.GroupRow) string {
		return store.EncodeCursor(nanosPart(g.CreatedAt), g.ID)
	})
	return out, next, nil
}

// groupFilters adds the text, sender and created_at conditions of q.
func groupFilters(q store.GroupQuery, conds []string, args []any) ([]string, []any) {
	if q.Text != "" {
		conds = append(conds, `lower(text) LIKE ? ESCAPE '\'`)
		args = append(args, likePattern(strings.ToLower(q.Text)))
	}
	if q.From != "" {
		conds = append(conds, "from_number = ?")
		args = append(args, q.From)
	}
	if !q.Since.IsZero() {
		conds = append(conds, "created_at >= ?")
		args = append(args, store.Nanos(q.Since))
	}
	if !q.Until.IsZero() {
		conds = append(conds, "created_at < ?")
		args = append(args, store.Nanos(q.Until))
	}
	return conds, args
}

const deliveryCols = `group_id, number, name, status, attempts, provider_message_id, error_code, error_class,
	claimed_at, sent_at, delivered_at, failed_at, replied_at, ack, last_reply, updated_at, response, code`

// scanDelivery reads a row of deliveryCols.
func scanDelivery(r Rows) (store.DeliveryRow, error) {
	var d store.DeliveryRow
	var status, class, ack string
	var claimed, sent, delivered, failed, replied, updated int64
	if err := r.Scan(&d.GroupID, &d.Number, &d.Name, &status, &d.Attempts, &d.ProviderMessageID, &d.ErrorCode,
		&class, &claimed, &sent, &delivered, &failed, &replied, &ack, &d.LastReply, &updated, &d.Response, &d.Code); err != nil {
		return store.DeliveryRow{}, err
	}
	d.Status, d.ErrorClass, d.Ack = crewcast.Status(status), crewcast.ErrorClass(class), crewcast.Ack(ack)
	d.ClaimedAt, d.SentAt, d.DeliveredAt = store.FromNanos(claimed), store.FromNanos(sent), store.FromNanos(delivered)
	d.FailedAt, d.RepliedAt, d.UpdatedAt = store.FromNanos(failed), store.FromNanos(replied), store.FromNanos(updated)
	return d, nil
}

// deliveryFilter turns a DeliveryQuery's filters (not its cursor) into
// conditions and their arguments.
func deliveryFilter(q store.DeliveryQuery) ([]string, []any) {
	var conds []string
	var args []any
	add := func(cond string, v any) {
		conds = append(conds, cond)
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
	if len(q.ErrorCodes) > 0 {
		conds = append(conds, "error_code IN "+inList(len(q.ErrorCodes)))
		for _, c := range q.ErrorCodes {
			args = append(args, c)
		}
	}
	if len(q.NotErrorCodes) > 0 {
		conds = append(conds, "error_code NOT IN "+inList(len(q.NotErrorCodes)))
		for _, c := range q.NotErrorCodes {
			args = append(args, c)
		}
	}
	if !q.Since.IsZero() {
		add("updated_at >= ?", store.Nanos(q.Since))
	}
	if !q.Until.IsZero() {
		add("updated_at < ?", store.Nanos(q.Until))
	}
	return conds, args
}

// ListDeliveries returns deliveries matching q ordered by (UpdatedAt,
// GroupID, Number), one page at a time.
func (d DB) ListDeliveries(ctx context.Context, q store.DeliveryQuery) ([]store.DeliveryRow, string, error) {
	limit := store.ClampLimit(q.Limit, 100, 10000)
	conds, args := deliveryFilter(q)
	if q.Cursor != "" {
		p, err := store.DecodeCursor(q.Cursor, 3)
		if err != nil {
			return nil, "", err
		}
		updated, err := store.CursorInt(p[0])
		if err != nil {
			return nil, "", err
		}
		conds = append(conds, "(updated_at, group_id, number) > (?, ?, ?)")
		args = append(args, updated, p[1], p[2])
	}
	out, err := queryAll(ctx, d.c.Read, scanDelivery,
		`SELECT `+deliveryCols+` FROM deliveries`+where(conds)+` ORDER BY updated_at, group_id, number LIMIT ?`,
		append(args, limit+1)...)
	if err != nil {
		return nil, "", d.errorf("list deliveries: %w", err)
	}
	out, next := page(out, limit, func(r store.DeliveryRow) string {
		return store.EncodeCursor(nanosPart(r.UpdatedAt), r.GroupID, r.Number)
	})
	return out, next, nil
}

// Summarize aggregates the deliveries matching q (cursor and limit
// ignored) from one consistent read.
func (d DB) Summarize(ctx context.Context, q store.DeliveryQuery) (store.Summary, error) {
	var sum store.Summary
	err := d.c.ReadTx(ctx, func(tx Querier) error {
		var err error
		sum, err = summarize(ctx, tx, q)
		return err
	})
	if err != nil {
		return store.Summary{}, d.errorf("summarize: %w", err)
	}
	return sum, nil
}

// CountByStatus counts every delivery by status.
func (d DB) CountByStatus(ctx context.Context) (map[crewcast.Status]int, error) {
	type statusCount struct {
		status string
		n      int
	}
	counts, err := queryAll(ctx, d.c.Read, func(r Rows) (statusCount, error) {
		var c statusCount
		err := r.Scan(&c.status, &c.n)
		return c, err
	}, `SELECT status, COUNT(*) FROM deliveries GROUP BY status`)
	if err != nil {
		return nil, d.errorf("count by status: %w", err)
	}
	out := make(map[crewcast.Status]int, len(counts))
	for _, c := range counts {
		out[crewcast.Status(c.status)] = c.n
	}
	return out, nil
}

// summarize runs Summarize's three reads on tx.
func summarize(ctx context.Context, tx Querier, q store.DeliveryQuery) (store.Summary, error) {
	conds, args := deliveryFilter(q)
	type statusCount struct {
		status            string
		n, replied, acked int
	}
	counts, err := queryAll(ctx, tx, func(r Rows) (statusCount, error) {
		var c statusCount
		err := r.Scan(&c.status, &c.n, &c.replied, &c.acked)
		return c, err
	}, `SELECT status, COUNT(*), COUNT(*) FILTER (WHERE replied_at <> 0), COUNT(*) FILTER (WHERE ack <> '')
		FROM deliveries`+where(conds)+` GROUP BY status`, args...)
	if err != nil {
		return store.Summary{}, err
	}
	sum := store.Summary{ByStatus: map[crewcast.Status]int{}}
	for _, c := range counts {
		sum.ByStatus[crewcast.Status(c.status)] = c.n
		sum.Total += c.n
		sum.Replied += c.replied
		sum.Acknowledged += c.acked
	}
	dc := append(conds[:len(conds):len(conds)], "status = 'delivered'", "sent_at <> 0", "delivered_at <> 0")
	durs, err := queryAll(ctx, tx, func(r Rows) (time.Duration, error) {
		var n int64
		err := r.Scan(&n)
		return time.Duration(n), err
	}, `SELECT delivered_at - sent_at FROM deliveries`+where(dc), args...)
	if err != nil {
		return store.Summary{}, err
	}
	ec := append(conds[:len(conds):len(conds)], "error_code <> ''")
	sum.TopErrorCodes, err = queryAll(ctx, tx, func(r Rows) (store.CodeCount, error) {
		var c store.CodeCount
		var class string
		err := r.Scan(&c.Code, &class, &c.Count)
		c.Class = crewcast.ErrorClass(class)
		return c, err
	}, `SELECT error_code, error_class, COUNT(*) AS n FROM deliveries`+where(ec)+
		` GROUP BY error_code, error_class ORDER BY n DESC, error_code, error_class LIMIT 10`, args...)
	if err != nil {
		return store.Summary{}, err
	}
	xc := append(conds[:len(conds):len(conds)], "(error_code <> '' OR error_class <> '')")
	sum.ErrorCodes, err = queryAll(ctx, tx, func(r Rows) (store.CodeCount, error) {
		var c store.CodeCount
		var class string
		err := r.Scan(&c.Code, &class, &c.Count)
		c.Class = crewcast.ErrorClass(class)
		return c, err
	}, `SELECT error_code, error_class, COUNT(*) FROM deliveries`+where(xc)+
		` GROUP BY error_code, error_class ORDER BY error_code, error_class`, args...)
	if err != nil {
		return store.Summary{}, err
	}
	store.FinishSummary(&sum, durs)
	return sum, nil
}

const replyCols = `id, provider, event_id, group_id, number, to_number, text, media, received_at, possible_opt_out, ambiguous`

// replyRow is a reply with its row id, the cursor's tie-breaker.
type replyRow struct {
	id    int64
	reply store.Reply
}

// scanReply reads a row of replyCols.
func scanReply(rows Rows) (replyRow, error) {
	var rr replyRow
	r := &rr.reply
	var recv, possible, ambiguous int64
	var media string
	if err := rows.Scan(&rr.id, &r.Provider, &r.EventID, &r.GroupID, &r.Number, &r.To, &r.Text, &media, &recv, &possible, &ambiguous); err != nil {
		return replyRow{}, err
	}
	r.PossibleOptOut, r.Ambiguous = possible != 0, ambiguous != 0
	if err := json.Unmarshal([]byte(media), &r.Media); err != nil {
		return replyRow{}, fmt.Errorf("media: %w", err)
	}
	if len(r.Media) == 0 {
		r.Media = nil
	}
	r.ReceivedAt = store.FromNanos(recv)
	return rr, nil
}

// ListReplies returns replies newest first, one page at a time.
func (d DB) ListReplies(ctx context.Context, q store.ReplyQuery) ([]store.Reply, string, error) {
	limit := store.ClampLimit(q.Limit, 100, 1000)
	var conds []string
	var args []any
	switch {
	case q.Unmatched:
		conds = append(conds, "group_id = ''")
	case q.GroupID != "":
		conds = append(conds, "group_id = ?")
		args = append(args, q.GroupID)
	}
	if q.Ambiguous {
		conds = append(conds, "ambiguous <> 0")
	}
	if q.Number != "" {
		conds = append(conds, "number = ?")
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
		conds = append(conds, "(received_at, id) < (?, ?)")
		args = append(args, recv, id)
	}
	rows, err := queryAll(ctx, d.c.Read, scanReply,
		`SELECT `+replyCols+` FROM replies`+where(conds)+` ORDER BY received_at DESC, id DESC LIMIT ?`,
		append(args, limit+1)...)
	if err != nil {
		return nil, "", d.errorf("list replies: %w", err)
	}
	rows, next := page(rows, limit, func(r replyRow) string {
		return store.EncodeCursor(nanosPart(r.reply.ReceivedAt), strconv.FormatInt(r.id, 10))
	})
	var out []store.Reply
	for _, r := range rows {
		out = append(out, r.reply)
	}
	return out, next, nil
}

// LoadAllEvents returns up to limit events of every key after position
// pos, in position order, which is commit order as far as the engine
// promises it (see its package doc).
func (d DB) LoadAllEvents(ctx context.Context, afterPos int64, limit int) ([]store.PositionedEvent, error) {
	limit = store.ClampLimit(limit, 1000, 10000)
	out, err := queryAll(ctx, d.c.Read, func(r Rows) (store.PositionedEvent, error) {
		var e store.PositionedEvent
		var t int64
		err := r.Scan(&e.Pos, &e.Key, &e.Seq, &e.Type, &e.Data, &t)
		e.Time = store.FromNanos(t)
		return e, err
	}, `SELECT pos, key, seq, type, data, time FROM journal WHERE pos > ? ORDER BY pos LIMIT ?`, afterPos, limit)
	if err != nil {
		return nil, d.errorf("load all events: %w", err)
	}
	return out, nil
}

// Flag stores a bool as the 0 or 1 of an integer column.
func Flag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
