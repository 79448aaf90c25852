-- Senders (docs/design.md §16): the numbers crewcast may send from, each
-- with its provider, pool, pacing and carrier registration. Times are Unix
-- nanoseconds.

-- +goose Up
CREATE TABLE senders (
    number              TEXT PRIMARY KEY,
    provider            TEXT    NOT NULL, -- telnyx | twilio
    pool                TEXT    NOT NULL DEFAULT '',
    mps                 DOUBLE PRECISION NOT NULL,
    registration_kind   TEXT    NOT NULL DEFAULT 'none',
    campaign_id         TEXT    NOT NULL DEFAULT '',
    registration_status TEXT    NOT NULL DEFAULT 'unknown',
    created_at          BIGINT  NOT NULL,
    updated_at          BIGINT  NOT NULL
);
CREATE INDEX senders_pool ON senders (pool, number);

-- +goose Down
DROP TABLE senders;
