package store

import "context"

// ---- Erasure (a person's request to be forgotten, docs/design.md §6) ----

// ReasonErased marks a recipient opted out because the person was erased
// while a group was still sending to them.
const ReasonErased = "erased"

// ErasedCounts says how many stored items an erasure changed, per place
// ("deliveries", "replies", "journal", "inbox", "routes", "suppressions",
// "snapshots", ...). Places that changed nothing are absent.
type ErasedCounts map[string]int

// Add adds every count of o to c.
func (c ErasedCounts) Add(o ErasedCounts) {
	for k, v := range o {
		if v != 0 {
			c[k] += v
		}
	}
}

// Total is the sum of every count.
func (c ErasedCounts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// GroupErasure says how to erase one person from one group.
type GroupErasure struct {
	Number      string // the number in clear
	Replacement string // what replaces it (a keyed hash or a random token)
	// RedactText also empties the group's message text (the group is
	// final: nobody is sent it any more).
	RedactText bool
	// Event rewrites one journal event (nil: leave events alone).
	Event func(typ string, data []byte) ([]byte, error)
}

// Erasure removes one person from what crewcast keeps. Every method is
// idempotent: a second call finds nothing left to change.
type Erasure interface {
	// GroupsWithNumber returns the ids of the groups whose deliveries or
	// replies name number.
	GroupsWithNumber(ctx context.Context, number string) ([]string, error)
	// EraseFromGroup rewrites one group in one transaction: its journal
	// (e.Event), its delivery row and replies of the number (number
	// replaced, name, reply text and media emptied), its message text when
	// e.RedactText, its conversation routes naming the number; it deletes
	// the group's snapshot. A missing group is not an error.
	EraseFromGroup(ctx context.Context, id string, e GroupErasure) (ErasedCounts, error)
	// EraseNumber erases the number from everything not kept per group, in
	// one transaction: unmatched replies, webhook inbox entries whose
	// payload names it (payload emptied, entry marked processed so it is
	// never applied), routes whose key names it, and the tables an engine
	// lists in its erasure statements. A suppression of the number is
	// replaced by one of keep with the same reason and time (keep ""
	// deletes it: no key to keep it with). It is an erasure's last step:
	// the audit entries that record the erasure commit in its transaction,
	// both or neither.
	EraseNumber(ctx context.Context, number, replacement, keep string, audit ...AuditEntry) (ErasedCounts, error)
}
