-- Several nodes on one PostgreSQL (design §9).
-- A lease may expire: expires_at is Unix nanoseconds on the DATABASE clock
-- (never a node's); NULL is a lease held without expiry (one node alone,
-- which is how every lease was held before). Every journal event records
-- the epoch and the node that committed it, so an audit can prove that no
-- stale owner wrote (0 and '' for events written before this migration).

-- +goose Up
ALTER TABLE shard_leases ADD COLUMN expires_at BIGINT;
ALTER TABLE journal ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE journal ADD COLUMN node TEXT COLLATE "C" NOT NULL DEFAULT '';
-- Members: each node heartbeats its row on the database clock; live
-- nodes share the shards evenly.
CREATE TABLE nodes (
    id            TEXT COLLATE "C" PRIMARY KEY,
    advertise_url TEXT COLLATE "C" NOT NULL,
    heartbeat_at  BIGINT NOT NULL
);

-- +goose Down
DROP TABLE nodes;
ALTER TABLE journal DROP COLUMN node;
ALTER TABLE journal DROP COLUMN epoch;
ALTER TABLE shard_leases DROP COLUMN expires_at;
