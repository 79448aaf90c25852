package server_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store/sqlite"
)

// SQLite means exactly one node (docs/design.md §9): a second server on the same
// database file refuses to start, saying why, and leaves the first one
// serving; once the first stops, a new server starts on the file.
func TestSecondServerOnOneSQLiteFileRefuses(t *testing.T) {
	t.Parallel() // its own server and database
	eng := engine{name: "sqlite", db: filepath.Join(t.TempDir(), "crewcast.db")}
	first := start(t, eng, sim.Faults{}, nil)
	id := createGroup(t, first, []string{"+15550100001"})

	second, err := server.New(server.Config{Addr: "127.0.0.1:0", DB: eng.db, Provider: server.ProviderDemo,
		RetentionInterval: -1, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = second.Start(context.Background())
	if !errors.Is(err, sqlite.ErrServed) || !strings.Contains(err.Error(), "exactly one node") {
		t.Fatalf("second Start = %v, want the one-node refusal", err)
	}
	// The first server still answers.
	await(t, first, id, 30*time.Second, "complete", complete)
	if err := first.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	third, err := server.New(server.Config{Addr: "127.0.0.1:0", DB: eng.db, Provider: server.ProviderDemo,
		RetentionInterval: -1, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := third.Start(context.Background()); err != nil {
		t.Fatalf("start after the first stopped: %v", err)
	}
	if err := third.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
