-- replies.ambiguous: a bare answer ("1", "YES") from a person with more
-- than one open group from the same number, applied to none of them
-- (docs/design.md §15, reply codes); listed by GET /v1/replies?ambiguous=1.

-- +goose Up
ALTER TABLE replies ADD COLUMN ambiguous INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE replies DROP COLUMN ambiguous;
