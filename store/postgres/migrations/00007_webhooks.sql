-- Outbound webhooks (design.md §13): endpoints, the transactional outbox,
-- the per-endpoint delivery queue and the attempts log. Times are Unix
-- nanoseconds (0 = not set).

-- +goose Up
CREATE TABLE webhook_endpoints (
    id              TEXT COLLATE "C" PRIMARY KEY,
    url TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    events TEXT COLLATE "C" NOT NULL, -- JSON array of event types or ["*"]
    signing TEXT COLLATE "C" NOT NULL, -- hmac | ed25519
    secret          BYTEA NOT NULL, -- sealed by webhookout, never in clear when a key is set
    prev_secret     BYTEA NOT NULL DEFAULT '',
    prev_until      BIGINT NOT NULL DEFAULT 0,
    disabled_at     BIGINT NOT NULL DEFAULT 0,
    disabled_reason TEXT COLLATE "C" NOT NULL DEFAULT '',
    failing_since   BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

-- Written in the same transaction as the change each row reports.
CREATE TABLE webhook_outbox (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    msg_id TEXT COLLATE "C" NOT NULL UNIQUE,
    type TEXT COLLATE "C" NOT NULL,
    group_id TEXT COLLATE "C" NOT NULL DEFAULT '',
    seq         BIGINT NOT NULL DEFAULT 0,
    endpoint_id TEXT COLLATE "C" NOT NULL DEFAULT '', -- set for a test event: that endpoint only
    payload     BYTEA NOT NULL,
    created_at  BIGINT NOT NULL,
    dispatched  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox (id) WHERE dispatched = 0;
CREATE INDEX webhook_outbox_created ON webhook_outbox (created_at);

CREATE TABLE webhook_deliveries (
    endpoint_id TEXT COLLATE "C" NOT NULL,
    outbox_id   BIGINT NOT NULL,
    state TEXT COLLATE "C" NOT NULL, -- pending | delivered | failed
    attempts    BIGINT NOT NULL DEFAULT 0,
    next_at     BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    claimed_by  TEXT COLLATE "C" NOT NULL DEFAULT '', -- the worker holding its lease
    PRIMARY KEY (endpoint_id, outbox_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_at, outbox_id) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_by) WHERE claimed_by <> '';

CREATE TABLE webhook_attempts (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    endpoint_id TEXT COLLATE "C" NOT NULL,
    outbox_id   BIGINT NOT NULL,
    msg_id TEXT COLLATE "C" NOT NULL,
    type TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL,
    status_code BIGINT NOT NULL,
    result TEXT COLLATE "C" NOT NULL,
    latency_ms  BIGINT NOT NULL,
    response TEXT COLLATE "C" NOT NULL DEFAULT '',
    error TEXT COLLATE "C" NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_outbox;
DROP TABLE webhook_endpoints;
