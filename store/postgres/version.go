package postgres

import "github.com/crewcast/crewcast/store/sqlq"

// LatestMigration returns the highest migration version this build embeds,
// so a check (crewcast doctor) can tell a database that needs
// `crewcast migrate` without migrating it.
func LatestMigration() (int64, error) { return sqlq.LatestMigration("postgres", migrationFS) }
