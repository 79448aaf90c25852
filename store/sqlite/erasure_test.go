package sqlite

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// An erasure's last step truncates the WAL, which still holds the pages as
// they were before. A reader still on an older snapshot keeps the
// checkpoint from finishing: the erasure stands (it committed), but the
// operator is told that the WAL keeps the old pages for now, without the
// number.
func TestEraseNumberSaysWhenTheWALKeepsTheOldPages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "erase.db")
	var logs bytes.Buffer
	s, err := Open(ctx, Config{Path: path, BusyTimeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	const who = "+15550500021"
	if err := s.AddSuppression(ctx, store.Suppression{Number: who, Reason: store.ReasonStop, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	reader, err := openPlain(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	tx, err := reader.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM suppressions`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("reader: %d, %v", n, err)
	}
	if c, err := s.EraseNumber(ctx, who, "h:erased", ""); err != nil || c["suppressions"] != 1 {
		t.Fatalf("EraseNumber under a reader = %v, %v", c, err)
	}
	if !strings.Contains(logs.String(), "WAL") || strings.Contains(logs.String(), who) {
		t.Fatalf("no warning that the WAL keeps the old pages (or it names the number): %q", logs.String())
	}
	_ = tx.Rollback()
	logs.Reset()
	if _, err := s.EraseNumber(ctx, who, "h:erased", ""); err != nil || logs.Len() != 0 {
		t.Fatalf("EraseNumber without a reader: %v, logged %q", err, logs.String())
	}
}
