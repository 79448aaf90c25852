-- Outbound webhooks (design.md §13): endpoints, the transactional outbox,
-- the per-endpoint delivery queue and the attempts log. Times are Unix
-- nanoseconds (0 = not set).

-- +goose Up
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    url             TEXT    NOT NULL,
    description     TEXT    NOT NULL DEFAULT '',
    events          TEXT    NOT NULL, -- JSON array of event types or ["*"]
    signing         TEXT    NOT NULL, -- hmac | ed25519
    secret          BLOB    NOT NULL, -- sealed by webhookout, never in clear when a key is set
    prev_secret     BLOB    NOT NULL DEFAULT x'',
    prev_until      INTEGER NOT NULL DEFAULT 0,
    disabled_at     INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT    NOT NULL DEFAULT '',
    failing_since   INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

-- Written in the same transaction as the change each row reports.
CREATE TABLE webhook_outbox (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    msg_id      TEXT    NOT NULL UNIQUE,
    type        TEXT    NOT NULL,
    group_id    TEXT    NOT NULL DEFAULT '',
    seq         INTEGER NOT NULL DEFAULT 0,
    endpoint_id TEXT    NOT NULL DEFAULT '', -- set for a test event: that endpoint only
    payload     BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    dispatched  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox (id) WHERE dispatched = 0;
CREATE INDEX webhook_outbox_created ON webhook_outbox (created_at);

CREATE TABLE webhook_deliveries (
    endpoint_id TEXT    NOT NULL,
    outbox_id   INTEGER NOT NULL,
    state       TEXT    NOT NULL, -- pending | delivered | failed
    attempts    INTEGER NOT NULL DEFAULT 0,
    next_at     INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    claimed_by  TEXT NOT NULL DEFAULT '', -- the worker holding its lease
    PRIMARY KEY (endpoint_id, outbox_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_at, outbox_id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_by) WHERE claimed_by <> '';

CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id TEXT    NOT NULL,
    outbox_id   INTEGER NOT NULL,
    msg_id      TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    status_code INTEGER NOT NULL,
    result      TEXT    NOT NULL,
    latency_ms  INTEGER NOT NULL,
    response    TEXT    NOT NULL DEFAULT '',
    error       TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_outbox;
DROP TABLE webhook_endpoints;
