package actor

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"
)

func ev(typ string, data string) Event { return Event{Type: typ, Data: []byte(data)} }

func TestMemoryStoreCommitConflictsPerUnit(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	type effect struct{ Row string }
	res, err := m.Commit(ctx, []Unit{
		{Key: "a", ExpectSeq: 0, Events: []Event{ev("x", "1"), ev("x", "2")}, Effects: []any{effect{"a1"}},
			Reminders: []ReminderOp{{Name: "check", Due: time.Unix(100, 0)}}},
		{Key: "b", ExpectSeq: 3, Events: []Event{ev("x", "1")}, Effects: []any{effect{"b1"}}},
		{Key: "a", ExpectSeq: 2, Events: []Event{ev("x", "3")}, Effects: []any{&effect{"a2"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != nil || res[2] != nil {
		t.Fatalf("results = %v, want units 0 and 2 committed", res)
	}
	var ce *ConflictError
	if !errors.As(res[1], &ce) || !errors.Is(res[1], ErrConflict) || ce.Key != "b" || ce.Expected != 3 || ce.Actual != 0 {
		t.Fatalf("unit 1 result = %v, want ConflictError{b, 3, 0}", res[1])
	}
	var seqs []uint64
	if err := m.Load(ctx, "a", 1, func(e Event) error { seqs = append(seqs, e.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 2 || seqs[0] != 2 || seqs[1] != 3 {
		t.Fatalf("a's events after 1 = %v, want [2 3]", seqs)
	}
	if m.LastSeq("b") != 0 {
		t.Fatal("failed unit left a trace")
	}
	if eff := m.Effects("a"); len(eff) != 2 || eff[0] != (effect{"a1"}) || eff[1].(*effect).Row != "a2" {
		t.Fatalf("recorded effects = %#v", eff)
	}
	if len(m.Effects("b")) != 0 {
		t.Fatal("effects of a failed unit recorded")
	}
	if rs := m.Reminders("a"); len(rs) != 1 || rs[0].Name != "check" {
		t.Fatalf("reminders = %+v", rs)
	}
	units := m.CommittedUnits()
	if len(units) != 2 || units[1].Events[0].Seq != 3 {
		t.Fatalf("committed units = %+v", units)
	}
	// Batch-level failure writes nothing.
	errDisk := errors.New("disk full")
	m.SetFaults(MemoryFaults{Commit: func([]Unit) error { return errDisk }})
	if _, err := m.Commit(ctx, []Unit{{Key: "c", Events: []Event{ev("x", "1")}}}); !errors.Is(err, errDisk) {
		t.Fatalf("Commit with fault = %v", err)
	}
	if m.LastSeq("c") != 0 {
		t.Fatal("failed batch wrote")
	}
}

func TestMemoryStoreDetectsCorruptSnapshot(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	if _, err := m.LoadSnapshot(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing snapshot = %v, want ErrNotFound", err)
	}
	if err := m.SaveSnapshot(ctx, Snapshot{Key: "k", Seq: 4, State: []byte(`{"n":4}`)}); err != nil {
		t.Fatal(err)
	}
	s, err := m.LoadSnapshot(ctx, "k")
	if err != nil || s.Seq != 4 || string(s.State) != `{"n":4}` {
		t.Fatalf("LoadSnapshot = %+v, %v", s, err)
	}
	if !m.CorruptSnapshot("k") {
		t.Fatal("nothing to corrupt")
	}
	if _, err := m.LoadSnapshot(ctx, "k"); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("corrupt snapshot = %v, want ErrCorruptSnapshot", err)
	}
	if err := m.DeleteSnapshot(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LoadSnapshot(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted snapshot = %v", err)
	}
}

// tally is a tiny event-sourced state: a sum of event values.
type tally struct {
	Sum    int `json:"sum"`
	Events int `json:"events"`
}

func applyTally(s *tally, e Event) error {
	n, err := strconv.Atoi(string(e.Data))
	if err != nil {
		return err
	}
	s.Sum += n
	s.Events++
	return nil
}

func decodeTally(b []byte) (tally, error) {
	var s tally
	err := json.Unmarshal(b, &s)
	return s, err
}

func seedJournal(t *testing.T, m *MemoryStore, key string, values ...int) {
	t.Helper()
	var evs []Event
	for _, v := range values {
		evs = append(evs, ev("add", strconv.Itoa(v)))
	}
	res, err := m.Commit(context.Background(), []Unit{{Key: key, ExpectSeq: m.LastSeq(key), Events: evs}})
	if err != nil || res[0] != nil {
		t.Fatalf("seed: %v %v", err, res)
	}
}

func TestRecoverFromSnapshotAndLaterEvents(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	seedJournal(t, m, "k", 1, 2, 3, 4, 5, 6)
	// Snapshot at seq 3 (sum 6); events 4..6 replay on top.
	m.SaveSnapshot(ctx, Snapshot{Key: "k", Seq: 3, State: []byte(`{"sum":6,"events":3}`)})
	res, err := Recover(ctx, m, m, "k", decodeTally, applyTally)
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Sum != 21 || res.Seq != 6 || !res.FromSnapshot || res.SnapshotSeq != 3 || res.Replayed != 3 || res.SnapshotErr != nil {
		t.Fatalf("Recover = %+v", res)
	}
	// Without a snapshot store: the whole journal.
	res, err = Recover(ctx, m, nil, "k", decodeTally, applyTally)
	if err != nil || res.State.Sum != 21 || res.Replayed != 6 || res.FromSnapshot {
		t.Fatalf("Recover without snapshots = %+v, %v", res, err)
	}
	// A new key.
	res, err = Recover(ctx, m, m, "nobody", decodeTally, applyTally)
	if err != nil || res.Seq != 0 || res.State != (tally{}) {
		t.Fatalf("Recover of a new key = %+v, %v", res, err)
	}
}

func TestRecoverFallsBackOnCorruptSnapshot(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	seedJournal(t, m, "k", 1, 2, 3, 4)
	m.SaveSnapshot(ctx, Snapshot{Key: "k", Seq: 2, State: []byte(`{"sum":3,"events":2}`)})
	m.CorruptSnapshot("k")
	res, err := Recover(ctx, m, m, "k", decodeTally, applyTally)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res.SnapshotErr, ErrCorruptSnapshot) || res.FromSnapshot || res.State.Sum != 10 || res.Replayed != 4 || res.Seq != 4 {
		t.Fatalf("Recover = %+v, want full replay with SnapshotErr", res)
	}
	// An undecodable snapshot is treated the same way.
	m.SaveSnapshot(ctx, Snapshot{Key: "k", Seq: 2, State: []byte(`not json`)})
	res, err = Recover(ctx, m, m, "k", decodeTally, applyTally)
	if err != nil || !errors.Is(res.SnapshotErr, ErrCorruptSnapshot) || res.State.Sum != 10 {
		t.Fatalf("Recover with undecodable snapshot = %+v, %v", res, err)
	}
}

func TestRecoverReturnsStoreErrors(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	seedJournal(t, m, "k", 1)
	errIO := errors.New("i/o error")
	m.SetFaults(MemoryFaults{LoadSnapshot: func(string) error { return errIO }})
	if _, err := Recover(ctx, m, m, "k", decodeTally, applyTally); !errors.Is(err, errIO) {
		t.Fatalf("snapshot I/O error = %v, want it returned (not a silent fallback)", err)
	}
	m.SetFaults(MemoryFaults{Load: func(string) error { return errIO }})
	if _, err := Recover(ctx, m, m, "k", decodeTally, applyTally); !errors.Is(err, errIO) {
		t.Fatalf("journal I/O error = %v", err)
	}
	m.SetFaults(MemoryFaults{})
	badApply := errors.New("bad event")
	if _, err := Recover(ctx, m, m, "k", decodeTally, func(*tally, Event) error { return badApply }); !errors.Is(err, badApply) {
		t.Fatalf("apply error = %v", err)
	}
}

// gapJournal returns events with a hole.
type gapJournal struct{ MemoryStore }

func (g *gapJournal) Load(ctx context.Context, key string, after uint64, fn func(Event) error) error {
	for _, s := range []uint64{1, 3} {
		if err := fn(Event{Seq: s, Data: []byte("1")}); err != nil {
			return err
		}
	}
	return nil
}

func TestRecoverRejectsSequenceGap(t *testing.T) {
	if _, err := Recover(context.Background(), &gapJournal{}, nil, "k", decodeTally, applyTally); err == nil {
		t.Fatal("a journal gap must fail recovery")
	}
}

func TestBatcherGroupsConcurrentCallers(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	first := make(chan struct{})
	release := make(chan struct{})
	b := NewBatcher(func(_ context.Context, items []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(items))
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 10
		}
		return out, nil
	}, BatcherOptions{MaxBatch: 40})
	// An idle batcher flushes a lone call at once.
	leaderDone := make(chan int, 1)
	go func() {
		v, _ := b.Do(context.Background(), 1)
		leaderDone <- v
	}()
	<-first
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 2; i < n+2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			v, err := b.Do(context.Background(), i)
			if err != nil || v != i*10 {
				errs <- errors.New("wrong result for " + strconv.Itoa(i) + ": " + strconv.Itoa(v))
			}
		}(i)
	}
	waitUntil(t, "callers to queue", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == n // the leader's item is out of the queue, in flight
	})
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if v := recv(t, leaderDone); v != 10 {
		t.Fatalf("leader result %d", v)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sizes) != 4 || sizes[0] != 1 || sizes[1] != 40 || sizes[2] != 40 || sizes[3] != 20 {
		t.Fatalf("flush sizes = %v, want [1 40 40 20]", sizes)
	}
	if st := b.Stats(); st.Flushes != 4 || st.Items != n+1 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestBatcherCancelledWaiterIsNotFlushed(t *testing.T) {
	first, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var flushed []int
	b := NewBatcher(func(_ context.Context, items []int) ([]struct{}, error) {
		mu.Lock()
		flushed = append(flushed, items...)
		mu.Unlock()
		if items[0] == 1 {
			close(first)
			<-release
		}
		return make([]struct{}, len(items)), nil
	}, BatcherOptions{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Do(context.Background(), 1)
	}()
	<-first
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.Do(ctx, 2)
		errc <- err
	}()
	ok := make(chan error, 1)
	go func() {
		_, err := b.Do(context.Background(), 3)
		ok <- err
	}()
	waitUntil(t, "two waiters", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 2
	})
	cancel()
	if err := recv(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Do = %v", err)
	}
	close(release)
	if err := recv(t, ok); err != nil {
		t.Fatal(err)
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	for _, v := range flushed {
		if v == 2 {
			t.Fatalf("cancelled item was flushed: %v", flushed)
		}
	}
}

func TestBatcherFlushPanicAndBadResults(t *testing.T) {
	b := NewBatcher(func(context.Context, []int) ([]int, error) { panic("flush bug") }, BatcherOptions{})
	if _, err := b.Do(context.Background(), 1); err == nil {
		t.Fatal("panicking flush must fail the items")
	}
	short := NewBatcher(func(context.Context, []int) ([]int, error) { return nil, nil }, BatcherOptions{})
	if _, err := short.Do(context.Background(), 1); err == nil {
		t.Fatal("a flush returning too few results must fail the items")
	}
}

func TestCommitterIsolatesFailingUnits(t *testing.T) {
	m := NewMemoryStore()
	metrics := newCountingMetrics()
	c := NewCommitter(m, CommitterOptions{Metrics: metrics})
	ctx := context.Background()
	// Many actors commit concurrently; one of them with a stale ExpectSeq.
	seedJournal(t, m, "stale", 1)
	var wg sync.WaitGroup
	results := make([]error, 50)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			u := Unit{Key: "k" + strconv.Itoa(i), Events: []Event{ev("add", "1")}}
			if i == 7 {
				u.Key = "stale"
			}
			results[i] = c.Commit(ctx, u)
		}(i)
	}
	wg.Wait()
	for i, err := range results {
		if i == 7 {
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("stale unit: %v, want a conflict", err)
			}
		} else if err != nil {
			t.Fatalf("unit %d: %v", i, err)
		}
	}
	if st := c.Stats(); st.Items != 50 || metrics.commitUnits.Load() != 50 || metrics.commitBatches.Load() != int64(st.Flushes) {
		t.Fatalf("stats %+v, metrics %d units in %d batches", st, metrics.commitUnits.Load(), metrics.commitBatches.Load())
	}
	// A batch-level error reaches every caller in the batch.
	errDown := errors.New("database down")
	m.SetFaults(MemoryFaults{Commit: func([]Unit) error { return errDown }})
	if err := c.Commit(ctx, Unit{Key: "z", Events: []Event{ev("add", "1")}}); !errors.Is(err, errDown) {
		t.Fatalf("batch error = %v", err)
	}
}

