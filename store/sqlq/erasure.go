package sqlq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Eraser is one statement of an erasure: it changes the rows of one place
// that name a number. Args gives its arguments from the number in clear and
// its replacement.
type Eraser struct {
	Place string // the count it adds to ("replies", "contacts", ...)
	SQL   string
	Args  func(number, replacement string) []any
}

// keyNames is the condition that a route key names a number: keys are
// "c:<ours>:<theirs>" and "g:<ours>:<n1>,<n2>,...", so a number is one
// whole ":"- or ","-separated part (never the prefix of a longer number).
const keyNames = `(key LIKE ? OR key LIKE ? OR key LIKE ? OR key LIKE ?)`

// keyArgs are keyNames's arguments.
func keyArgs(number string) []any {
	return []any{"%:" + number, "%:" + number + ",%", "%," + number, "%," + number + ",%"}
}

// NumberErasers are the statements every engine runs for EraseNumber, on
// the tables of migration 00001. An engine appends its own (tables that
// only it has) through EraseOptions.Extra.
var NumberErasers = []Eraser{
	// Every reply of the number, matched or not (a group's own replies
	// were already rewritten by EraseFromGroup; this catches the rest).
	{"replies", `UPDATE replies SET number = ?, text = '', media = '[]', redacted = 1 WHERE number = ?`,
		func(n, r string) []any { return []any{r, n} }},
	{"replies", `UPDATE replies SET to_number = ? WHERE to_number = ?`,
		func(n, r string) []any { return []any{r, n} }},
	// Conversation and thread routes are keyed by numbers.
	{"routes", `DELETE FROM routes WHERE ` + keyNames,
		func(n, _ string) []any { return keyArgs(n) }},
	{"deliveries", `UPDATE deliveries SET number = ?, name = '', last_reply = '' WHERE number = ?`,
		func(n, r string) []any { return []any{r, n} }},
	{"groups", `UPDATE groups SET from_number = ? WHERE from_number = ?`,
		func(n, r string) []any { return []any{r, n} }},
	// Their contact (migration 00005) goes, with its tags and crew
	// memberships (deleted explicitly: SQLite's foreign keys may be off).
	{"crew_members", `DELETE FROM crew_members WHERE contact_id IN (SELECT id FROM contacts WHERE number = ?)`,
		func(n, _ string) []any { return []any{n} }},
	{"contact_tags", `DELETE FROM contact_tags WHERE contact_id IN (SELECT id FROM contacts WHERE number = ?)`,
		func(n, _ string) []any { return []any{n} }},
	{"contacts", `DELETE FROM contacts WHERE number = ?`,
		func(n, _ string) []any { return []any{n} }},
	// Their consent history (migration 00020) goes with their contact; the
	// suppression itself stays, under the keyed hash (below).
	{"consent_history", `DELETE FROM consent_history WHERE number = ?`,
		func(n, _ string) []any { return []any{n} }},
}

// OutboxNeedle is what an outbound webhook payload (JSON) holds when it
// names number: the number as a JSON string.
func OutboxNeedle(number string) []byte { return []byte(`"` + number + `"`) }

// EraseOptions are what differs between the engines in EraseNumber.
type EraseOptions struct {
	// Lock is run first in the transaction ("" for none): the statement
	// that serializes suppression writes with claims (store.Effects.Claim).
	Lock string
	// Extra are the engine's own erasure statements, run after
	// NumberErasers.
	Extra []Eraser
	// Audit are the entries that record the erasure, appended in its
	// transaction.
	Audit []store.AuditEntry
}

// EraseNumber is store.Erasure's EraseNumber on d with the engine's
// options. (A function, not a DB method: every DB method is promoted into
// the engines as a store.Store method.)
func EraseNumber(ctx context.Context, d DB, number, replacement, keep string, o EraseOptions) (store.ErasedCounts, error) {
	counts := store.ErasedCounts{}
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		clear(counts)
		if o.Lock != "" {
			if _, err := tx.Exec(ctx, o.Lock); err != nil {
				return err
			}
		}
		for _, e := range append(append([]Eraser(nil), NumberErasers...), o.Extra...) {
			n, err := tx.Exec(ctx, e.SQL, e.Args(number, replacement)...)
			if err != nil {
				return err
			}
			if n > 0 {
				counts[e.Place] += int(n)
			}
		}
		n, err := eraseInbox(ctx, tx, number, d.c.Now().UnixNano())
		if err != nil {
			return err
		}
		if n > 0 {
			counts["inbox"] = n
		}
		if n, err = redactOutboxTexts(ctx, tx); err != nil {
			return err
		}
		if n > 0 {
			counts["webhook_outbox"] += n
		}
		sps, err := queryAll(ctx, tx, scanSuppression, `SELECT number, reason, created_at FROM suppressions WHERE number = ?`, number)
		if err != nil {
			return err
		}
		for _, sp := range sps {
			if _, err := tx.Exec(ctx, `DELETE FROM suppressions WHERE number = ?`, number); err != nil {
				return err
			}
			if keep != "" {
				// The hash keeps the opt-out in force; an existing hashed
				// row (an earlier erasure) stays as it is.
				if _, err := tx.Exec(ctx, `INSERT INTO suppressions (number, reason, created_at) VALUES (?, ?, ?)
					ON CONFLICT (number) DO NOTHING`, keep, sp.Reason, store.Nanos(sp.CreatedAt)); err != nil {
					return err
				}
			}
			counts["suppressions"]++
		}
		return appendAudit(ctx, tx, d.c.Now(), o.Audit)
	})
	if err != nil {
		return nil, d.errorf("erase number: %w", err)
	}
	return counts, nil
}

