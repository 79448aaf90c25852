package store

import (
	"context"
	"time"
)

// ---- Senders: the numbers crewcast may send from (docs/design.md §16) ----

// Sender providers.
const (
	ProviderTelnyx = "telnyx"
	ProviderTwilio = "twilio"
)

// Registration kinds of a sender.
const (
	RegistrationNone      = "none"
	Registration10DLC     = "10dlc"
	RegistrationTollFree  = "toll_free"
	RegistrationShortCode = "short_code"
)

// Registration statuses.
const (
	RegistrationApproved = "approved"
	RegistrationPending  = "pending"
	RegistrationRejected = "rejected"
	RegistrationUnknown  = "unknown"
)

// Registration is a sender's carrier registration.
type Registration struct {
	Kind       string // one of the Registration kinds
	CampaignID string // the 10DLC campaign or toll-free verification id ("" when none)
	Status     string // one of the Registration statuses
}

// Sender is one number crewcast may send from.
type Sender struct {
	Number       string // E.164, a short code or an alphanumeric id
	Provider     string // ProviderTelnyx or ProviderTwilio
	Pool         string // "" when the number belongs to no pool
	MPS          float64
	Registration Registration
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// NeedsApproval reports whether sending from s needs an approved
// registration that it does not have (a 10DLC or toll-free number whose
// status is not approved).
func (s Sender) NeedsApproval() bool {
	k := s.Registration.Kind
	return (k == Registration10DLC || k == RegistrationTollFree) && s.Registration.Status != RegistrationApproved
}

// DefaultMPS is the pacing of a number of the given registration kind when
// none is set: long code 1, toll-free 3, short code 30 messages a second.
func DefaultMPS(kind string) float64 {
	switch kind {
	case RegistrationTollFree:
		return 3
	case RegistrationShortCode:
		return 30
	default:
		return 1
	}
}

// Senders keeps the registered senders. The writes append their audit
// entries in the same transaction as the change (docs/design.md §14).
type Senders interface {
	// CreateSender stores a new sender (store.ErrConflict when its number
	// is taken).
	CreateSender(ctx context.Context, s Sender, audit ...AuditEntry) error
	// GetSender returns the sender or actor.ErrNotFound.
	GetSender(ctx context.Context, number string) (Sender, error)
	// ListSenders returns every sender, ordered by pool then number.
	ListSenders(ctx context.Context) ([]Sender, error)
	// UpdateSender replaces the sender with s.Number (actor.ErrNotFound if
	// there is none).
	UpdateSender(ctx context.Context, s Sender, audit ...AuditEntry) error
	// DeleteSender removes the sender (actor.ErrNotFound if there is none).
	DeleteSender(ctx context.Context, number string, audit ...AuditEntry) error
	// SentSince counts, by the from number of their group, the recipients
	// whose send was claimed at or after since: attempted sends, an
	// unconfirmed one included (it may have gone out). Numbers with none
	// are absent.
	SentSince(ctx context.Context, since time.Time) (map[string]int, error)
}
