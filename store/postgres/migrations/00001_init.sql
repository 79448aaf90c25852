-- Initial schema. Times are Unix nanoseconds (0 = not set), see store.Nanos.
-- Text columns use the "C" collation: byte order, the same order SQLite gives,
-- so cursors and sort orders mean the same thing on both engines.

-- +goose Up
CREATE TABLE journal (
    pos  BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- global commit order for LoadAllEvents
    key  TEXT COLLATE "C" NOT NULL,
    seq  BIGINT NOT NULL,
    type TEXT COLLATE "C" NOT NULL,
    data BYTEA NOT NULL,
    time BIGINT NOT NULL,
    CONSTRAINT journal_key_seq UNIQUE (key, seq)
);

CREATE TABLE snapshots (
    key      TEXT COLLATE "C" PRIMARY KEY,
    seq      BIGINT NOT NULL,
    state    BYTEA NOT NULL,
    checksum BYTEA NOT NULL, -- SHA-256 over key, seq and state
    time     BIGINT NOT NULL
);

CREATE TABLE reminders (
    key  TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    due  BIGINT NOT NULL,
    PRIMARY KEY (key, name)
);
CREATE INDEX reminders_due ON reminders (due, key, name);

CREATE TABLE inbox (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- arrival order for PendingInbox
    provider     TEXT COLLATE "C" NOT NULL,
    event_id     TEXT COLLATE "C" NOT NULL,
    message_id   TEXT COLLATE "C" NOT NULL DEFAULT '',
    payload      BYTEA NOT NULL,
    received_at  BIGINT NOT NULL,
    target       TEXT COLLATE "C" NOT NULL DEFAULT '',
    processed_at BIGINT NOT NULL DEFAULT 0,
    UNIQUE (provider, event_id)
);
CREATE INDEX inbox_pending ON inbox (id) WHERE processed_at = 0;
CREATE INDEX inbox_message ON inbox (provider, message_id) WHERE message_id <> '';
CREATE INDEX inbox_processed ON inbox (processed_at) WHERE processed_at <> 0;

CREATE TABLE routes (
    key        TEXT COLLATE "C" PRIMARY KEY,
    value      TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX routes_value ON routes (value);

CREATE TABLE groups (
    id           TEXT COLLATE "C" PRIMARY KEY,
    status       TEXT COLLATE "C" NOT NULL,
    from_number  TEXT COLLATE "C" NOT NULL,
    mode         TEXT COLLATE "C" NOT NULL,
    text         TEXT COLLATE "C" NOT NULL,
    pause_reason TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    counts       TEXT COLLATE "C" NOT NULL, -- JSON object
    seq          BIGINT NOT NULL
);
CREATE INDEX groups_created ON groups (created_at, id);
CREATE INDEX groups_status_created ON groups (status, created_at, id);

CREATE TABLE deliveries (
    group_id            TEXT COLLATE "C" NOT NULL,
    number              TEXT COLLATE "C" NOT NULL,
    name                TEXT COLLATE "C" NOT NULL,
    status              TEXT COLLATE "C" NOT NULL,
    attempts            BIGINT NOT NULL,
    provider_message_id TEXT COLLATE "C" NOT NULL,
    error_code          TEXT COLLATE "C" NOT NULL,
    error_class         TEXT COLLATE "C" NOT NULL,
    claimed_at          BIGINT NOT NULL,
    sent_at             BIGINT NOT NULL,
    delivered_at        BIGINT NOT NULL,
    failed_at           BIGINT NOT NULL,
    replied_at          BIGINT NOT NULL,
    ack                 TEXT COLLATE "C" NOT NULL,
    last_reply          TEXT COLLATE "C" NOT NULL,
    updated_at          BIGINT NOT NULL,
    PRIMARY KEY (group_id, number)
);
CREATE INDEX deliveries_updated ON deliveries (updated_at, group_id, number);
CREATE INDEX deliveries_number ON deliveries (number, updated_at);
CREATE INDEX deliveries_group_updated ON deliveries (group_id, updated_at, number);

CREATE TABLE replies (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider    TEXT COLLATE "C" NOT NULL,
    event_id    TEXT COLLATE "C" NOT NULL,
    group_id    TEXT COLLATE "C" NOT NULL,
    number      TEXT COLLATE "C" NOT NULL,
    to_number   TEXT COLLATE "C" NOT NULL,
    text        TEXT COLLATE "C" NOT NULL,
    media       TEXT COLLATE "C" NOT NULL, -- JSON array
    received_at BIGINT NOT NULL,
    redacted    BIGINT NOT NULL DEFAULT 0, -- RedactUnmatchedReplies ran on it
    UNIQUE (provider, event_id, number)
);
CREATE INDEX replies_group ON replies (group_id, received_at, id);
CREATE INDEX replies_received ON replies (received_at, id);
CREATE INDEX replies_number ON replies (number, received_at, id);

CREATE TABLE suppressions (
    number     TEXT COLLATE "C" PRIMARY KEY,
    reason     TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT COLLATE "C" PRIMARY KEY,
    name         TEXT COLLATE "C" NOT NULL,
    prefix       TEXT COLLATE "C" NOT NULL UNIQUE,
    hash         BYTEA NOT NULL,
    scopes       TEXT COLLATE "C" NOT NULL, -- JSON array
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL DEFAULT 0,
    revoked_at   BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE idempotency_keys (
    key          TEXT COLLATE "C" PRIMARY KEY,
    request_hash TEXT COLLATE "C" NOT NULL,
    group_id     TEXT COLLATE "C" NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX idempotency_group ON idempotency_keys (group_id);

CREATE TABLE shard_leases (
    shard BIGINT PRIMARY KEY,
    owner TEXT COLLATE "C" NOT NULL,
    epoch BIGINT NOT NULL
);

CREATE TABLE retention_marks (
    group_id   TEXT COLLATE "C" NOT NULL,
    stage      TEXT COLLATE "C" NOT NULL,
    applied_at BIGINT NOT NULL,
    PRIMARY KEY (group_id, stage)
);

-- +goose Down
DROP TABLE retention_marks;
DROP TABLE shard_leases;
DROP TABLE idempotency_keys;
DROP TABLE api_keys;
DROP TABLE suppressions;
DROP TABLE replies;
DROP TABLE deliveries;
DROP TABLE groups;
DROP TABLE routes;
DROP TABLE inbox;
DROP TABLE reminders;
DROP TABLE snapshots;
DROP TABLE journal;
