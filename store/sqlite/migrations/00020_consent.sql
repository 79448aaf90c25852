-- consent_history is every number's append-only consent history: each
-- opt-in and opt-out with when, where from (import, api, sms, board,
-- provider), by whom and the words the person agreed to or sent. Keyed by
-- number (a STOP may come from a number with no contact); erasing a number
-- deletes its rows, the suppression stays under the keyed hash.

-- +goose Up
CREATE TABLE consent_history (
    id     INTEGER PRIMARY KEY,
    number TEXT    NOT NULL,
    at     INTEGER NOT NULL,
    state  TEXT    NOT NULL,
    source TEXT    NOT NULL,
    by_id  TEXT    NOT NULL DEFAULT '',
    text   TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX consent_history_number ON consent_history (number, id);

-- +goose Down
DROP TABLE consent_history;
