package store

import (
	"context"
	"errors"
	"time"
)

// ---- Users (docs/design.md §14) ----

// Roles of a user, from least to most powerful.
const (
	RoleViewer     = "viewer"
	RoleDispatcher = "dispatcher"
	RoleAdmin      = "admin"
)

// User is a person who signs in to the board. The password is never
// stored: PasswordHash is an encoded argon2id hash. A user is never
// removed, only disabled, so that the audit trail keeps naming them.
type User struct {
	ID           string
	Email        string // unique, stored lower-case
	Name         string
	Role         string
	PasswordHash string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	DisabledAt   time.Time // zero while the user may sign in
	// SessionEpoch grows whenever every session of the user must end
	// (password reset, role change, disable); a session remembers the
	// epoch it was opened under.
	SessionEpoch int64
	// MustChangePassword is set by a generated or reset password: the
	// user must choose a new one before doing anything else.
	MustChangePassword bool
}

// ErrEmailTaken fails CreateUser and UpdateUser for an email another user
// already has.
var ErrEmailTaken = errors.New("email already used by another user")

// Users stores board users. Every write carries the audit entries that
// record it and commits them in the same transaction.
type Users interface {
	// CreateUser stores u; ErrEmailTaken for a used email.
	CreateUser(ctx context.Context, u User, audit ...AuditEntry) error
	// UserByID and UserByEmail return actor.ErrNotFound for no such user.
	UserByID(ctx context.Context, id string) (User, error)
	UserByEmail(ctx context.Context, email string) (User, error)
	// ListUsers returns every user, oldest first.
	ListUsers(ctx context.Context) ([]User, error)
	// UpdateUser replaces the stored user with u.ID by u (email, name,
	// role, hash, disabled time, epoch; CreatedAt is kept);
	// actor.ErrNotFound for an unknown id.
	UpdateUser(ctx context.Context, u User, audit ...AuditEntry) error
	// DeleteUser stores u as UpdateUser does (the caller has disabled it:
	// a user is never removed) and revokes, at u.UpdatedAt, every key
	// whose CreatedBy is u.ID and that is not revoked yet, in one
	// transaction with audit and, per key it revokes, a copy of keyAudit
	// whose Target is the key's id. It returns the revoked keys' ids;
	// actor.ErrNotFound for an unknown user.
	DeleteUser(ctx context.Context, u User, keyAudit AuditEntry, audit ...AuditEntry) ([]string, error)
	// ChangePassword stores u as UpdateUser does and deletes every
	// session of u.ID except the one whose IDHash is keep, in one
	// transaction with audit.
	ChangePassword(ctx context.Context, u User, keep []byte, audit ...AuditEntry) error
}

// ---- Board sessions ----

// Session is one signed-in board, of a user (UserID, Epoch: the user's
// session epoch when it was opened) or of an API key (KeyID, KeyPrefix).
// Only IDHash, the SHA-256 of the random session id the cookie carries,
// is stored, never the id itself.
type Session struct {
	IDHash    []byte
	UserID    string
	KeyID     string
	KeyPrefix string
	Name      string // the user's or key's name at sign-in, for the audit trail
	Epoch     int64
	CreatedAt time.Time
	ExpiresAt time.Time // absolute end
	LastSeen  time.Time // idle end: LastSeen + the idle limit; written at most about once a minute
}

// Owner is the user or key whose share of the sessions s counts against.
func (s Session) Owner() string {
	if s.UserID != "" {
		return s.UserID
	}
	return s.KeyID
}

// SessionLimits bound the session table when a session is created.
type SessionLimits struct {
	PerOwner int // at most this many per owner: the owner's oldest make room
	Total    int // at most this many in all: ErrTooManySessions beyond
	// Sessions that ended (ExpiresAt ≤ now or LastSeen < IdleBefore) are
	// deleted first.
	IdleBefore time.Time
}

// ErrTooManySessions fails CreateSession when the table is full.
var ErrTooManySessions = errors.New("too many open sessions")

// Sessions keeps the board's sessions, shared by every node.
type Sessions interface {
	// CreateSession deletes ended sessions, makes room within lim and
	// stores s, in one transaction.
	CreateSession(ctx context.Context, s Session, lim SessionLimits) error
	// SessionByHash returns the session; actor.ErrNotFound for none.
	SessionByHash(ctx context.Context, idHash []byte) (Session, error)
	// TouchSession sets the session's LastSeen to at.
	TouchSession(ctx context.Context, idHash []byte, at time.Time) error
	// DeleteSession deletes one session (none: no error).
	DeleteSession(ctx context.Context, idHash []byte) error
	// DeleteSessionsOf deletes every session of a user or key id.
	DeleteSessionsOf(ctx context.Context, owner string) (int, error)
	// PurgeSessions deletes sessions that ended: ExpiresAt ≤ now or
	// LastSeen < idleBefore.
	PurgeSessions(ctx context.Context, now, idleBefore time.Time) (int, error)
}

// ---- Audit log ----

// Audit actor types.
const (
	ActorUser   = "user"
	ActorKey    = "key"
	ActorSystem = "system"
)

// AuditActor is who did something: a user or an API key, by id and by
// the name it had at that moment.
type AuditActor struct {
	Type string
	ID   string
	Name string
	// IP is the address the request came from ("" when not from a request).
	IP string
}

// AuditEntry is one line of the append-only audit log.
type AuditEntry struct {
	ID     int64 // assigned by the store, increasing
	At     time.Time
	Actor  AuditActor
	Action string // e.g. "group.sent", "user.created", "session.sign_in_failed"
	Target string // what it was done to (a group id, "grp_x #3 …0101", a user id); numbers only via AuditNumber
}

// AuditQuery filters ListAudit; zero fields do not filter. Results are
// newest first.
type AuditQuery struct {
	Since  time.Time // At >= Since
	Until  time.Time // At < Until
	Actor  string    // actor id
	Action string
	Cursor string
	Limit  int // default 100, max 10000
}

// Audit is the append-only audit log: entries are added with the durable
// change they record (the audit argument of the Users, Keys,
// Suppressions, Directory and Erasure writes and of PurgeAudit, or
// Effects.Audit with a unit), on their own by AppendAudit for events that
// change no stored state (a sign-in), and removed only by retention.
type Audit interface {
	// AppendAudit appends entries in a transaction of their own.
	AppendAudit(ctx context.Context, entries ...AuditEntry) error
	ListAudit(ctx context.Context, q AuditQuery) (rows []AuditEntry, next string, err error)
	// PurgeAudit deletes entries older than t and appends audit (the
	// retention pass that purges) in the same transaction; returns how
	// many it deleted. A refused entry purges nothing.
	PurgeAudit(ctx context.Context, before time.Time, audit ...AuditEntry) (int, error)
}

type auditActorKey struct{}

// WithAuditActor returns ctx carrying who is acting, so that layers below
// the HTTP API (the tracker and its group actors) can record it in the
// audit entries they commit.
func WithAuditActor(ctx context.Context, a AuditActor) context.Context {
	return context.WithValue(ctx, auditActorKey{}, a)
}

// AuditActorFrom returns the actor WithAuditActor put in ctx.
func AuditActorFrom(ctx context.Context) (AuditActor, bool) {
	a, ok := ctx.Value(auditActorKey{}).(AuditActor)
	return a, ok
}

// AuditNumber is how the audit log names a phone number: its last four
// digits only. The log outlives the retention stage that hashes numbers
// in groups (and an erasure), so it must not keep them in clear.
func AuditNumber(n string) string {
	if len(n) <= 4 {
		return "…" + n
	}
	return "…" + n[len(n)-4:]
}