func TestJournaledPersistAndSnapshots(t *testing.T) {
	ctx := context.Background()
	clk := NewManualClock(time.Unix(500, 0))
	m := NewMemoryStore()
	c := NewCommitter(m, CommitterOptions{})
	j := NewJournaled(JournaledConfig{Key: "acct", Committer: c, Snapshots: m, SnapshotEvery: 3, Clock: clk})
	state := tally{}
	for i := 1; i <= 7; i++ {
		e := ev("add", strconv.Itoa(i))
		if err := j.PersistEvents(ctx, e); err != nil {
			t.Fatal(err)
		}
		applyTally(&state, e)
		if err := j.MaybeSnapshot(ctx, func() ([]byte, error) { return json.Marshal(state) }); err != nil {
			t.Fatal(err)
		}
	}
	if j.Seq() != 7 || j.SinceSnapshot() != 1 || j.Key() != "acct" {
		t.Fatalf("seq %d, since snapshot %d", j.Seq(), j.SinceSnapshot())
	}
	snap, err := m.LoadSnapshot(ctx, "acct")
	if err != nil || snap.Seq != 6 {
		t.Fatalf("latest snapshot %+v, %v; want seq 6", snap, err)
	}
	units := m.CommittedUnits()
	if units[0].Events[0].Time != time.Unix(500, 0) || units[0].Events[0].Seq != 1 {
		t.Fatalf("event not stamped: %+v", units[0].Events[0])
	}
	res, err := Recover(ctx, m, m, "acct", decodeTally, applyTally)
	if err != nil || res.State != state || res.Replayed != 1 {
		t.Fatalf("Recover = %+v, %v; want %+v from snapshot + 1 event", res, err, state)
	}
	// A second writer of the same key (e.g. a stale instance) conflicts
	// and does not advance.
	other := NewJournaled(JournaledConfig{Key: "acct", Committer: c, Seq: 5})
	err = other.PersistEvents(ctx, ev("add", "1"))
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Actual != 7 || other.Seq() != 5 {
		t.Fatalf("stale writer: %v, seq %d", err, other.Seq())
	}
	// A snapshot store error surfaces.
	m.SetFaults(MemoryFaults{SaveSnapshot: func(Snapshot) error { return errors.New("no space") }})
	for i := 0; i < 2; i++ {
		j.PersistEvents(ctx, ev("add", "1"))
	}
	if err := j.MaybeSnapshot(ctx, func() ([]byte, error) { return []byte("{}"), nil }); err == nil {
		t.Fatal("snapshot save error swallowed")
	}
}

