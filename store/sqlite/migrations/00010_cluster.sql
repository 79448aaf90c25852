-- Leases that may expire and journal events that record their epoch and
-- node (design §9). SQLite is one node, but both engines keep one schema.
-- expires_at is Unix nanoseconds on the database's clock; NULL is a lease
-- held without expiry (how every lease was held before).

-- +goose Up
ALTER TABLE shard_leases ADD COLUMN expires_at INTEGER;
ALTER TABLE journal ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE journal ADD COLUMN node TEXT NOT NULL DEFAULT '';
-- Members: each node heartbeats its row on the database clock; live
-- nodes share the shards evenly.
CREATE TABLE nodes (
    id            TEXT PRIMARY KEY,
    advertise_url TEXT NOT NULL,
    heartbeat_at  INTEGER NOT NULL
);

-- +goose Down
DROP TABLE nodes;
ALTER TABLE journal DROP COLUMN node;
ALTER TABLE journal DROP COLUMN epoch;
ALTER TABLE shard_leases DROP COLUMN expires_at;
