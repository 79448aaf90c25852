-- Sends by time (docs/design.md §16): the senders list counts, for each
-- sender number, the recipients whose send was claimed in the last hour.
-- The index reads only that hour's rows (and their group ids) instead of
-- every delivery ever kept. claimed_at is 0 until a send is claimed.

-- +goose Up
CREATE INDEX deliveries_claimed ON deliveries (claimed_at, group_id);

-- +goose Down
DROP INDEX deliveries_claimed;
