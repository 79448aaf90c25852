package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/store/sqlq"
)

// TestInboxByMessageIDUsesItsIndex: adopting parked receipts looks them
// up by message id after every send result that finds a parked mark. The
// lookup scanned every inbox row of the provider (7 days of webhooks, a
// read that also keeps the WAL from being checkpointed) because the
// partial index inbox_message (on non-empty message ids) was not provably
// usable for "message_id = ?".
func TestInboxByMessageIDUsesItsIndex(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "plan.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := queryPlan(t, s, sqlq.SelectInboxByMessageID, "telnyx", "m-1")
	if p := plan; !strings.Contains(p, "USING INDEX inbox_message") {
		t.Fatalf("InboxByMessageID plan %q does not use inbox_message", p)
	}
}

// TestSentSinceUsesItsIndex: the senders list counts each number's sends of
// the last hour; the count reads only the deliveries claimed since (the
// deliveries_claimed index), not every delivery ever kept.
func TestSentSinceUsesItsIndex(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "plan.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := queryPlan(t, s, sqlq.SelectSentSince, int64(1)); !strings.Contains(p, "USING COVERING INDEX deliveries_claimed") {
		t.Fatalf("SentSince plan %q does not use deliveries_claimed", p)
	}
}

func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.r.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}
