package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/store/storetest"
)

// TestLoadAllEventsWaitsForEarlierPositions: journal positions come from an
// identity column, allocated at insert time, so with several nodes
// committing at once a lower position can become visible after a higher
// one. A reader that returned the higher one and moved its cursor past it
// (/v1/stream's Last-Event-ID) would never see the lower one. LoadAllEvents
// must stop before a position that a transaction still in flight may hold,
// and pass over a position whose transaction rolled back.
func TestLoadAllEventsWaitsForEarlierPositions(t *testing.T) {
	url := serverURL(t)
	schema := newSchema(t, url)
	s := openIn(t, url, schema, storetest.Config{})
	s.holeWait = 300 * time.Millisecond
	ctx := context.Background()
	conn := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		return c
	}
	ins := `INSERT INTO "` + schema + `".journal (key, seq, type, data, time) VALUES ($1, 1, 't', '', 1) RETURNING pos`
	insert := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, key string) int64 {
		t.Helper()
		var pos int64
		if err := q.QueryRow(ctx, ins, key).Scan(&pos); err != nil {
			t.Fatal(err)
		}
		return pos
	}
	load := func(after int64) []int64 {
		t.Helper()
		evs, err := s.LoadAllEvents(ctx, after, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, e := range evs {
			out = append(out, e.Pos)
		}
		return out
	}
	base := insert(conn(), "k0")

	// A node's commit holds the next position (with a transaction id, as
	// every journal writer has one before it inserts: the lease rows are
	// locked first) while another node's later position commits.
	a, err := conn().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Rollback(ctx) }()
	if _, err := a.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	held := insert(a, "ka")
	later := insert(conn(), "kb")
	if later <= held {
		t.Fatalf("positions %d, %d: want the in-flight one lower", held, later)
	}
	if got := load(base); len(got) != 0 {
		t.Fatalf("with position %d in flight, LoadAllEvents(%d) = %v: a reader would move past %d and never see it", held, base, got, held)
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := load(base); len(got) != 2 || got[0] != held || got[1] != later {
		t.Fatalf("after the commit: %v, want [%d %d]", got, held, later)
	}

	// A position whose transaction rolled back is a permanent hole: it is
	// passed over as soon as that transaction is over.
	r, err := conn().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	lost := insert(r, "kc")
	if err := r.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	after := insert(conn(), "kd")
	// (Were it waited for like an in-flight one, the read would give up
	// and return nothing.)
	if got := load(later); len(got) != 1 || got[0] != after {
		t.Fatalf("after rolled-back position %d: %v, want [%d]", lost, got, after)
	}
}
