-- email_optouts: the addresses that asked for no more email (an email's
-- List-Unsubscribe, docs/design.md §17), each as a keyed hash of the
-- lowercased address (HMAC-SHA256 with the answer-link key): the list
-- answers "is this address opted out?" without keeping the address.

-- +goose Up
CREATE TABLE email_optouts (
    address_hash TEXT PRIMARY KEY,
    created_at   BIGINT NOT NULL
);

-- +goose Down
DROP TABLE email_optouts;
