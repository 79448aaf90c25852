package tracker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

// benchResults are RESULT lines recorded by benchmarks, printed once by
// TestMain after every run (a benchmark body runs several times).
var (
	benchMu      sync.Mutex
	benchResults = map[string]string{}
)

func recordResult(name string, value float64, unit string) {
	benchMu.Lock()
	defer benchMu.Unlock()
	benchResults[name] = fmt.Sprintf("RESULT %s %.0f %s", name, value, unit)
}

// printingM prints the recorded RESULT lines after the tests ran.
type printingM struct{ m *testing.M }

func (p printingM) Run() int {
	code := p.m.Run()
	benchMu.Lock()
	defer benchMu.Unlock()
	names := make([]string, 0, len(benchResults))
	for n := range benchResults {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Println(benchResults[n])
	}
	return code
}

// ampGroupSize is the recipients per group in BenchmarkWriteAmplification,
// and ampWebhookPace the gap between two webhooks: about the soak's load
// (T10 at half of peak: ~170 recipients/s, two webhooks each).
const (
	ampGroupSize   = 170
	ampWebhookPace = 3 * time.Millisecond
)

// BenchmarkWriteAmplification measures what one recipient costs the
// SQLite file: each iteration sends one group of ampGroupSize new numbers
// and ingests two receipts per recipient ("sent", then "delivered") at
// about the soak's pace; it reports the bytes written to the WAL (with
// checkpoints off, the log keeps every frame) and the growth of the
// database file once checkpointed, per recipient. Run it as
//
//	go test -run '^$' -bench WriteAmplification -benchtime 10x ./tracker/
func BenchmarkWriteAmplification(b *testing.B) {
	ampRun(b, ampGroupSize, ampWebhookPace, "")
}

// BenchmarkWriteAmplificationLargeGroup is the same with groups of 5,000
// recipients, whose snapshot (about 380 bytes per recipient) is rewritten
// as their journal grows:
//
//	go test -run '^$' -bench WriteAmplificationLargeGroup -benchtime 1x ./tracker/
func BenchmarkWriteAmplificationLargeGroup(b *testing.B) {
	ampRun(b, 5000, 200*time.Microsecond, "large_group_")
}

func ampRun(b *testing.B, groupSize int, pace time.Duration, prefix string) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "amp.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	prov := &fakeProvider{}
	tr, err := New(Config{Store: st, Provider: prov, SweepInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	if err := tr.Start(ctx); err != nil {
		b.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := tr.Stop(sctx); err != nil {
			b.Error(err)
		}
	}
	defer stop()
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	db0, wal0 := size(path), size(path+"-wal")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		numbers := make([]string, groupSize)
		for j := range numbers {
			numbers[j] = fmt.Sprintf("+1555%03d%04d", i%1000, j%10000)
		}
		id, _, err := tr.Create(ctx, group.Request{From: fmt.Sprintf("+1555010%04d", i), To: numbers, Text: "Crew call 7am at the north gate"}, CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rows := ampWait(b, tr, st, id, groupSize, crewcast.StatusSent)
		tick := time.NewTicker(pace)
		for _, stage := range []crewcast.Status{crewcast.StatusSent, crewcast.StatusDelivered} {
			for _, d := range rows {
				<-tick.C
				ev := crewcast.Event{Provider: "fake", EventID: fmt.Sprintf("%s-%s-%s", id, d.Number, stage), Kind: crewcast.KindStatus,
					MessageID: d.ProviderMessageID, From: d.Number, To: d.Number, Status: stage, OccurredAt: time.Now()}
				if _, err := tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
					b.Fatal(err)
				}
			}
		}
		tick.Stop()
		ampWait(b, tr, st, id, groupSize, crewcast.StatusDelivered)
	}
	b.StopTimer()
	stop()
	wal := size(path+"-wal") - wal0
	if err := st.Close(); err != nil { // the last connection checkpoints the WAL into the file
		b.Fatal(err)
	}
	dbGrowth := size(path) - db0
	n := float64(b.N * groupSize)
	b.ReportMetric(float64(wal)/n, "wal-bytes/recipient")
	b.ReportMetric(float64(dbGrowth)/n, "db-bytes/recipient")
	recordResult(prefix+"wal_bytes_per_recipient", float64(wal)/n, "bytes")
	recordResult(prefix+"db_bytes_per_recipient", float64(dbGrowth)/n, "bytes")
}

// ampWait waits until every recipient of group id has status s and
// returns the delivery rows.
func ampWait(b *testing.B, tr *Tracker, st store.Store, id string, size int, s crewcast.Status) []store.DeliveryRow {
	b.Helper()
	sub := tr.Hub().Subscribe(id)
	defer sub.Close()
	deadline := time.After(60 * time.Second)
	for {
		rows, _, err := st.ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Limit: 10000})
		if err != nil {
			b.Fatal(err)
		}
		done := len(rows) == size
		for _, r := range rows {
			done = done && r.Status == s
		}
		if done {
			return rows
		}
		select {
		case <-sub.C:
		case <-deadline:
			b.Fatalf("group %s: not every recipient %s", id, s)
		}
	}
}
