-- deliveries.code: the recipient's reply code for the group when their
-- texts show one ("A", "B", …; docs/design.md §15), '' otherwise; the
-- recipient JSON's "code".

-- +goose Up
ALTER TABLE deliveries ADD COLUMN code TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE deliveries DROP COLUMN code;
