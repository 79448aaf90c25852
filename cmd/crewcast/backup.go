package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

func init() {
	register(command{name: "backup", summary: "copy a live SQLite database consistently and verify the copy", run: runBackup})
}

// runBackup copies the database with sqlite.Backup (safe while a server
// runs), then proves the copy usable: integrity check, schema version, and
// the newest group replayed from its journal alone must agree with its
// projection row. It prints the size and contents of the copy.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("backup", stderr)
	db := fs.String("db", envOr("CREWCAST_DB", "./crewcast.db"), "SQLite path to back up (CREWCAST_DB)")
	to := fs.String("to", "", "file to write the backup to (must not exist)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *to == "" {
		fmt.Fprintln(stderr, "crewcast backup: --to FILE is required")
		return errUsage
	}
	if isPostgresURL(*db) {
		return errors.New("the database is PostgreSQL: back it up with pg_dump or continuous archiving (docs/operations.md, \"PostgreSQL\")")
	}
	if err := sqlite.Backup(ctx, *db, *to); err != nil {
		return err
	}
	info, err := verifyBackup(ctx, *to)
	if err != nil {
		return fmt.Errorf("backup written to %s but it does not verify: %w", *to, err)
	}
	fmt.Fprintf(stdout, "backup written: %s (%s)\n", *to, humanBytes(info.Bytes))
	printInfo(stdout, info.Info)
	if info.replayed != "" {
		fmt.Fprintf(stdout, "  replayed:  %s\n", info.replayed)
	}
	return nil
}

type verified struct {
	sqlite.Info
	replayed string // what the replay found, "" when there are no groups
}

// verifyBackup checks a backup file: integrity, schema, and a replay.
func verifyBackup(ctx context.Context, path string) (verified, error) {
	info, err := sqlite.Inspect(ctx, path)
	v := verified{Info: info}
	if err != nil {
		return v, err
	}
	if info.Integrity != "ok" {
		return v, fmt.Errorf("integrity check: %s", info.Integrity)
	}
	if info.Version == 0 {
		return v, errors.New("not a crewcast database (no schema version)")
	}
	if info.Groups == 0 {
		return v, nil
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return v, err
	}
	defer st.Close()
	rows, _, err := st.ListGroups(ctx, store.GroupQuery{Limit: 1})
	if err != nil {
		return v, err
	}
	if len(rows) == 0 {
		return v, errors.New("groups counted but none listed")
	}
	v.replayed, err = replayGroup(ctx, st, rows[0])
	return v, err
}

// replayGroup rebuilds a group from its whole journal (ignoring snapshots)
// and checks the result against the group's projection row, which the same
// commits wrote.
func replayGroup(ctx context.Context, st store.Store, row store.GroupRow) (string, error) {
	res, err := actor.Recover(ctx, st, noSnapshots{}, row.ID, func([]byte) (group.Group, error) {
		return group.Group{}, errors.New("unused")
	}, func(g *group.Group, e actor.Event) error {
		ev, err := group.Decode(e.Type, e.Data)
		if err != nil {
			return err
		}
		return g.Apply(ev)
	})
	if err != nil {
		return "", fmt.Errorf("replay group %s: %w", row.ID, err)
	}
	g := res.State
	if g.ID != row.ID || g.Status != row.Status || (row.Seq != 0 && res.Seq < row.Seq) {
		return "", fmt.Errorf("replay group %s: journal gives %q at seq %d, projection says %q at seq %d", row.ID, g.Status, res.Seq, row.Status, row.Seq)
	}
	return fmt.Sprintf("group %s from %d journal events: %d recipients, status %s (matches its projection)", row.ID, res.Seq, len(g.Recipients), g.Status), nil
}

// noSnapshots makes Recover replay the whole journal.
type noSnapshots struct{}

func (noSnapshots) SaveSnapshot(context.Context, actor.Snapshot) error {
	return errors.New("read-only")
}
func (noSnapshots) LoadSnapshot(context.Context, string) (actor.Snapshot, error) {
	return actor.Snapshot{}, actor.ErrNotFound
}
func (noSnapshots) DeleteSnapshot(context.Context, string) error { return nil }

func printInfo(w io.Writer, info sqlite.Info) {
	fmt.Fprintf(w, "  integrity: %s; schema version %d (this build: %d)\n", info.Integrity, info.Version, info.Latest)
	fmt.Fprintf(w, "  holds:     %d groups, %d recipients, %d journal events, %d webhooks (%d not yet applied)\n",
		info.Groups, info.Recipients, info.Events, info.Inbox, info.InboxPending)
}

func isPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
