package postgres

import (
	"fmt"
	"regexp"
	"strconv"
)

var migrationName = regexp.MustCompile(`^(\d+)_.*\.sql$`)

// LatestMigration returns the highest migration version this build embeds,
// so a check (crewcast doctor) can tell a database that needs
// `crewcast migrate` without migrating it.
func LatestMigration() (int64, error) {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return 0, fmt.Errorf("postgres: migrations: %w", err)
	}
	var latest int64
	for _, e := range entries {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			latest = max(latest, v)
		}
	}
	return latest, nil
}
