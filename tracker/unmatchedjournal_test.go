package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// unitRecorder keeps the units committed through it.
type unitRecorder struct {
	store.Store
	mu    sync.Mutex
	units []actor.Unit
}

func (s *unitRecorder) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	res, err := s.Store.Commit(ctx, units)
	if err == nil {
		s.mu.Lock()
		for i, u := range units {
			if res[i] == nil {
				s.units = append(s.units, u)
			}
		}
		s.mu.Unlock()
	}
	return res, err
}

type changeList struct {
	mu  sync.Mutex
	got []Change
}

func (c *changeList) Publish(ch Change) { c.mu.Lock(); c.got = append(c.got, ch); c.mu.Unlock() }

type kickCounter struct{ kicks int }

func (k *kickCounter) Enabled() bool { return true }
func (k *kickCounter) Kick()         { k.kicks++ }

// newTestUnmatched is an unmatched journal on st alone, as one node of
// several would have it.
func newTestUnmatched(t *testing.T, st store.Store, clk actor.Clock, every int) (*unmatchedJournal, *changeList, *kickCounter) {
	t.Helper()
	hub, out := &changeList{}, &kickCounter{}
	u := newUnmatchedJournal(unmatchedDeps{st: st, hub: hub, gate: &suppressionGate{}, webhooks: out, clock: clk,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), snapshotEvery: every})
	c := actor.NewCommitter(st, actor.CommitterOptions{Clock: clk})
	if err := u.start(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return u, hub, out
}

func inbound(id, text string) []crewcast.Event {
	return []crewcast.Event{{Provider: "fake", EventID: id, Kind: crewcast.KindInbound, From: "+15550109999", To: from, Text: text}}
}

// TestUnmatchedJournalOnItsOwn: the journal numbers its events through
// actor.Journaled, commits with them the replies, suppressions, outbox
// rows (carrying each event's sequence) and the inbox acknowledgement,
// publishes the head, snapshots every SnapshotEvery events, records an
// entry once, and after another writer appended (another node) fails
// with a conflict, catches up and records at the new head.
func TestUnmatchedJournalOnItsOwn(t *testing.T) {
	ctx := context.Background()
	clk := actor.NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	base := openStore(t, filepath.Join(t.TempDir(), "crewcast.db"), clk.Now)
	t.Cleanup(func() { _ = base.Close() })
	st := &unitRecorder{Store: base}
	u, hub, out := newTestUnmatched(t, st, clk, 2)

	for i, text := range []string{"who is this?", "STOP", "START"} {
		if err := u.record(ctx, store.InboxRef{Provider: "fake", EventID: fmt.Sprint("e-", i)}, inbound(fmt.Sprint("e-", i), text)); err != nil {
			t.Fatal(err)
		}
	}
	// Recorded already: no second event.
	if err := u.record(ctx, store.InboxRef{Provider: "fake", EventID: "e-0"}, inbound("e-0", "who is this?")); err != nil {
		t.Fatal(err)
	}
	var evs []actor.Event
	if err := base.Load(ctx, unmatchedKey, 0, func(e actor.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	wantKW := []string{"", "stop", "start"}
	if len(evs) != 3 {
		t.Fatalf("journal holds %d events, want 3", len(evs))
	}
	for i, e := range evs {
		var r unmatchedReply
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatal(err)
		}
		if e.Seq != uint64(i+1) || e.Type != "reply.unmatched" || r.EventID != fmt.Sprint("e-", i) || r.Keyword != wantKW[i] || !e.Time.Equal(clk.Now()) {
			t.Errorf("event %d = %+v (%+v)", i, e, r)
		}
	}
	if len(st.units) != 3 {
		t.Fatalf("%d units committed, want 3", len(st.units))
	}
	for i, unit := range st.units {
		eff := unit.Effects[0].(store.Effects)
		if unit.Key != unmatchedKey || unit.ExpectSeq != uint64(i) || len(eff.Outbox) != 1 || eff.Outbox[0].Seq != uint64(i+1) ||
			len(eff.Replies) != 1 || len(eff.InboxDone) != 1 || eff.InboxDone[0].Target != unmatchedKey {
			var outSeqs []uint64
			for _, r := range eff.Outbox {
				outSeqs = append(outSeqs, r.Seq)
			}
			t.Errorf("unit %d: key %q, expect seq %d, outbox seqs %v (want [%d]), %d replies, inbox done %+v",
				i, unit.Key, unit.ExpectSeq, outSeqs, i+1, len(eff.Replies), eff.InboxDone)
		}
		if (i == 1) != (len(eff.Suppress) == 1) || (i == 2) != (len(eff.Unsuppress) == 1) {
			t.Errorf("unit %d suppresses %v, unsuppresses %v", i, eff.Suppress, eff.Unsuppress)
		}
	}
	if out.kicks != 3 || len(hub.got) != 3 || hub.got[2].GroupID != unmatchedKey || hub.got[2].Seq != 3 {
		t.Errorf("kicks %d, changes %+v", out.kicks, hub.got)
	}
	if snap, err := base.LoadSnapshot(ctx, unmatchedKey); err != nil || snap.Seq != 2 || string(snap.State) != "{}" {
		t.Errorf("snapshot %+v, %v; want one at seq 2", snap, err)
	}

	// Another node takes the journal over and records one entry.
	other, _, _ := newTestUnmatched(t, base, clk, 2)
	if err := other.record(ctx, store.InboxRef{Provider: "fake", EventID: "o-1"}, inbound("o-1", "hi")); err != nil {
		t.Fatal(err)
	}
	// This node's position is stale: its commit conflicts, then it has
	// caught up and the retry lands after the other node's event.
	err := u.record(ctx, store.InboxRef{Provider: "fake", EventID: "e-3"}, inbound("e-3", "hi"))
	if !errors.Is(err, actor.ErrConflict) {
		t.Fatalf("record after another writer = %v, want a conflict", err)
	}
	if err := u.record(ctx, store.InboxRef{Provider: "fake", EventID: "e-3"}, inbound("e-3", "hi")); err != nil {
		t.Fatal(err)
	}
	evs = evs[:0]
	if err := base.Load(ctx, unmatchedKey, 0, func(e actor.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 || evs[4].Seq != 5 || hub.got[len(hub.got)-1].Seq != 5 {
		t.Fatalf("journal holds %d events (last %+v), head published %+v", len(evs), evs[len(evs)-1], hub.got[len(hub.got)-1])
	}
	// Caught up at 4 (the other node's snapshot), so 5 snapshots nothing;
	// the next event does.
	if err := u.record(ctx, store.InboxRef{Provider: "fake", EventID: "e-4"}, inbound("e-4", "hi")); err != nil {
		t.Fatal(err)
	}
	if snap, err := base.LoadSnapshot(ctx, unmatchedKey); err != nil || snap.Seq != 6 {
		t.Errorf("snapshot %+v, %v; want one at seq 6", snap, err)
	}
}
