package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/crewcast/crewcast/store"
)

// Journal positions (the all-groups stream's Last-Event-ID) come from an
// identity column, so they are allocated when a row is inserted, not when
// its transaction commits. One Store serializes its commits, but several
// nodes commit at once: position 5 can still be in flight when 6 is
// visible. A reader that handed out 6 would resume after it and never see
// 5. LoadAllEvents therefore never returns an event beyond a missing
// position until it knows the position is final: committed (then it is
// returned) or rolled back (a permanent hole).
//
// How it knows: every journal writer has a transaction id before it
// inserts (Commit and erasure lock their shard's lease rows first, which
// assigns one), so the writer of a missing position below a visible one
// got its id before that visible row committed, hence before any snapshot
// the reader takes afterwards: its id is below that snapshot's xmax. Once
// the oldest running transaction (a later snapshot's xmin) is at or past
// that xmax, every such writer has finished, and a re-read shows each
// missing position for what it is.

// defaultHoleWait bounds how long one read waits for in-flight positions
// before returning only the events below the first of them (the next read
// continues from there; nothing is skipped).
const defaultHoleWait = 2 * time.Second

// LoadAllEvents returns up to limit journal events after afterPos in
// position order, stopping before any position a transaction still in
// flight may hold (see above).
func (s *Store) LoadAllEvents(ctx context.Context, afterPos int64, limit int) ([]store.PositionedEvent, error) {
	evs, err := s.queries.LoadAllEvents(ctx, afterPos, limit)
	if err != nil || firstGap(afterPos, evs) < 0 {
		return evs, err
	}
	// Positions up to the last one read were all allocated by writers
	// that had their transaction ids before this snapshot's xmax.
	top := evs[len(evs)-1].Pos
	var xmax uint64
	if err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&xmax); err != nil {
		return nil, fmt.Errorf("postgres: load all events: snapshot: %w", err)
	}
	wait := s.holeWait
	if wait <= 0 {
		wait = defaultHoleWait
	}
	deadline := time.Now().Add(wait)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		var xmin uint64
		if err := s.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
			return nil, fmt.Errorf("postgres: load all events: snapshot: %w", err)
		}
		if xmin >= xmax {
			break
		}
		if time.Now().After(deadline) {
			// A long transaction elsewhere keeps the horizon back: give
			// what is certainly complete, the events below the first gap.
			return evs[:firstGap(afterPos, evs)], nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
	}
	evs, err = s.queries.LoadAllEvents(ctx, afterPos, limit)
	if err != nil {
		return nil, err
	}
	// Every position up to top is final now; beyond it new gaps may have
	// opened, which the next read handles.
	n := len(evs)
	for n > 0 && evs[n-1].Pos > top {
		n--
	}
	return evs[:n], nil
}

// firstGap returns the index of the first event that follows a missing
// position (after afterPos), or -1 when positions are contiguous.
func firstGap(afterPos int64, evs []store.PositionedEvent) int {
	next := afterPos + 1
	for i, e := range evs {
		if e.Pos != next {
			return i
		}
		next++
	}
	return -1
}
