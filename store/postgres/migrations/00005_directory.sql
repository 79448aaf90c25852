-- Contacts, crews and saved templates (design.md §11). Times are Unix
-- nanoseconds; text columns use the "C" collation, as in 00001.

-- +goose Up
CREATE TABLE contacts (
    id         TEXT COLLATE "C" PRIMARY KEY,
    number     TEXT COLLATE "C" NOT NULL UNIQUE,
    name       TEXT COLLATE "C" NOT NULL,
    tags       TEXT   NOT NULL, -- JSON array, sorted; contact_tags indexes it
    timezone   TEXT   NOT NULL,
    fields     TEXT   NOT NULL, -- JSON object of strings
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX contacts_name ON contacts (name, id);

CREATE TABLE contact_tags (
    tag        TEXT COLLATE "C" NOT NULL,
    contact_id TEXT COLLATE "C" NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    PRIMARY KEY (tag, contact_id)
);
CREATE INDEX contact_tags_contact ON contact_tags (contact_id);

CREATE TABLE crews (
    id          TEXT COLLATE "C" PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL UNIQUE,
    description TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE TABLE crew_members (
    crew_id    TEXT COLLATE "C" NOT NULL REFERENCES crews (id) ON DELETE CASCADE,
    contact_id TEXT COLLATE "C" NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    PRIMARY KEY (crew_id, contact_id)
);
CREATE INDEX crew_members_contact ON crew_members (contact_id);
CREATE INDEX crew_members_order ON crew_members (crew_id, position);

CREATE TABLE templates (
    id         TEXT COLLATE "C" PRIMARY KEY,
    name       TEXT COLLATE "C" NOT NULL UNIQUE,
    text       TEXT   NOT NULL,
    responses  TEXT   NOT NULL, -- JSON array
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- The response option each recipient chose last (design §11).
ALTER TABLE deliveries ADD COLUMN response TEXT NOT NULL DEFAULT '';
-- A group's response options and quorum, as JSON ('' = none).
ALTER TABLE groups ADD COLUMN answers TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE groups DROP COLUMN answers;
ALTER TABLE deliveries DROP COLUMN response;
DROP TABLE templates;
DROP TABLE crew_members;
DROP TABLE crews;
DROP TABLE contact_tags;
DROP TABLE contacts;
