package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/crewcast/crewcast/store/sqlite"
)

func init() {
	register(command{name: "restore", summary: "replace a stopped server's SQLite database by a backup", run: runRestore})
}

// runRestore checks the backup, refuses while any process has the target
// database open, and keeps the database it replaces beside it.
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("restore", stderr)
	from := fs.String("from", "", "backup file written by crewcast backup")
	db := fs.String("db", envOr("CREWCAST_DB", "./crewcast.db"), "SQLite path to restore into (CREWCAST_DB)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" {
		fmt.Fprintln(stderr, "crewcast restore: --from FILE is required")
		return errUsage
	}
	if isPostgresURL(*db) {
		return errors.New("the database is PostgreSQL: restore with pg_restore or point-in-time recovery (docs/operations.md, \"PostgreSQL\")")
	}
	info, err := verifyBackup(ctx, *from)
	if err != nil {
		return fmt.Errorf("%s is not a usable backup: %w", *from, err)
	}
	replaced, err := sqlite.Restore(ctx, *from, *db, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s from %s\n", *db, *from)
	printInfo(stdout, info.Info)
	if replaced != "" {
		fmt.Fprintf(stdout, "  the database it replaced is kept as %s (delete it once the restore is confirmed)\n", replaced)
	}
	fmt.Fprintln(stdout, "start the server again; groups resume from the restored journal")
	return nil
}