// TestJournaledStampMatchesPersist: effects built from Stamp's events
// (a projection carrying the sequence, say) commit in the same unit as
// those events, which Persist journals with exactly the stamped sequence
// numbers and times.
func TestJournaledStampMatchesPersist(t *testing.T) {
	ctx := context.Background()
	clk := NewManualClock(time.Unix(900, 0))
	m := NewMemoryStore()
	j := NewJournaled(JournaledConfig{Key: "acct", Committer: NewCommitter(m, CommitterOptions{}), Seq: 0, Clock: clk})
	if err := j.PersistEvents(ctx, ev("add", "1")); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(950, 0)
	in := Unit{Events: []Event{ev("add", "2"), {Type: "add", Data: []byte("3"), Time: at}}, Effects: []any{"projection"},
		Reminders: []ReminderOp{{Name: "r", Due: at}}}
	u := j.Stamp(in)
	if u.Key != "acct" || u.ExpectSeq != 1 || u.Events[0].Seq != 2 || u.Events[1].Seq != 3 ||
		!u.Events[0].Time.Equal(time.Unix(900, 0)) || !u.Events[1].Time.Equal(at) {
		t.Fatalf("stamped %+v", u)
	}
	if in.Events[0].Seq != 0 || in.Key != "" {
		t.Fatalf("Stamp modified its argument: %+v", in)
	}
	if j.Seq() != 1 {
		t.Fatalf("Stamp advanced the sequence to %d", j.Seq())
	}
	clk.Advance(time.Minute) // Persist keeps the stamped times
	if err := j.Persist(ctx, u); err != nil {
		t.Fatal(err)
	}
	units := m.CommittedUnits()
	got := units[len(units)-1]
	if got.ExpectSeq != 1 || len(got.Events) != 2 || got.Events[0].Seq != 2 || got.Events[1].Seq != 3 ||
		!got.Events[0].Time.Equal(time.Unix(900, 0)) || len(got.Effects) != 1 || len(got.Reminders) != 1 {
		t.Fatalf("persisted %+v, want the stamped unit", got)
	}
	if j.Seq() != 3 {
		t.Fatalf("seq %d after persisting the stamped unit, want 3", j.Seq())
	}
}

