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
    id_hash      BLOB PRIMARY KEY,
    user_id      TEXT    NOT NULL DEFAULT '',
    key_id       TEXT    NOT NULL DEFAULT '',
    key_prefix   TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL DEFAULT '',
    epoch        INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_key ON sessions (key_id);
CREATE INDEX sessions_expires ON sessions (expires_at);
CREATE INDEX sessions_last_seen ON sessions (last_seen_at);
ALTER TABLE users ADD COLUMN must_change_password INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE users DROP COLUMN must_change_password;
DROP TABLE sessions;
