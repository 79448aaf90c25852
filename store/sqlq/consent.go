package sqlq

import (
	"context"
	"time"

	"github.com/crewcast/crewcast/store"
)

// ---- consent history (store.Consents) ----

// InsertConsent appends one consent entry (arguments: ConsentArgs).
const InsertConsent = `INSERT INTO consent_history (number, at, state, source, by_id, text) VALUES (?, ?, ?, ?, ?, ?)`

// ConsentArgs returns InsertConsent's arguments for e.
func ConsentArgs(e *store.ConsentEntry, now time.Time) []any {
	return []any{e.Number, store.Nanos(OrNow(e.At, now)), e.State, e.Source, e.By, e.Text}
}

// AppendConsentIn appends entries inside the transaction q.
func AppendConsentIn(ctx context.Context, q Querier, now time.Time, entries []store.ConsentEntry) error {
	for i := range entries {
		if _, err := q.Exec(ctx, InsertConsent, ConsentArgs(&entries[i], now)...); err != nil {
			return err
		}
	}
	return nil
}

// AppendConsent appends entries in one transaction.
func (d DB) AppendConsent(ctx context.Context, entries ...store.ConsentEntry) error {
	if len(entries) == 0 {
		return nil
	}
	now := d.c.Now()
	if err := d.c.WriteTx(ctx, func(q Querier) error { return AppendConsentIn(ctx, q, now, entries) }); err != nil {
		return d.errorf("append consent: %w", err)
	}
	return nil
}

func scanConsent(r Rows) (store.ConsentEntry, error) {
	var e store.ConsentEntry
	var at int64
	if err := r.Scan(&e.Number, &at, &e.State, &e.Source, &e.By, &e.Text); err != nil {
		return e, err
	}
	e.At = store.FromNanos(at)
	return e, nil
}

// ConsentHistory returns the number's history, oldest first.
func (d DB) ConsentHistory(ctx context.Context, number string) ([]store.ConsentEntry, error) {
	out, err := queryAll(ctx, d.c.Read, scanConsent,
		`SELECT number, at, state, source, by_id, text FROM consent_history WHERE number = ? ORDER BY id`, number)
	if err != nil {
		return nil, d.errorf("consent history: %w", err)
	}
	if out == nil {
		out = []store.ConsentEntry{}
	}
	return out, nil
}

// LatestConsent returns the newest entry of each number that has one.
func (d DB) LatestConsent(ctx context.Context, numbers []string) (map[string]store.ConsentEntry, error) {
	out := map[string]store.ConsentEntry{}
	const chunk = 500 // stays far below SQLite's bound-parameter limit
	for len(numbers) > 0 {
		n := min(chunk, len(numbers))
		args := make([]any, n)
		for i, v := range numbers[:n] {
			args[i] = v
		}
		numbers = numbers[n:]
		rows, err := queryAll(ctx, d.c.Read, scanConsent, `SELECT h.number, h.at, h.state, h.source, h.by_id, h.text
			FROM consent_history h WHERE h.id IN (SELECT MAX(id) FROM consent_history WHERE number IN `+inList(n)+` GROUP BY number)`, args...)
		if err != nil {
			return nil, d.errorf("latest consent: %w", err)
		}
		for _, e := range rows {
			out[e.Number] = e
		}
	}
	return out, nil
}
