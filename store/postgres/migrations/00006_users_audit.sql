-- Users, and the append-only audit log (design.md §14). Times are Unix
-- nanoseconds (0 = not set).

-- +goose Up
CREATE TABLE users (
    id            TEXT COLLATE "C" PRIMARY KEY,
    email         TEXT COLLATE "C" NOT NULL UNIQUE, -- lower-case
    name          TEXT COLLATE "C" NOT NULL,
    role          TEXT COLLATE "C" NOT NULL,
    password_hash TEXT COLLATE "C" NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    disabled_at   BIGINT NOT NULL DEFAULT 0,
    session_epoch BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE audit_log (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         BIGINT NOT NULL,
    actor_type TEXT COLLATE "C" NOT NULL,
    actor_id   TEXT COLLATE "C" NOT NULL,
    actor_name TEXT COLLATE "C" NOT NULL,
    action     TEXT COLLATE "C" NOT NULL,
    target     TEXT COLLATE "C" NOT NULL,
    ip         TEXT COLLATE "C" NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
CREATE INDEX audit_log_actor ON audit_log (actor_id, id);

-- Append-only: rows are never changed (retention deletes whole rows).
-- +goose StatementBegin
CREATE FUNCTION audit_log_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only';
END;
$$ LANGUAGE plpgsql;
-- +goose StatementEnd
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- +goose Down
DROP TRIGGER audit_log_no_update ON audit_log;
DROP FUNCTION audit_log_append_only();
DROP TABLE audit_log;
DROP TABLE users;
