package sqlq

import (
	"encoding/json"
	"fmt"

	"github.com/crewcast/crewcast/store"
)

// The projection upserts of both commit paths. Their column lists are the
// ones the scanners read (groupCols, deliveryCols), so that a column is
// named in one place.

// UpsertGroup writes one group row (arguments: GroupArgs), replacing the
// row with its id.
const UpsertGroup = `INSERT INTO groups (` + groupCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET status = excluded.status, from_number = excluded.from_number,
	mode = excluded.mode, text = excluded.text, pause_reason = excluded.pause_reason,
	created_at = excluded.created_at, updated_at = excluded.updated_at, counts = excluded.counts, seq = excluded.seq,
	answers = excluded.answers`

// GroupArgs returns UpsertGroup's arguments for g.
func GroupArgs(g *store.GroupRow) ([]any, error) {
	counts, err := json.Marshal(NonNilCounts(g.Counts))
	if err != nil {
		return nil, fmt.Errorf("group %q counts: %w", g.ID, err)
	}
	return []any{g.ID, string(g.Status), g.From, string(g.Mode), g.Text, g.PauseReason,
		store.Nanos(g.CreatedAt), store.Nanos(g.UpdatedAt), string(counts), int64(g.Seq), g.Answers}, nil
}

// Delivery rows are upserted by (group_id, number) with
// InsertDeliveries + the engine's rows (a VALUES list or a SELECT of
// deliveryCols, in that order) + OnDeliveryConflict.
const (
	InsertDeliveries   = `INSERT INTO deliveries (` + deliveryCols + `) `
	OnDeliveryConflict = `
	ON CONFLICT (group_id, number) DO UPDATE SET name = excluded.name, status = excluded.status,
	attempts = excluded.attempts, provider_message_id = excluded.provider_message_id,
	error_code = excluded.error_code, error_class = excluded.error_class, claimed_at = excluded.claimed_at,
	sent_at = excluded.sent_at, delivered_at = excluded.delivered_at, failed_at = excluded.failed_at,
	replied_at = excluded.replied_at, ack = excluded.ack, last_reply = excluded.last_reply,
	updated_at = excluded.updated_at, response = excluded.response, code = excluded.code`
)
