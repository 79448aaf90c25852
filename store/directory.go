package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ---- Directory: contacts, crews and saved templates (docs/design.md §11) ----

// ErrConflict fails a directory write that would break a uniqueness rule:
// a second contact with the same number, a second crew or template with
// the same name. The HTTP layer maps it to 409.
var ErrConflict = errors.New("already exists")

// Contact is a person crewcast can text.
type Contact struct {
	ID     string
	Number string // E.164, unique
	Name   string
	// Email is the address an email step of a follow-up ladder writes to
	// ("" = none; docs/design.md §17). Like the number, it is never logged.
	Email string
	Tags  []string // sorted, unique
	// Timezone is an IANA zone name ("" = unknown).
	Timezone string
	// Fields are free key/value pairs, used by templates as {{fields.key}}.
	Fields    map[string]string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ContactQuery filters ListContacts. Results are ordered by (name, id).
type ContactQuery struct {
	// Q matches a substring of the name or the email (case-insensitive) or
	// the number.
	Q string
	// Tag keeps contacts carrying this tag.
	Tag string
	// Crew keeps members of the crew with this id.
	Crew   string
	Cursor string
	Limit  int // default 100, max 10000
}

// ImportCounts is what ImportContacts did (or, in a dry run, would do).
type ImportCounts struct {
	Created   int
	Updated   int
	Unchanged int
}

// Crew is a named list of contacts.
type Crew struct {
	ID          string
	Name        string // unique
	Description string
	// Members are contact ids, in the order they were added.
	Members []string
	// NewContacts, on a write (CreateCrew, UpdateCrew), are contacts to
	// create in the crew write's own transaction, before its members are
	// written: the people a crew names by a number nobody had. A number
	// that has a contact by then (a concurrent writer) keeps it, and a
	// member naming the new contact's id names the stored one instead.
	// Reads leave it empty.
	NewContacts []Contact
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Template is a saved message text with its response options.
type Template struct {
	ID   string
	Name string // unique
	Text string
	// Responses is the JSON array of response options as the API took it.
	Responses json.RawMessage
	// Followup is the saved follow-up (either form, or a ladder of steps:
	// docs/design.md §17) as the API took it; nil for none.
	Followup  json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Directory keeps contacts, crews and templates. Lookups of a missing row
// return actor.ErrNotFound; uniqueness clashes return ErrConflict.
//
// Every write takes the audit entries that record it (docs/design.md §14) and
// commits them in the same transaction as the change: both or neither. A
// write that fails (a missing row, a clash, a refused entry) leaves
// neither.
type Directory interface {
	CreateContact(ctx context.Context, c Contact, audit ...AuditEntry) error
	GetContact(ctx context.Context, id string) (Contact, error)
	// UpdateContact replaces every field of the contact with c.ID.
	UpdateContact(ctx context.Context, c Contact, audit ...AuditEntry) error
	// DeleteContact removes the contact and its crew memberships.
	DeleteContact(ctx context.Context, id string, audit ...AuditEntry) error
	ListContacts(ctx context.Context, q ContactQuery) (rows []Contact, next string, err error)
	// ContactsByNumbers returns the contacts among numbers, keyed by number.
	ContactsByNumbers(ctx context.Context, numbers []string) (map[string]Contact, error)
	// ContactsByIDs returns the contacts among ids, keyed by id.
	ContactsByIDs(ctx context.Context, ids []string) (map[string]Contact, error)
	// ContactsByTag returns every contact with the tag, ordered by id.
	ContactsByTag(ctx context.Context, tag string) ([]Contact, error)
	// ImportContacts upserts contacts by number in one transaction: a new
	// number is created with the given ID, a known one keeps its ID and
	// CreatedAt and takes the rest; identical rows are left alone. With
	// dryRun nothing is written (the audit entries neither) and the counts
	// say what would happen.
	ImportContacts(ctx context.Context, cs []Contact, dryRun bool, audit ...AuditEntry) (ImportCounts, error)

	CreateCrew(ctx context.Context, c Crew, audit ...AuditEntry) error
	GetCrew(ctx context.Context, id string) (Crew, error)
	CrewByName(ctx context.Context, name string) (Crew, error)
	// UpdateCrew replaces name, description and members of the crew c.ID.
	UpdateCrew(ctx context.Context, c Crew, audit ...AuditEntry) error
	DeleteCrew(ctx context.Context, id string, audit ...AuditEntry) error
	// ListCrews returns every crew ordered by name, with its members.
	ListCrews(ctx context.Context) ([]Crew, error)
	// CrewContacts returns the crew's members as contacts, in member
	// order, in one read (a crew may hold 100,000 people). Their Tags are
	// not read (nil): sending does not need them.
	CrewContacts(ctx context.Context, crewID string) ([]Contact, error)
	// FindCrew returns the crew whose id, or else name, is ref, without
	// its members; actor.ErrNotFound when there is none.
	FindCrew(ctx context.Context, ref string) (Crew, error)

	CreateTemplate(ctx context.Context, t Template, audit ...AuditEntry) error
	GetTemplate(ctx context.Context, id string) (Template, error)
	TemplateByName(ctx context.Context, name string) (Template, error)
	UpdateTemplate(ctx context.Context, t Template, audit ...AuditEntry) error
	DeleteTemplate(ctx context.Context, id string, audit ...AuditEntry) error
	ListTemplates(ctx context.Context) ([]Template, error)
}
