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
	"time"

	"github.com/crewcast/crewcast/store"
)

// TestBackupWhileWriting backs up a database that another connection keeps
// writing to: the copy is sound and holds every write acknowledged before
// the backup began; the source stays usable.
func TestBackupWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	s, err := Open(ctx, Config{Path: src})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	insert := func(i int64) error {
		_, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: fmt.Sprint("ev-", i), Payload: []byte(`[]`), ReceivedAt: time.Now()}})
		return err
	}
	for i := range int64(200) {
		if err := insert(i); err != nil {
			t.Fatal(err)
		}
	}
	var acked atomic.Int64
	acked.Store(200)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(200); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := insert(i); err != nil {
				t.Error(err)
				return
			}
			acked.Store(i + 1)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	before := acked.Load()
	dst := filepath.Join(dir, "copy.db")
	if err := Backup(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	info, err := Inspect(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	if info.Integrity != "ok" || info.Version != info.Latest || info.Version < 1 {
		t.Fatalf("backup info %+v", info)
	}
	if info.Inbox < before {
		t.Fatalf("backup holds %d inbox rows, %d were acknowledged before it began", info.Inbox, before)
	}
	if err := Backup(ctx, src, dst); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("backup over an existing file: %v", err)
	}
	if _, err := os.Stat(dst + ".partial-" + fmt.Sprint(os.Getpid())); !os.IsNotExist(err) {
		t.Fatalf("partial file left behind: %v", err)
	}
}

// TestRestoreRefusesOpenDatabase: restore never replaces a database that a
// store (in this process or another) holds open, and after the store is
// closed it replaces it, keeping the old file and its WAL aside.
func TestRestoreRefusesOpenDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	a, err := Open(ctx, Config{Path: src})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: "from-backup", Payload: []byte(`[]`), ReceivedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	bak := filepath.Join(dir, "bak.db")
	if err := Backup(ctx, src, bak); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	live := filepath.Join(dir, "live.db")
	b, err := Open(ctx, Config{Path: live})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: "old", Payload: []byte(`[]`), ReceivedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if busy, err := InUse(live); err != nil || !busy {
		t.Fatalf("InUse on an open database = %v, %v", busy, err)
	}
	if _, err := Restore(ctx, bak, live, time.Now()); err == nil || !strings.Contains(err.Error(), "open in another process") {
		t.Fatalf("restore over an open database: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if busy, err := InUse(live); err != nil || busy {
		t.Fatalf("InUse after close = %v, %v", busy, err)
	}
	replaced, err := Restore(ctx, bak, live, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if want := live + ".replaced-20260102T030405Z"; replaced != want {
		t.Fatalf("replaced = %q, want %q", replaced, want)
	}
	got, err := Open(ctx, Config{Path: live})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	pend, err := got.PendingInbox(ctx, store.InboxRef{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 1 || pend[0].EventID != "from-backup" {
		t.Fatalf("restored inbox = %+v, want only from-backup", pend)
	}
	old, err := Inspect(ctx, replaced)
	if err != nil || old.Inbox != 1 {
		t.Fatalf("kept old database: %+v, %v", old, err)
	}

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, garbage, filepath.Join(dir, "x.db"), time.Now()); err == nil {
		t.Fatal("restored a file that is not a database")
	}
}

// Issue 27 item 6: a backup holds password and key hashes, personal data
// and webhook secrets, so it is created readable by its owner only
// (0600), whatever the umask allows.
func TestBackupIsOwnerOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	s, err := Open(ctx, Config{Path: src})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: "ev", Payload: []byte(`[]`)}}); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "backup.db")
	if err := Backup(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("the backup has mode %#o, want 0600", m)
	}
}