// TestJournaledSnapshotInterval: SnapshotInterval replaces SnapshotEvery
// and is asked at every SnapshotDue, so the cadence follows the state.
func TestJournaledSnapshotInterval(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	every := uint64(2)
	j := NewJournaled(JournaledConfig{Key: "acct", Committer: NewCommitter(m, CommitterOptions{}), Snapshots: m,
		SnapshotEvery: 1, SnapshotInterval: func() uint64 { return every }})
	persist := func() {
		t.Helper()
		if err := j.PersistEvents(ctx, ev("add", "1")); err != nil {
			t.Fatal(err)
		}
	}
	persist()
	if j.SnapshotDue() {
		t.Fatal("due after 1 event with an interval of 2 (SnapshotEvery 1 must not apply)")
	}
	persist()
	if !j.SnapshotDue() {
		t.Fatal("not due after 2 events with an interval of 2")
	}
	every = 5 // the state grew: snapshots spaced out
	if j.SnapshotDue() {
		t.Fatal("due after 2 events once the interval is 5")
	}
	for range 3 {
		persist()
	}
	if err := j.MaybeSnapshot(ctx, func() ([]byte, error) { return []byte("{}"), nil }); err != nil {
		t.Fatal(err)
	}
	if snap, err := m.LoadSnapshot(ctx, "acct"); err != nil || snap.Seq != 5 || j.SinceSnapshot() != 0 {
		t.Fatalf("snapshot %+v, %v; since %d; want one at seq 5", snap, err, j.SinceSnapshot())
	}
	every = 0 // 0 disables
	persist()
	if j.SnapshotDue() {
		t.Fatal("due with an interval of 0")
	}
}
