-- replies.possible_opt_out: the tracker found a stop word among other
-- words ("I can't stop by today"); not an opt-out, flagged for a person to
-- decide (docs/operations.md, "Opt-outs").

-- +goose Up
ALTER TABLE replies ADD COLUMN possible_opt_out INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE replies DROP COLUMN possible_opt_out;
