package store

import (
	"context"
	"time"
)

// ---- Consent records (docs/architecture.md, "Consent records") ----

// Consent states of a contact.
const (
	ConsentOptedIn  = "opted_in"
	ConsentOptedOut = "opted_out"
	ConsentUnknown  = "unknown"
)

// Consent sources: where a consent change came from.
const (
	ConsentSourceImport   = "import"   // a CSV import's consent column
	ConsentSourceAPI      = "api"      // an API key's suppression add or removal
	ConsentSourceSMS      = "sms"      // the person texted STOP or START
	ConsentSourceBoard    = "board"    // a signed-in user's suppression add or removal
	ConsentSourceProvider = "provider" // the provider reported an opt-out
)

// ConsentSources are the valid sources, in the order the API names them.
var ConsentSources = []string{ConsentSourceImport, ConsentSourceAPI, ConsentSourceSMS, ConsentSourceBoard, ConsentSourceProvider}

// ConsentEntry is one line of a number's append-only consent history.
type ConsentEntry struct {
	Number string
	At     time.Time
	State  string // ConsentOptedIn or ConsentOptedOut
	Source string // one of ConsentSources
	// By is who made the change: a user or key id ("" for sms and provider).
	By string
	// Text is the words the person agreed to or sent ("" when none).
	Text string
}

// Consents keeps every number's consent history. The history is keyed by
// number, not by contact, so that a STOP from a number nobody made a
// contact for is recorded too; erasing a number deletes its history (the
// suppression itself stays, under the keyed hash).
type Consents interface {
	// AppendConsent appends entries in one transaction (At defaults to now).
	AppendConsent(ctx context.Context, entries ...ConsentEntry) error
	// ConsentHistory returns the number's history, oldest first (empty,
	// not an error, for a number with none).
	ConsentHistory(ctx context.Context, number string) ([]ConsentEntry, error)
	// LatestConsent returns the newest entry of each number among numbers
	// that has one, keyed by number.
	LatestConsent(ctx context.Context, numbers []string) (map[string]ConsentEntry, error)
}

// ConsentState is a contact's consent state: opted_out while its number is
// suppressed (whatever the history says: an import or a START cannot lift
// an operator's or a STOP's suppression), else the newest entry's state,
// else unknown.
func ConsentState(latest ConsentEntry, hasLatest, suppressed bool) string {
	switch {
	case suppressed:
		return ConsentOptedOut
	case hasLatest:
		return latest.State
	default:
		return ConsentUnknown
	}
}