// redactOutboxTexts empties the message text in the outbound webhook
// payloads (data.group.text, data.recipient.text) of every group whose
// text has been redacted:
// the erasure redacts a finished group's text in the group, and the events
// that reported the group must not keep it. Payloads naming the person
// were deleted by the engine's erasers before this runs.
func redactOutboxTexts(ctx context.Context, tx Querier) (int, error) {
	type entry struct {
		id      int64
		payload []byte
	}
	es, err := queryAll(ctx, tx, func(r Rows) (entry, error) {
		var e entry
		err := r.Scan(&e.id, &e.payload)
		return e, err
	}, `SELECT o.id, o.payload FROM webhook_outbox o JOIN groups g ON g.id = o.group_id WHERE g.text = ''`)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, e := range es {
		var body map[string]any
		if json.Unmarshal(e.payload, &body) != nil {
			continue
		}
		data, _ := body["data"].(map[string]any)
		grp, _ := data["group"].(map[string]any)
		// The group's text, and the text a recipient was sent (their
		// rendered copy of it).
		texts := []map[string]any{grp}
		if r, ok := data["recipient"].(map[string]any); ok {
			texts = append(texts, r)
		}
		if rs, ok := data["recipients"].([]any); ok {
			for _, r := range rs {
				if r, ok := r.(map[string]any); ok {
					texts = append(texts, r)
				}
			}
		}
		found := false
		for _, m := range texts {
			if t, _ := m["text"].(string); t != "" {
				m["text"] = ""
				found = true
			}
		}
		if !found {
			continue
		}
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_outbox SET payload = ? WHERE id = ?`, b, e.id); err != nil {
			return 0, err
		}
		changed++
	}
	return changed, nil
}

// eraseInbox empties the payload of every inbox entry that names the
// number and marks it processed, so it is never applied (its provider and
// event id stay, so a replay of the webhook is still recognized). The
// payload is binary in one engine and searched here, entry by entry.
func eraseInbox(ctx context.Context, tx Querier, number string, now int64) (int, error) {
	type entry struct {
		id      int64
		payload []byte
	}
	var changed int
	after := int64(0)
	needle := []byte(`"` + number + `"`) // a JSON string: never a longer number's prefix
	for {
		es, err := queryAll(ctx, tx, func(r Rows) (entry, error) {
			var e entry
			err := r.Scan(&e.id, &e.payload)
			return e, err
		}, `SELECT id, payload FROM inbox WHERE id > ? ORDER BY id LIMIT 500`, after)
		if err != nil {
			return 0, err
		}
		for _, e := range es {
			after = e.id
			if !bytes.Contains(e.payload, needle) {
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE inbox SET payload = ?, processed_at = CASE WHEN processed_at = 0 THEN ? ELSE processed_at END
				WHERE id = ?`, []byte("[]"), now, e.id); err != nil {
				return 0, err
			}
			changed++
		}
		if len(es) < 500 {
			return changed, nil
		}
	}
}

