-- An API key belongs to the user who made it (created_by, '' for none:
-- the bootstrap key and keys made with it) and may expire (expires_at,
-- 0 for never). Deleting a user revokes their keys, found by created_by.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX api_keys_created_by ON api_keys (created_by);

-- +goose Down
DROP INDEX api_keys_created_by;
ALTER TABLE api_keys DROP COLUMN expires_at;
ALTER TABLE api_keys DROP COLUMN created_by;
