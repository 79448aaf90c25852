package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// The store benchmarks, one body for every engine. Each records its figure
// under "store_<engine>_<name>"; PrintResults (from an engine's TestMain,
// after m.Run) prints every figure once as a RESULT line, for the final b.N.

var (
	resultsMu sync.Mutex
	results   = map[string]string{}
)

func record(s store.Store, name string, perSec float64, unit string) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	key := "store_" + s.Engine() + "_" + name
	results[key] = fmt.Sprintf("RESULT %s %.0f %s", key, perSec, unit)
}

// PrintResults writes the recorded benchmark figures, sorted by name.
func PrintResults(w io.Writer) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintln(w, results[n])
	}
}

func inboxEntries(prefix string, n int) []store.InboxEntry {
	out := make([]store.InboxEntry, n)
	for i := range out {
		out[i] = store.InboxEntry{Provider: "telnyx", EventID: fmt.Sprintf("%s-%d", prefix, i), MessageID: "m",
			Payload: []byte(`{"kind":"status","status":"delivered","to":"+15550100001"}`)}
	}
	return out
}

// perSecond reports and records b.N operations over el.
func perSecond(b *testing.B, s store.Store, name, unit string, el time.Duration) {
	b.ReportMetric(float64(b.N)/el.Seconds(), unit)
	record(s, name, float64(b.N)/el.Seconds(), unit)
}

// BenchInboxSingle is the naive baseline: one transaction (one fsync) per
// webhook event, one caller.
func BenchInboxSingle(b *testing.B, s store.Store) {
	ctx := context.Background()
	entries := inboxEntries("single", b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if _, err := s.InsertInbox(ctx, entries[i:i+1]); err != nil {
			b.Fatal(err)
		}
	}
	perSecond(b, s, "inbox_single", "events/s", time.Since(start))
}

// BenchInboxBatched inserts events `batch` per call from `callers`
// concurrent callers, recorded as name: 256 per call from 4 callers is the
// batched figure; 1 per call from 32 callers is the webhook shape.
func BenchInboxBatched(b *testing.B, s store.Store, name string, batch, callers int) {
	ctx := context.Background()
	entries := inboxEntries(name, b.N)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := c * batch; lo < len(entries); lo += callers * batch {
				if _, err := s.InsertInbox(ctx, entries[lo:min(lo+batch, len(entries))]); err != nil {
					errs[c] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	perSecond(b, s, name, "events/s", el)
}

// BenchCommitBatched commits units of one journal event, a group upsert, a
// delivery upsert and an inbox ack, 500 units per Commit over 100 keys.
func BenchCommitBatched(b *testing.B, s store.Store) {
	ctx := context.Background()
	const batch, groups = 500, 100
	entries := inboxEntries("commit", b.N)
	for lo := 0; lo < len(entries); lo += 1000 {
		if _, err := s.InsertInbox(ctx, entries[lo:min(lo+1000, len(entries))]); err != nil {
			b.Fatal(err)
		}
	}
	seqs := make([]uint64, groups)
	b.ResetTimer()
	start := time.Now()
	for lo := 0; lo < b.N; lo += batch {
		units := make([]actor.Unit, 0, batch)
		for i := lo; i < min(lo+batch, b.N); i++ {
			g := i % groups
			key := fmt.Sprintf("bench-g%d", g)
			units = append(units, actor.Unit{Key: key, ExpectSeq: seqs[g],
				Events: []actor.Event{{Type: "recipient.delivered", Data: []byte(`{"number":"+15550100001"}`)}},
				Effects: []any{&store.Effects{
					Group: &store.GroupRow{ID: key, Status: "sending", Counts: map[string]int{"delivered": i}, Seq: seqs[g] + 1},
					Deliveries: []store.DeliveryRow{{GroupID: key, Number: fmt.Sprintf("+1555%07d", i), Status: "delivered",
						Attempts: 1, SentAt: time.Unix(1, 0), DeliveredAt: time.Unix(2, 0), UpdatedAt: time.Unix(2, 0)}},
					InboxDone: []store.InboxRef{{Provider: "telnyx", EventID: entries[i].EventID, Target: key}},
				}}})
			seqs[g]++
		}
		res, err := s.Commit(ctx, units)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r != nil {
				b.Fatal(r)
			}
		}
	}
	perSecond(b, s, "commit_batched", "units/s", time.Since(start))
}

// BenchCommitLargeGroup commits what creating a group of n recipients
// commits (issue 13's 100,000-person crew): one group.created event whose
// data holds the roster (about 130 bytes per recipient), the group row and
// n pending delivery rows, in one unit. Every iteration creates another
// group of the same n numbers, so from the second one on the rows land
// among the earlier groups' (the deliveries_number index interleaves), as
// when the same crew is messaged again.
func BenchCommitLargeGroup(b *testing.B, s store.Store, n int) {
	ctx := context.Background()
	at := time.Unix(1_700_000_000, 0)
	roster := make([]byte, 0, n*130)
	roster = append(roster, `{"id":"g","recipients":[`...)
	for i := range n {
		if i > 0 {
			roster = append(roster, ',')
		}
		roster = fmt.Appendf(roster, `{"number":"+1555%07d","name":"Person %d","contact_id":"ct_%016d","text":"Hi Person, crew call 7am at Site %d"}`, i, i, i, i%7)
	}
	roster = append(roster, `]}`...)
	b.ResetTimer()
	start := time.Now()
	for it := range b.N {
		key := fmt.Sprintf("bench-large-%d", it)
		ds := make([]store.DeliveryRow, n)
		for i := range ds {
			ds[i] = store.DeliveryRow{GroupID: key, Number: fmt.Sprintf("+1555%07d", i), Name: fmt.Sprintf("Person %d", i),
				Status: "pending", UpdatedAt: at}
		}
		res, err := s.Commit(ctx, []actor.Unit{{Key: key,
			Events: []actor.Event{{Seq: 1, Type: "group.created", Data: roster, Time: at}},
			Effects: []any{&store.Effects{
				Group:      &store.GroupRow{ID: key, Status: "sending", From: "+15550100000", Mode: "individual", Text: "Hi", CreatedAt: at, UpdatedAt: at, Counts: map[string]int{"pending": n}, Seq: 1},
				Deliveries: ds,
			}}}})
		if err != nil {
			b.Fatal(err)
		}
		if res[0] != nil {
			b.Fatal(res[0])
		}
	}
	el := time.Since(start)
	ms := float64(el.Milliseconds()) / float64(b.N)
	b.ReportMetric(ms, "ms/group")
	resultsMu.Lock()
	defer resultsMu.Unlock()
	key := fmt.Sprintf("store_%s_commit_group_%d", s.Engine(), n)
	results[key] = fmt.Sprintf("RESULT %s %.0f ms", key, ms)
}
