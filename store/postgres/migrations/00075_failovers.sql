-- The PostgreSQL primary a store last wrote to, and the failovers found
-- since (docs/design.md §19; store/postgres/failover.go). Times are Unix
-- nanoseconds. SQLite never fails over: the tables stay empty there.

-- +goose Up
CREATE TABLE store_primary (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL,
    seen_at  BIGINT NOT NULL
);
CREATE TABLE store_failovers (
    id          TEXT PRIMARY KEY,
    before_id   TEXT NOT NULL,
    detected_at BIGINT NOT NULL,
    last_commit BIGINT NOT NULL
);

-- +goose Down
DROP TABLE store_failovers;
DROP TABLE store_primary;
