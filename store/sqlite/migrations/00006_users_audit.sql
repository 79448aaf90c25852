-- Users, and the append-only audit log (design.md §14). Times are Unix
-- nanoseconds (0 = not set).

-- +goose Up
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT    NOT NULL UNIQUE, -- lower-case
    name          TEXT    NOT NULL,
    role          TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    disabled_at   INTEGER NOT NULL DEFAULT 0,
    session_epoch INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE audit_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         INTEGER NOT NULL,
    actor_type TEXT    NOT NULL,
    actor_id   TEXT    NOT NULL,
    actor_name TEXT    NOT NULL,
    action     TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    ip         TEXT    NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);

-- Append-only: rows are never changed (retention deletes whole rows).
-- +goose StatementBegin
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER audit_log_no_update;
DROP TABLE audit_log;
DROP TABLE users;
