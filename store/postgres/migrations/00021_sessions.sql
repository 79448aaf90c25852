-- sessions holds the board's sign-in sessions, so that they survive a
-- restart and work on every node. Only id_hash, the SHA-256 of the random
-- session id the cookie carries, is kept: a copy of the table signs no
-- one in. A session belongs to a user (user_id, with the user's session
-- epoch when it was opened) or to an API key (key_id, key_prefix).
-- last_seen_at is written at most about once a minute (docs/operations.md).
-- users.must_change_password is set by a generated or reset password: the
-- user must choose a new one before anything else.

-- +goose Up
CREATE TABLE sessions (
    id_hash      BYTEA PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL DEFAULT '',
    key_id       TEXT COLLATE "C" NOT NULL DEFAULT '',
    key_prefix   TEXT COLLATE "C" NOT NULL DEFAULT '',
    name         TEXT COLLATE "C" NOT NULL DEFAULT '',
    epoch        BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_key ON sessions (key_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
CREATE INDEX sessions_last_seen ON sessions (last_seen_at);
ALTER TABLE users ADD COLUMN must_change_password BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN must_change_password;
DROP TABLE sessions;
