package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crewcast/crewcast/actor"
)

// TestWALStaysBoundedUnderConstantReads is issue 12's finding 11: with
// readers always active (SSE streams, report pages, the sweep), SQLite's
// automatic PASSIVE checkpoint never finds a moment without a reader on an
// old snapshot, so the WAL is never restarted and grows with every commit.
// The store must bound it: the WAL may pass CheckpointBytes by the rounds
// between two checks, never by the whole write volume.
func TestWALStaysBoundedUnderConstantReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.db")
	const bound = 1 << 20
	s, err := Open(ctx, Config{Path: path, CheckpointBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	stop := make(chan struct{})
	var readers sync.WaitGroup
	var reads atomic.Int64
	for r := 0; r < 4; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A read that spans a few commits, like a report page or a
				// group's activation.
				if err := s.Load(ctx, "g0", 0, func(actor.Event) error { return nil }); err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	payload := []byte(`{"data":"` + strings.Repeat("x", 2000) + `"}`)
	var maxWAL int64
	// About 12 MB of journal data in 600 commits of 10 events each.
	for i := 0; i < 600; i++ {
		u := actor.Unit{Key: fmt.Sprintf("g%d", i%50), ExpectSeq: uint64(i/50) * 10}
		for j := 0; j < 10; j++ {
			u.Events = append(u.Events, actor.Event{Seq: u.ExpectSeq + uint64(j) + 1, Type: "t", Data: payload})
		}
		res, err := s.Commit(ctx, []actor.Unit{u})
		if err != nil || res[0] != nil {
			t.Fatalf("commit %d: %v %v", i, err, res)
		}
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > maxWAL {
			maxWAL = fi.Size()
		}
	}
	close(stop)
	readers.Wait()
	t.Logf("largest WAL %d KB over %d reads; %d checkpoints, %d blocked", maxWAL>>10, reads.Load(), s.wal.checkpoints, s.wal.blocked)
	// One round past the bound plus the automatic checkpoint's 1,000 pages.
	if limit := int64(bound + 4<<20 + 1<<20); maxWAL > limit {
		t.Fatalf("WAL reached %d KB under constant reads; bound %d KB", maxWAL>>10, limit>>10)
	}
}

// TestNegativeCheckpointBytesKeepsEveryFrame: the write-amplification
// measurement relies on a WAL that no checkpoint resets.
func TestNegativeCheckpointBytesKeepsEveryFrame(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nockpt.db")
	s, err := Open(ctx, Config{Path: path, CheckpointBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	payload := []byte(`{"data":"` + strings.Repeat("x", 4000) + `"}`)
	// About 8 MB: past the automatic checkpoint's 1,000 pages.
	for i := 0; i < 200; i++ {
		u := actor.Unit{Key: "k", ExpectSeq: uint64(i) * 10}
		for j := 0; j < 10; j++ {
			u.Events = append(u.Events, actor.Event{Seq: u.ExpectSeq + uint64(j) + 1, Type: "t", Data: payload})
		}
		if res, err := s.Commit(ctx, []actor.Unit{u}); err != nil || res[0] != nil {
			t.Fatalf("commit %d: %v %v", i, err, res)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 8<<20 {
		t.Fatalf("WAL is %d KB after 8 MB written with checkpoints off", fi.Size()>>10)
	}
	if s.wal.checkpoints != 0 {
		t.Fatalf("%d explicit checkpoints ran with checkpoints off", s.wal.checkpoints)
	}
}
