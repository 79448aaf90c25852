-- Initial schema. Times are Unix nanoseconds (0 = not set), see store.Nanos.

-- +goose Up
CREATE TABLE journal (
    pos  INTEGER PRIMARY KEY AUTOINCREMENT, -- global commit order for LoadAllEvents
    key  TEXT    NOT NULL,
    seq  INTEGER NOT NULL,
    type TEXT    NOT NULL,
    data BLOB    NOT NULL,
    time INTEGER NOT NULL,
    UNIQUE (key, seq)
);

CREATE TABLE snapshots (
    key      TEXT PRIMARY KEY,
    seq      INTEGER NOT NULL,
    state    BLOB    NOT NULL,
    checksum BLOB    NOT NULL, -- SHA-256 over key, seq and state
    time     INTEGER NOT NULL
);

CREATE TABLE reminders (
    key  TEXT    NOT NULL,
    name TEXT    NOT NULL,
    due  INTEGER NOT NULL,
    PRIMARY KEY (key, name)
);
CREATE INDEX reminders_due ON reminders (due, key, name);

CREATE TABLE inbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT, -- arrival order for PendingInbox
    provider     TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    message_id   TEXT    NOT NULL DEFAULT '',
    payload      BLOB    NOT NULL,
    received_at  INTEGER NOT NULL,
    target       TEXT    NOT NULL DEFAULT '',
    processed_at INTEGER NOT NULL DEFAULT 0,
    UNIQUE (provider, event_id)
);
CREATE INDEX inbox_pending ON inbox (id) WHERE processed_at = 0;
CREATE INDEX inbox_message ON inbox (provider, message_id) WHERE message_id <> '';
CREATE INDEX inbox_processed ON inbox (processed_at) WHERE processed_at <> 0;

CREATE TABLE routes (
    key        TEXT PRIMARY KEY,
    value      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX routes_value ON routes (value);

CREATE TABLE groups (
    id           TEXT PRIMARY KEY,
    status       TEXT    NOT NULL,
    from_number  TEXT    NOT NULL,
    mode         TEXT    NOT NULL,
    text         TEXT    NOT NULL,
    pause_reason TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    counts       TEXT    NOT NULL, -- JSON object
    seq          INTEGER NOT NULL
);
CREATE INDEX groups_created ON groups (created_at, id);
CREATE INDEX groups_status_created ON groups (status, created_at, id);

CREATE TABLE deliveries (
    group_id            TEXT    NOT NULL,
    number              TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    status              TEXT    NOT NULL,
    attempts            INTEGER NOT NULL,
    provider_message_id TEXT    NOT NULL,
    error_code          TEXT    NOT NULL,
    error_class         TEXT    NOT NULL,
    claimed_at          INTEGER NOT NULL,
    sent_at             INTEGER NOT NULL,
    delivered_at        INTEGER NOT NULL,
    failed_at           INTEGER NOT NULL,
    replied_at          INTEGER NOT NULL,
    ack                 TEXT    NOT NULL,
    last_reply          TEXT    NOT NULL,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (group_id, number)
);
CREATE INDEX deliveries_updated ON deliveries (updated_at, group_id, number);
CREATE INDEX deliveries_number ON deliveries (number, updated_at);
CREATE INDEX deliveries_group_updated ON deliveries (group_id, updated_at, number);

CREATE TABLE replies (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    provider    TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    group_id    TEXT    NOT NULL,
    number      TEXT    NOT NULL,
    to_number   TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    media       TEXT    NOT NULL, -- JSON array
    received_at INTEGER NOT NULL,
    redacted    INTEGER NOT NULL DEFAULT 0, -- RedactUnmatchedReplies ran on it
    UNIQUE (provider, event_id, number)
);
CREATE INDEX replies_group ON replies (group_id, received_at, id);
CREATE INDEX replies_received ON replies (received_at, id);
CREATE INDEX replies_number ON replies (number, received_at, id);

CREATE TABLE suppressions (
    number     TEXT PRIMARY KEY,
    reason     TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    name         TEXT    NOT NULL,
    prefix       TEXT    NOT NULL UNIQUE,
    hash         BLOB    NOT NULL,
    scopes       TEXT    NOT NULL, -- JSON array
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL DEFAULT 0,
    revoked_at   INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE idempotency_keys (
    key          TEXT PRIMARY KEY,
    request_hash TEXT    NOT NULL,
    group_id     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX idempotency_group ON idempotency_keys (group_id);

CREATE TABLE shard_leases (
    shard INTEGER PRIMARY KEY,
    owner TEXT    NOT NULL,
    epoch INTEGER NOT NULL
);

CREATE TABLE retention_marks (
    group_id   TEXT    NOT NULL,
    stage      TEXT    NOT NULL,
    applied_at INTEGER NOT NULL,
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
