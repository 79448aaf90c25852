package actor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Persistence interfaces. Every method takes a context and returns an error;
// the runtime never swallows one. Implementations: MemoryStore (this
// package, for tests), store/sqlite and store/postgres.

// Event is one entry of an actor's journal. Seq starts at 1 per key and has
// no gaps.
type Event struct {
	Seq  uint64
	Type string
	Data []byte
	Time time.Time
}

// ReminderOp sets (Delete false) or deletes a durable reminder of the unit's
// actor as part of a commit.
type ReminderOp struct {
	Name   string
	Due    time.Time
	Delete bool
}

// Unit is one actor's atomic change: its events, its reminder changes and
// any engine-specific effects (projection rows, inbox acknowledgements,
// routes) that must commit with them or not at all.
type Unit struct {
	Key string
	// ExpectSeq is the sequence of the last event already in the journal for
	// Key (0 for none). The commit fails with a *ConflictError unless it
	// matches, and the new events get ExpectSeq+1, ExpectSeq+2, ...
	ExpectSeq uint64
	Events    []Event
	Reminders []ReminderOp
	// Effects are opaque to the runtime; the journal implementation applies
	// the kinds it knows in the same transaction and fails the unit on a
	// kind it does not know.
	Effects []any
}

// Journal is an append-only event log per actor key.
type Journal interface {
	// Commit makes every unit durable, together, in one transaction where
	// the engine allows. results[i] is unit i's own outcome (nil, a
	// *ConflictError, ErrFenced, ...); a failed unit leaves no trace and does
	// not fail the others. err != nil means the batch as a whole failed and
	// nothing was committed.
	Commit(ctx context.Context, units []Unit) (results []error, err error)
	// Load calls fn for every event of key with Seq > afterSeq, in order.
	Load(ctx context.Context, key string, afterSeq uint64, fn func(Event) error) error
}

// Snapshot is an actor's state at a journal sequence.
type Snapshot struct {
	Key   string
	Seq   uint64
	State []byte
	Time  time.Time
}

// SnapshotStore keeps the latest snapshot per key. Saves are atomic and
// checksummed: a snapshot whose bytes do not match its checksum loads as
// ErrCorruptSnapshot, never as state.
type SnapshotStore interface {
	SaveSnapshot(ctx context.Context, s Snapshot) error
	// LoadSnapshot returns ErrNotFound when key has none.
	LoadSnapshot(ctx context.Context, key string) (Snapshot, error)
	DeleteSnapshot(ctx context.Context, key string) error
}

// Reminder is a durable timer: it survives restarts and wakes a passivated
// actor. (Key, Name) is unique; setting it again moves it.
type Reminder struct {
	Key  string
	Name string
	Due  time.Time
}

// ReminderStore keeps durable reminders indexed by due time.
type ReminderStore interface {
	SetReminder(ctx context.Context, r Reminder) error
	DeleteReminder(ctx context.Context, key, name string) error
	// DueReminders returns up to limit reminders with Due <= before, earliest first.
	DueReminders(ctx context.Context, before time.Time, limit int) ([]Reminder, error)
}

// Errors that persistence implementations return and callers branch on.
var (
	ErrNotFound        = errors.New("not found")
	ErrCorruptSnapshot = errors.New("snapshot checksum mismatch")
	// ErrFenced means this process no longer owns the actor's shard (its
	// epoch is stale): nothing was written and the actor must stop.
	ErrFenced = errors.New("fenced: shard ownership lost")
	// ErrConflict is matched by every *ConflictError (errors.Is).
	ErrConflict = errors.New("journal sequence conflict")
)

// ConflictError reports an append whose expected sequence did not match.
type ConflictError struct {
	Key      string
	Expected uint64
	Actual   uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("journal %q: expected seq %d, found %d", e.Key, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrConflict) true for a *ConflictError.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
