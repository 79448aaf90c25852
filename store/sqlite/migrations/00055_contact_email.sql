-- contacts.email: the address an email step of a follow-up ladder writes
-- to (docs/design.md §17); '' = none. Erasure of the contact's number
-- deletes the row, and with it the address.

-- +goose Up
ALTER TABLE contacts ADD COLUMN email TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE contacts DROP COLUMN email;
