-- templates.followup: a saved follow-up (the old form or a ladder of
-- steps, docs/design.md §17) as the JSON the API took; '' = none.

-- +goose Up
ALTER TABLE templates ADD COLUMN followup TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE templates DROP COLUMN followup;
