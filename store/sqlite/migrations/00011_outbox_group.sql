-- Retention and deletion drop a group's outbound webhook events with the
-- group's own rewrite (sqlq.RewriteGroup, DeleteGroup): find them by group.

-- +goose Up
CREATE INDEX webhook_outbox_group ON webhook_outbox (group_id);

-- +goose Down
DROP INDEX webhook_outbox_group;
