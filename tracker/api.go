package tracker

import (
	"errors"
	"strings"
	"time"

	"github.com/crewcast/crewcast/group"
)

// Errors the API layer maps to HTTP statuses (see httpapi).
var (
	// ErrNotFound: no such group. → 404
	ErrNotFound = errors.New("group not found")
	// ErrIdempotencyMismatch: the Idempotency-Key was used with a different
	// request body. → 422
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")
	// ErrUnavailable wraps store and runtime failures: nothing was changed
	// durably, the client may try again. → 503
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrCanceled: the caller's own context ended (the client went away,
	// or its deadline passed) before the operation finished. Not a
	// failure of crewcast; a commit under way may still land, so a retry
	// must be idempotent. → 503 when anyone is still listening
	ErrCanceled = errors.New("request ended before the operation finished")

	// ErrNoneReachable: a group chosen from crews, tags or contacts would
	// text nobody (everyone suppressed). → 422
	ErrNoneReachable = errors.New("no one to send to")
	// ErrClosed: the tracker is shutting down. → 503
	ErrClosed = errors.New("tracker is shutting down")
)

// group.ErrState (→ 409) and group.ErrNoRecipient (→ 404) come through
// unchanged from operator commands.

// ValidationError lists what is wrong with a create request: the first
// group.MaxFieldErrors problems in Fields, and how many there were in all
// in Total (0 when Fields is the whole list). → 400
type ValidationError struct {
	Fields []group.FieldError
	Total  int
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

// CreateOptions are the per-request knobs of Create.
type CreateOptions struct {
	// IdempotencyKey, when set, makes Create return the same group for the
	// same key and request, and ErrIdempotencyMismatch for the same key
	// with a different request. Keys are scoped to By: the same key from
	// another caller is a different key.
	IdempotencyKey string
	// CheckAfter overrides the first status check delay (the API's
	// "check_after" field); 0 keeps the default.
	CheckAfter time.Duration
	// By names who asked (an API key id), for the audit trail.
	By string
}

// Change is one committed change of a group: the journal events one commit
// appended, published after the commit succeeded.
type Change struct {
	GroupID string
	// Seq is the journal sequence of the last event in Events.
	Seq    uint64
	Events []EventView
}

// EventView is a journal event as the API shows it.
type EventView struct {
	Seq  uint64    `json:"seq"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Data []byte    `json:"data"` // the event's JSON
}