// GroupsWithNumber returns the ids of the groups whose deliveries or
// replies name number, and of those whose creation does: a number that is
// only in a group's frozen policy (an escalation number, docs/design.md §12)
// has no row of its own. The creation events are read whole and searched
// here (erasure is rare; the journal's data is a BLOB or BYTEA).
func (d DB) GroupsWithNumber(ctx context.Context, number string) ([]string, error) {
	out, err := queryAll(ctx, d.c.Read, scanString, `SELECT group_id FROM deliveries WHERE number = ?
		UNION SELECT group_id FROM replies WHERE number = ? AND group_id <> ''
		UNION SELECT id FROM groups WHERE from_number = ? ORDER BY 1`, number, number, number)
	if err != nil {
		return nil, d.errorf("groups with number: %w", err)
	}
	needle := OutboxNeedle(number)
	named, err := queryAll(ctx, d.c.Read, func(r Rows) (string, error) {
		var key string
		var data []byte
		if err := r.Scan(&key, &data); err != nil || !bytes.Contains(data, needle) {
			return "", err
		}
		return key, nil
	}, `SELECT key, data FROM journal WHERE type = 'group.created'`)
	if err != nil {
		return nil, d.errorf("groups with number: %w", err)
	}
	for _, k := range named {
		if k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out, nil
}

// EraseFromGroup is store.Erasure's EraseFromGroup.
func (d DB) EraseFromGroup(ctx context.Context, id string, e store.GroupErasure) (store.ErasedCounts, error) {
	return EraseFromGroupFenced(ctx, d, id, e, "")
}

// EraseFromGroupFenced is EraseFromGroup that first runs fence in its
// transaction ("" for none): a query that returns a row only while this
// store still holds the group's shard lease at its epoch, locking it (FOR
// SHARE) until the rewrite commits, as every commit does. Without a row
// the rewrite fails with actor.ErrFenced and writes nothing, so a node that
// lost the group's shard never rewrites it under its new owner's commits.
func EraseFromGroupFenced(ctx context.Context, d DB, id string, e store.GroupErasure, fence string, fenceArgs ...any) (store.ErasedCounts, error) {
	counts := store.ErasedCounts{}
	err := d.c.WriteTx(ctx, func(tx Querier) error {
		clear(counts)
		if fence != "" {
			held, err := queryAll(ctx, tx, func(r Rows) (int64, error) {
				var v int64
				err := r.Scan(&v)
				return v, err
			}, fence, fenceArgs...)
			if err != nil {
				return err
			}
			if len(held) == 0 {
				return actor.ErrFenced
			}
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM groups WHERE id = ?`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if e.Event != nil {
			c, err := rewriteJournal(ctx, tx, id, e.Event)
			if err != nil {
				return err
			}
			if c > 0 {
				counts["journal"] = c
			}
		}
		stmts := []Eraser{
			{"deliveries", `UPDATE deliveries SET number = ?, name = '', last_reply = '' WHERE group_id = ? AND number = ?`,
				func(n, r string) []any { return []any{r, id, n} }},
			{"replies", `UPDATE replies SET number = ?, text = '', media = '[]', redacted = 1 WHERE group_id = ? AND number = ?`,
				func(n, r string) []any { return []any{r, id, n} }},
			{"groups", `UPDATE groups SET from_number = ? WHERE id = ? AND from_number = ?`,
				func(n, r string) []any { return []any{r, id, n} }},
			{"routes", `DELETE FROM routes WHERE value = ? AND ` + keyNames,
				func(n, _ string) []any { return append([]any{id}, keyArgs(n)...) }},
			{"snapshots", `DELETE FROM snapshots WHERE key = ?`,
				func(string, string) []any { return []any{id} }},
		}
		if e.RedactText {
			stmts = append(stmts, Eraser{"groups", `UPDATE groups SET text = '' WHERE id = ? AND text <> ''`,
				func(string, string) []any { return []any{id} }},
				// Status webhooks of the other recipients repeat the
				// message body; applied already, they are kept only to
				// recognize replays.
				Eraser{"inbox", `UPDATE inbox SET payload = ? WHERE target = ? AND processed_at <> 0 AND payload <> ?`,
					func(string, string) []any { return []any{[]byte("[]"), id, []byte("[]")} }})
		}
		for _, s := range stmts {
			c, err := tx.Exec(ctx, s.SQL, s.Args(e.Number, e.Replacement)...)
			if err != nil {
				return err
			}
			if c > 0 && s.Place != "snapshots" {
				counts[s.Place] += int(c)
			}
		}
		return nil
	})
	if err != nil {
		return nil, d.errorf("erase from group %q: %w", id, err)
	}
	return counts, nil
}

// rewriteJournal rewrites the group's journal events with fn and returns how
// many changed; an event fn leaves as it was is not written again.
func rewriteJournal(ctx context.Context, tx Querier, id string, fn func(string, []byte) ([]byte, error)) (int, error) {
	type ev struct {
		pos  int64
		typ  string
		data []byte
	}
	evs, err := queryAll(ctx, tx, func(r Rows) (ev, error) {
		var e ev
		err := r.Scan(&e.pos, &e.typ, &e.data)
		return e, err
	}, `SELECT pos, type, data FROM journal WHERE key = ? ORDER BY seq`, id)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, e := range evs {
		data, err := fn(e.typ, e.data)
		if err != nil {
			return 0, fmt.Errorf("rewrite event %d: %w", e.pos, err)
		}
		if bytes.Equal(data, e.data) {
			continue
		}
		if data == nil {
			data = []byte{}
		}
		if _, err := tx.Exec(ctx, `UPDATE journal SET data = ? WHERE pos = ?`, data, e.pos); err != nil {
			return 0, err
		}
		changed++
	}
	return changed, nil
}
