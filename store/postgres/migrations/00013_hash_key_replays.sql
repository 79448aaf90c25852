-- server_keys holds secrets the server generates for itself (the hash key
-- erased opt-outs are kept under, when CREWCAST_HASH_KEY is not set): in
-- the database, so they are in every backup and shared by every node.
-- webhook_seen is the replay record: 16 bytes of SHA-256 of each processed
-- provider event id (provider, NUL, event id) and when it was first seen,
-- kept after the inbox row is purged so a captured webhook replayed later
-- is refused (retention purges it after its own window).

-- +goose Up
CREATE TABLE server_keys (
    name       TEXT COLLATE "C" PRIMARY KEY,
    value      BYTEA  NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE TABLE webhook_seen (
    id_hash BYTEA PRIMARY KEY,
    seen_at BIGINT NOT NULL
);
CREATE INDEX webhook_seen_at ON webhook_seen (seen_at);

-- +goose Down
DROP TABLE webhook_seen;
DROP TABLE server_keys;
