package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/crewcast/crewcast/server"
)

func init() {
	register(command{name: "migrate", summary: "apply database migrations and print the schema version", run: runMigrate})
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stderr)
	db := fs.String("db", "./crewcast.db", "SQLite path or postgres:// URL (env CREWCAST_DB)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := applyEnv(fs, []envBinding{{"db", "CREWCAST_DB"}}); err != nil {
		return err
	}
	st, err := server.OpenStore(ctx, *db, "", time.Now, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	v, err := st.MigrationVersion(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s schema at version %d\n", st.Engine(), v)
	return nil
}
