// Package store defines what crewcast keeps durably, as one interface that
// each engine implements: store/sqlite (embedded, the default) and
// store/postgres (several nodes). store/storetest is the conformance suite
// every engine must pass.
//
// Rules every engine follows:
//   - Errors are returned, never logged and ignored; nothing reports success
//     for what was not stored (disk full, read-only database, lost
//     connection all surface as errors).
//   - Commit applies many actors' units in one transaction; a unit that fails
//     (sequence conflict, fenced, idempotency clash) is rolled back alone
//     (savepoint) and the others commit.
//   - Every unit checks its shard's lease epoch inside the transaction; a
//     stale epoch fails the unit with actor.ErrFenced and writes nothing.
//   - Projection rows carried as Effects commit in the same transaction as
//     the journal events that changed them.
package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"hash/fnv"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
)

// Store is everything crewcast persists.
type Store interface {
	actor.Journal
	actor.SnapshotStore
	actor.ReminderStore
	Inbox
	Routes
	Projections
	Suppressions
	Keys
	Idempotency
	Leases
	Retention
	Users
	Sessions
	Audit
	Erasure
	Webhooks
	Directory
	Consents
	Senders
	ServerKeys
	EmailOptOuts

	// Engine names the engine: "sqlite" or "postgres".
	Engine() string
	// Migrate applies pending embedded migrations (idempotent). Open
	// already calls it.
	Migrate(ctx context.Context) error
	// MigrationVersion returns the highest applied migration version.
	MigrationVersion(ctx context.Context) (int64, error)
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	Close() error
}

// Errors callers branch on. Not-found is actor.ErrNotFound everywhere.
var (
	// ErrIdempotencyConflict fails a unit whose Effects.Idempotency key
	// already exists.
	ErrIdempotencyConflict = errors.New("idempotency key already used")
	// ErrUnknownEffect fails a unit that carries an effect the engine does
	// not know.
	ErrUnknownEffect = errors.New("unknown effect type")
	// ErrSuppressed fails a unit whose Effects.Claim names a number on the
	// suppression list at the moment the unit commits.
	ErrSuppressed = errors.New("number is suppressed")
)

// NumShards is the number of shards actor keys hash to (docs/design.md §9).
const NumShards = 64

// ShardOf returns the shard of an actor key.
func ShardOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % NumShards)
}

// Effects is the one effect type engines apply inside Commit (pass it as a
// value or pointer in actor.Unit.Effects). Everything in it commits with the
// unit's events or not at all.
type Effects struct {
	Group       *GroupRow       // upsert by ID
	Deliveries  []DeliveryRow   // upsert by (GroupID, Number)
	InboxDone   []InboxRef      // mark processed (and set Target)
	Routes      []Route         // upsert by Key
	Suppress    []Suppression   // upsert by Number; a START-liftable reason never replaces one that is not
	Unsuppress  []string        // a START: delete by number, only suppressions LiftedByStart
	Replies     []Reply         // insert; duplicate (Provider, EventID, Number) is ignored
	Idempotency *IdempotencyKey // insert; an existing key fails the unit with ErrIdempotencyConflict
	// Claim lists the numbers this unit claims for a provider call. If any
	// is suppressed when the unit commits (counting Suppress effects of
	// earlier units in the same Commit), the unit fails with ErrSuppressed
	// and writes nothing. Engines serialize this check with every
	// suppression write, so a claim never commits after a suppression of
	// one of its numbers did.
	Claim []string
	// Audit entries are appended with the unit (docs/design.md §14): who
	// sent, canceled, resumed, resolved or retried commits with the change.
	Audit  []AuditEntry
	Outbox []OutboxRow // insert; a duplicate MsgID is ignored (docs/design.md §13)
	// Consent entries are appended to their numbers' histories with the
	// unit: the STOP, START or provider opt-out that changed a person's
	// consent commits with the suppression it made or lifted.
	Consent []ConsentEntry
}

// ---- Inbox ----

// InboxEntry is one received webhook event, made durable before the
// provider gets its 2xx. (Provider, EventID) is unique.
type InboxEntry struct {
	Provider  string
	EventID   string
	MessageID string // provider message id, for adopting parked events ("" for inbound)
	Payload   []byte // normalized events as JSON
	// ReceivedAt is when crewcast stored it.
	ReceivedAt time.Time
	// Target is the actor key it was routed to; empty while unrouted (parked).
	Target string
	// ProcessedAt is zero until an actor applied it.
	ProcessedAt time.Time
}

// InboxRef names an inbox entry and the actor that processed it.
type InboxRef struct {
	Provider string
	EventID  string
	Target   string
}

// Inbox is the durable, deduplicated webhook inbox.
type Inbox interface {
	// InsertInbox stores entries in one transaction. isNew[i] is false when
	// (Provider, EventID) was already there (the stored row is untouched).
	// Concurrent inserts of the same event: exactly one sees isNew.
	InsertInbox(ctx context.Context, entries []InboxEntry) (isNew []bool, err error)
	// PendingInbox returns up to limit unprocessed entries, oldest first,
	// received after the given entry (zero value = from the start).
	PendingInbox(ctx context.Context, after InboxRef, limit int) ([]InboxEntry, error)
	// InboxByMessageID returns the unprocessed entries for a provider
	// message id (events parked before their route existed).
	InboxByMessageID(ctx context.Context, provider, messageID string) ([]InboxEntry, error)
	// AckInbox marks entries processed outside any actor unit (events that
	// concern nothing crewcast tracks).
	AckInbox(ctx context.Context, refs []InboxRef) error
	// PurgeInbox deletes entries processed before t; returns how many.
	PurgeInbox(ctx context.Context, processedBefore time.Time) (int, error)
	// IngestInbox is InsertInbox that also keeps the replay record: in the
	// same transaction as each new inbox row it records the event's
	// ReplayHash, and an entry whose hash is recorded is never stored
	// again, even after its inbox row was purged (InboxReplay). Exactly
	// one of concurrent ingests of one event sees InboxNew; InsertInbox
	// keeps the record the same way (isNew is result == InboxNew).
	IngestInbox(ctx context.Context, entries []InboxEntry) ([]InboxResult, error)
	// PurgeReplays deletes the replay records of events first seen before
	// t; returns how many.
	PurgeReplays(ctx context.Context, seenBefore time.Time) (int, error)
}

// InboxResult is what IngestInbox found for one entry.
type InboxResult uint8

// Results of IngestInbox.
const (
	// InboxNew: stored now; the caller processes it.
	InboxNew InboxResult = iota
	// InboxDuplicate: its inbox row was already there (a provider retry).
	InboxDuplicate
	// InboxReplay: its inbox row is gone (retention purged it) but the
	// replay record still holds its event id: a webhook seen before,
	// posted again. Nothing is stored.
	InboxReplay
)

// InboxIsNew maps IngestInbox's results to InsertInbox's isNew.
func InboxIsNew(res []InboxResult) []bool {
	if res == nil {
		return nil
	}
	isNew := make([]bool, len(res))
	for i, r := range res {
		isNew[i] = r == InboxNew
	}
	return isNew
}

// ReplayHash is the replay record's key of one provider event: 16 bytes
// of SHA-256 over the provider, a NUL and the event id (Twilio's
// MessageSid with the status and error code of a status callback, or
// "received" of an inbound message; Telnyx's event id). It holds no
// number and no text.
func ReplayHash(provider, eventID string) []byte {
	h := sha256.New()
	h.Write([]byte(provider))
	h.Write([]byte{0})
	h.Write([]byte(eventID))
	return h.Sum(nil)[:16]
}

// ---- Routes ----

// Route maps a key (a provider message id, a conversation key) to a group
// id. A zero ExpiresAt never expires.
type Route struct {
	Key       string
	Value     string
	ExpiresAt time.Time
}

// Routes is a small key-value table with optional expiry.
type Routes interface {
	PutRoute(ctx context.Context, r Route) error
	// GetRoute returns actor.ErrNotFound for a missing or expired key.
	GetRoute(ctx context.Context, key string) (Route, error)
	DeleteRoute(ctx context.Context, key string) error
}

// RouteBatchReader reads many routes in one query (both engines): a node
// routing a batch of webhooks for groups it does not own reads their routes
// at once instead of one round trip each.
type RouteBatchReader interface {
	// GetRoutes returns the routes of keys that exist and have not
	// expired, by key; missing and expired keys are absent.
	GetRoutes(ctx context.Context, keys []string) (map[string]Route, error)
}

// ---- Projections (reports) ----

// GroupRow is the report projection of one group.
type GroupRow struct {
	ID          string
	Status      crewcast.GroupStatus
	From        string
	Mode        crewcast.Mode
	Text        string
	PauseReason string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Counts per recipient status plus "replied" and "acknowledged".
	Counts map[string]int
	// Seq is the journal sequence this row reflects.
	Seq uint64
	// Answers is the JSON of the group's response options and quorum
	// ({"responses":[…],"quorum":{…}}; docs/design.md §11), "" when it has none.
	Answers string
}

// DeliveryRow is the report projection of one recipient of one group.
type DeliveryRow struct {
	GroupID           string
	Number            string
	Name              string
	Status            crewcast.Status
	Attempts          int
	ProviderMessageID string
	ErrorCode         string
	ErrorClass        crewcast.ErrorClass
	ClaimedAt         time.Time
	SentAt            time.Time
	DeliveredAt       time.Time
	FailedAt          time.Time
	RepliedAt         time.Time
	Ack               crewcast.Ack
	LastReply         string
	UpdatedAt         time.Time
	// Response is the key of the response option the recipient chose last
	// ("" = none; docs/design.md §11).
	Response string
	// Code is the recipient's reply code when their texts show one
	// (docs/design.md §15), "" otherwise.
	Code string
}

// Reply is an inbound message: matched to a group, or kept unmatched
// (GroupID empty) so that nothing a person sends is dropped.
type Reply struct {
	Provider   string
	EventID    string
	GroupID    string // empty when it matched no group
	Number     string // the sender
	To         string // our number
	Text       string
	Media      []string
	ReceivedAt time.Time
	// PossibleOptOut flags a reply with a stop word among other words
	// ("I can't stop by today") for a person to decide; not an opt-out.
	PossibleOptOut bool
	// Ambiguous: a bare answer while the person had several open groups
	// from this number (docs/design.md §15): applied to none, GroupID "".
	Ambiguous bool
}

// GroupQuery filters ListGroups. Results are newest first.
type GroupQuery struct {
	Status crewcast.GroupStatus // empty = any
	// Text keeps groups whose text contains it, ignoring case (ASCII
	// letters on SQLite, every letter on PostgreSQL); empty = any.
	Text string
	From string // the sender number, exact; empty = any
	// Since and Until bound created_at: Since <= created_at < Until; zero
	// does not bound.
	Since, Until time.Time
	Cursor       string // opaque; from the previous page
	Limit        int    // default 50, max 1000
}

// DeliveryQuery filters deliveries. Zero fields do not filter. Results are
// ordered by (UpdatedAt, GroupID, Number).
type DeliveryQuery struct {
	GroupID    string
	Number     string
	Status     crewcast.Status
	ErrorClass crewcast.ErrorClass
	// ErrorCodes, when set, keeps rows whose error code is one of them;
	// NotErrorCodes drops rows whose code is one of them.
	ErrorCodes    []string
	NotErrorCodes []string
	Since         time.Time // UpdatedAt >= Since
	Until         time.Time // UpdatedAt < Until
	Cursor        string
	Limit         int // default 100, max 10000
}

// ReplyQuery filters ListReplies. Results are newest first.
type ReplyQuery struct {
	GroupID   string
	Number    string
	Unmatched bool // only replies that matched no group
	Ambiguous bool // only ambiguous replies (bare answers to several open groups)
	Cursor    string
	Limit     int
}

// Summary aggregates deliveries matching a DeliveryQuery (Cursor and Limit
// ignored).
type Summary struct {
	Total        int
	ByStatus     map[crewcast.Status]int
	Replied      int
	Acknowledged int
	// DeliveryRate is delivered / (total - opted_out - canceled), 0 when
	// the denominator is 0.
	DeliveryRate float64
	// Time from SentAt to DeliveredAt over delivered rows.
	MedianToDelivered time.Duration
	P95ToDelivered    time.Duration
	TopErrorCodes     []CodeCount // most frequent first, at most 10
	// ErrorCodes counts every (code, class) pair of the rows with an
	// error, ordered by code then class.
	ErrorCodes []CodeCount
}

// CodeCount is one error code and how many deliveries carry it.
type CodeCount struct {
	Code  string
	Class crewcast.ErrorClass
	Count int
}

// Projections are the report read models; written only through Effects.
type Projections interface {
	GetGroup(ctx context.Context, id string) (GroupRow, error)
	// GroupSnapshot returns the group's row and all its deliveries (by
	// number) from one consistent read, so that the row's status and
	// counts agree with the deliveries; actor.ErrNotFound when missing.
	GroupSnapshot(ctx context.Context, id string) (GroupRow, []DeliveryRow, error)
	ListGroups(ctx context.Context, q GroupQuery) (rows []GroupRow, next string, err error)
	ListDeliveries(ctx context.Context, q DeliveryQuery) (rows []DeliveryRow, next string, err error)
	Summarize(ctx context.Context, q DeliveryQuery) (Summary, error)
	// CountByStatus counts every delivery by status with one aggregate
	// and no per-row reads: Summarize's ByStatus without its delivery
	// times and error codes, cheap enough for a metrics scrape.
	CountByStatus(ctx context.Context) (map[crewcast.Status]int, error)
	ListReplies(ctx context.Context, q ReplyQuery) (rows []Reply, next string, err error)
	// LoadAllEvents returns up to limit journal events of every key
	// committed after position pos, in position order, for the all-groups
	// live stream. Positions are engine-assigned; an engine whose
	// positions can become visible out of order (PostgreSQL with several
	// nodes) must never return an event beyond a position that may still
	// commit, so a reader resuming after the last position it saw misses
	// nothing.
	LoadAllEvents(ctx context.Context, afterPos int64, limit int) ([]PositionedEvent, error)
}

// PositionedEvent is a journal event with its key and global position.
type PositionedEvent struct {
	Pos int64
	Key string
	actor.Event
}

// ---- Suppressions ----

// Suppression keeps crewcast from sending to a number.
type Suppression struct {
	Number    string
	Reason    string // "stop", "provider_opt_out", "manual"
	CreatedAt time.Time
}

// Suppression reasons: who put a number on the list.
const (
	ReasonManual         = "manual"           // an operator (API, import)
	ReasonStop           = "stop"             // the person texted STOP
	ReasonProviderOptOut = "provider_opt_out" // the provider reported an opt-out
)

// LiftedByStart reports whether an inbound START may lift a suppression of
// this reason: only what the person's own STOP or a provider opt-out
// created. An operator's suppression stays until an operator removes it.
func LiftedByStart(reason string) bool {
	return reason == ReasonStop || reason == ReasonProviderOptOut
}

// Suppressions is the do-not-send list.
type Suppressions interface {
	// Suppressed returns the suppressions among numbers, keyed by number.
	Suppressed(ctx context.Context, numbers []string) (map[string]Suppression, error)
	// AddSuppression creates or replaces a suppression, except that a
	// START-liftable reason never replaces one that is not (a STOP on top
	// of a manual suppression leaves it manual). It is serialized with
	// claims (see Effects.Claim). The audit entries that record it commit
	// in the same transaction: both or neither.
	AddSuppression(ctx context.Context, s Suppression, audit ...AuditEntry) error
	// RemoveSuppression deletes a suppression of any reason (an operator's
	// decision), with its audit entries in the same transaction.
	RemoveSuppression(ctx context.Context, number string, audit ...AuditEntry) error
	ListSuppressions(ctx context.Context, cursor string, limit int) (rows []Suppression, next string, err error)
}

// ---- API keys ----

// APIKey is a stored API key. The secret is never stored: Hash is its
// SHA-256, Prefix a non-secret lookup handle.
type APIKey struct {
	ID         string
	Name       string
	Prefix     string // unique
	Hash       []byte
	Scopes     []string
	CreatedAt  time.Time
	LastUsedAt time.Time
	RevokedAt  time.Time
	// CreatedBy is the user the key belongs to: the signed-in user who
	// made it, or the owner of the key it was made with; "" for none (the
	// bootstrap key, keys made with it or with `crewcast keys create
	// --db`). DeleteUser revokes the owner's keys.
	CreatedBy string
	// ExpiresAt is when the key stops working; zero for never.
	ExpiresAt time.Time
	// Suspended is read, not stored: CreatedBy names a user who is
	// disabled (or no user at all). Such a key is refused until the user
	// is enabled again. CreateKey ignores it.
	Suspended bool
}

// Keys stores API keys. CreateKey and RevokeKey commit the audit entries
// that record them in the same transaction as the change: both or neither.
type Keys interface {
	CreateKey(ctx context.Context, k APIKey, audit ...AuditEntry) error
	// KeyByPrefix returns actor.ErrNotFound when no key has prefix.
	KeyByPrefix(ctx context.Context, prefix string) (APIKey, error)
	ListKeys(ctx context.Context) ([]APIKey, error)
	TouchKey(ctx context.Context, id string, at time.Time) error
	// RevokeKey returns actor.ErrNotFound for an unknown id.
	RevokeKey(ctx context.Context, id string, at time.Time, audit ...AuditEntry) error
}

// ---- Idempotency ----

// IdempotencyKey remembers a group creation request by its client key.
// Key is opaque to the store; the tracker stores the caller's API key id
// with the client's key, so keys are scoped to the API key.
type IdempotencyKey struct {
	Key         string
	RequestHash string
	GroupID     string
	CreatedAt   time.Time
}

// Idempotency reads group-creation idempotency keys (written via Effects).
type Idempotency interface {
	// GetIdempotency returns actor.ErrNotFound for an unknown key.
	GetIdempotency(ctx context.Context, key string) (IdempotencyKey, error)
}

// ---- Leases ----

// Lease is one shard's ownership record.
type Lease struct {
	Shard int
	Owner string
	Epoch uint64
	// ExpiresAt is when the lease lapses on the database's clock; zero
	// for a lease held without expiry (one node alone).
	ExpiresAt time.Time
}

// ExpiringLeases are the leases of several nodes on one database (design
// §9): each expires unless renewed, and every expiry is judged by the
// database's clock, never a node's. A commit checks, inside its
// transaction and serialised against these calls, that the lease of its
// key's shard is still at the epoch this store instance holds and has not
// expired; anything else fails the unit with actor.ErrFenced.
type ExpiringLeases interface {
	// AcquireShards takes, for owner, each of shards that nobody holds,
	// whose lease has expired, or that is held without expiry, at the next
	// epoch and until ttl from now; it returns the leases it took, which
	// this store instance holds from then on. A shard whose lease is live
	// (even owner's own) is left alone.
	AcquireShards(ctx context.Context, owner string, shards []int, ttl time.Duration) ([]Lease, error)
	// RenewShards extends, to ttl from now, every lease this instance holds
	// for owner that has not expired, and returns them. A lease that
	// expired or was taken is no longer held: commits on its shard fail
	// from then on.
	RenewShards(ctx context.Context, owner string, ttl time.Duration) ([]Lease, error)
	// ReleaseShards gives up the listed leases this instance holds (it
	// stops holding them first, then sets their expiry to now, so another
	// node may take them at once).
	ReleaseShards(ctx context.Context, owner string, shards []int) error
	// DropShards stops holding the listed shards in this instance only,
	// writing nothing (self-fencing when the database cannot be reached):
	// commits on them fail from then on and the leases expire on their own.
	DropShards(shards []int)
	// KeeperLeases is ListLeases for the lease keeper, which reads them to
	// choose what to acquire: on the lease writes' own connections where
	// the engine has them, so that it does not wait behind commits.
	KeeperLeases(ctx context.Context) ([]Lease, error)
}

// Leases are shard ownership records with an epoch (fencing token). A
// store instance opened with owner O takes every shard nobody holds at epoch
// 1 (a single node holds epoch 1 for every shard) and fences its writes
// with the epochs it holds.
type Leases interface {
	// TakeShard makes owner the holder of shard with epoch+1 and returns the
	// new epoch; the previous holder's writes to that shard are fenced from
	// then on. The calling store instance holds the new epoch.
	TakeShard(ctx context.Context, shard int, owner string) (uint64, error)
	ListLeases(ctx context.Context) ([]Lease, error)
}

// Node is one member of a cluster (docs/design.md §9).
type Node struct {
	ID           string
	AdvertiseURL string
	// Alive: its last heartbeat is younger than the TTL given, on the
	// database clock.
	Alive bool
}

// Membership is the nodes table of several nodes on one database.
type Membership interface {
	// Heartbeat records that node id (reachable at advertiseURL) is alive
	// now on the database clock, and returns every node by id, alive when
	// its last heartbeat is younger than ttl.
	Heartbeat(ctx context.Context, id, advertiseURL string, ttl time.Duration) ([]Node, error)
	// Leave removes node id (a graceful exit).
	Leave(ctx context.Context, id string) error
}

// Notifier wakes other nodes (PostgreSQL LISTEN/NOTIFY). A notification
// is only a wake-up: it may be lost, so whatever it announces must also be
// found by a periodic sweep.
type Notifier interface {
	// Notify sends each payload, in order, to every listener of channel,
	// all in one transaction: the listeners are woken once for all.
	Notify(ctx context.Context, channel string, payloads ...string) error
	// Listen calls fn with each payload sent on any of channels (and the
	// channel it came on) until ctx ends (nil) or the connection fails (the
	// error; listen again). All channels share one session: PostgreSQL
	// wakes every listening session of the database for every NOTIFY,
	// whatever its channels, so each session costs every sender.
	Listen(ctx context.Context, channels []string, fn func(channel, payload string)) error
}

// JournalStamp is who committed one journal event: its lease epoch and
// node (docs/design.md §9). Events written before the stamps existed carry 0 and "".
type JournalStamp struct {
	Seq   uint64
	Type  string
	Epoch uint64
	Node  string
	At    time.Time
}

// JournalAudit reads the stamps of a key's journal, for the audit that no
// stale owner ever wrote (GET /debug/groups/{id}/journal).
type JournalAudit interface {
	// JournalStamps returns the stamps of key's events in seq order.
	JournalStamps(ctx context.Context, key string) ([]JournalStamp, error)
}

// ---- Retention ----

// RetentionStage is one step of the retention policy (docs/design.md §6).
type RetentionStage string

// Retention stages.
const (
	StageRedact RetentionStage = "redact" // message and reply bodies removed
	StageHash   RetentionStage = "hash"   // phone numbers replaced by a keyed hash
)

// Rewriter transforms a group's stored data for a retention stage.
type Rewriter struct {
	// Event rewrites one journal event's data (nil: leave events alone).
	Event func(typ string, data []byte) ([]byte, error)
	// Number maps a phone number to what is kept (nil: keep numbers).
	Number func(string) string
	// RedactText empties message text, reply text and reply media.
	RedactText bool
}

// Retention deletes and rewrites old groups. Every method is idempotent.
type Retention interface {
	// RetentionCandidates returns up to limit ids of groups created before t
	// that have not had stage applied (stage "" = every group created
	// before t, for deletion).
	RetentionCandidates(ctx context.Context, stage RetentionStage, before time.Time, limit int) ([]string, error)
	// RewriteGroup applies rw to the group's journal, group row, delivery
	// rows and replies in one transaction, deletes its snapshot, and marks
	// stage as applied. A missing group is not an error.
	RewriteGroup(ctx context.Context, id string, stage RetentionStage, rw Rewriter) error
	// DeleteGroup removes the group, its journal, snapshot, reminders,
	// deliveries, replies and routes pointing to it. Missing is not an error.
	DeleteGroup(ctx context.Context, id string) error
	// TrimJournal deletes key's journal events with Seq < beforeSeq that
	// were recorded before t, and returns how many. Callers keep a
	// snapshot at beforeSeq or later: the events it covers are no longer
	// needed to recover, and the head event is never deleted.
	TrimJournal(ctx context.Context, key string, beforeSeq uint64, before time.Time) (int, error)
	// DeleteUnmatchedReplies deletes the unmatched replies received before
	// t (a group's replies go with the group); returns how many.
	DeleteUnmatchedReplies(ctx context.Context, before time.Time) (int, error)
	// RedactUnmatchedReplies empties text of unmatched replies received
	// before t and maps their numbers with number (if non-nil); returns how
	// many rows changed.
	RedactUnmatchedReplies(ctx context.Context, before time.Time, number func(string) string) (int, error)
}

// ---- Server keys ----

// HashKeyName is the server key that keys the number hash when
// CREWCAST_HASH_KEY is not configured (generated on first start).
const HashKeyName = "hash_key"

// ServerKeys keeps secrets the server generates for itself, in the
// database: they are in every backup and shared by every node.
type ServerKeys interface {
	// EnsureServerKey stores value under name unless a key is stored
	// there already, and returns the stored key: servers starting at once
	// all end with the key the first insert stored (insert if absent,
	// then read).
	EnsureServerKey(ctx context.Context, name string, value []byte) ([]byte, error)
	// ServerKey returns the key stored under name; actor.ErrNotFound when
	// there is none.
	ServerKey(ctx context.Context, name string) ([]byte, error)
}

// EmailOptOuts keeps the addresses that opted out of email (an email's
// List-Unsubscribe, docs/design.md §17), as keyed hashes: never the
// address itself.
type EmailOptOuts interface {
	// OptOutEmail records addressHash as opted out (idempotent).
	OptOutEmail(ctx context.Context, addressHash string) error
	// EmailOptedOut reports whether addressHash is opted out.
	EmailOptedOut(ctx context.Context, addressHash string) (bool, error)
}

// ---- Outbound webhooks (docs/design.md §13) ----

// OutboxRow is one outbound webhook event. Rows that report a state change
// are written as Effects.Outbox in the commit that makes the change, so a
// committed change always has its event; the delivery worker fans them out
// to the subscribed endpoints.
type OutboxRow struct {
	// ID is the engine-assigned position (0 when writing).
	ID int64
	// MsgID is the webhook-id header: stable across retries, unique.
	MsgID   string
	Type    string
	GroupID string
	Seq     uint64
	// Endpoint, when set, addresses the row to that endpoint only (test
	// events); otherwise every enabled endpoint subscribed to Type gets it.
	Endpoint  string
	Payload   []byte // the request body, {"type","timestamp","data"}
	CreatedAt time.Time
}

// Signing schemes of a webhook endpoint.
const (
	SigningHMAC    = "hmac"
	SigningEd25519 = "ed25519"
)

// WebhookEndpoint is a customer's URL that receives outbound webhooks.
// Secrets are opaque to the store: webhookout seals them before they are
// stored.
type WebhookEndpoint struct {
	ID          string
	URL         string
	Description string
	Events      []string // event types, or ["*"]
	Signing     string   // SigningHMAC or SigningEd25519
	Secret      []byte   // sealed signing secret (whsec_ or whsk_)
	// PrevSecret keeps signing next to Secret until PrevUntil, so that a
	// receiver can switch keys without a gap (rotation).
	PrevSecret     []byte
	PrevUntil      time.Time
	DisabledAt     time.Time // zero while enabled
	DisabledReason string
	// FailingSince is the first failed attempt since the last success.
	FailingSince time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Wants reports whether the endpoint subscribes to event type typ.
func (e *WebhookEndpoint) Wants(typ string) bool {
	for _, t := range e.Events {
		if t == "*" || t == typ {
			return true
		}
	}
	return false
}

// WebhookDelivery is one outbox row due to one endpoint.
type WebhookDelivery struct {
	EndpointID string
	Attempts   int // attempts made before this one
	Row        OutboxRow
}

// WebhookClaim says which deliveries ClaimWebhookDeliveries takes.
type WebhookClaim struct {
	Now   time.Time
	Lease time.Duration
	// Room says how many deliveries to take at most per endpoint (the
	// worker's free lane space); nil takes up to Limit for every enabled
	// endpoint. Each endpoint is claimed for on its own, so a backlog of
	// one never hides another's due deliveries.
	Room  map[string]int
	Limit int
	// Owner names the claiming worker (a node), for ReleaseWebhookClaims.
	Owner string
}

// Results of a delivery attempt.
const (
	AttemptOK       = "ok"       // 2xx
	AttemptHTTP     = "http"     // answered with another status
	AttemptNetwork  = "network"  // no answer: refused, reset, timeout
	AttemptRefused  = "refused"  // crewcast refused the destination (SSRF rules)
	AttemptInternal = "internal" // crewcast could not sign (secret unreadable)
)

// WebhookAttempt is one entry of an endpoint's attempts log.
type WebhookAttempt struct {
	ID         int64
	EndpointID string
	OutboxID   int64
	MsgID      string
	Type       string
	At         time.Time
	StatusCode int // 0 when there was no HTTP answer
	Result     string
	Latency    time.Duration
	Response   string // the first bytes of the answer
	Error      string
}

// WebhookOutcome is what RecordWebhookAttempt writes in one transaction.
type WebhookOutcome struct {
	Attempt WebhookAttempt
	// Delivered marks the delivery done (a 2xx) and clears the endpoint's
	// FailingSince.
	Delivered bool
	// NextAt, when not delivered, is the next attempt; zero gives up.
	NextAt time.Time
	// Disable, when set, disables the endpoint with this reason, and
	// Disabled (the endpoint.disabled event) is appended to the outbox in
	// the same transaction.
	Disable  string
	Disabled *OutboxRow
}

// Webhooks keeps webhook endpoints, the outbox and its delivery queue.
type Webhooks interface {
	// The writes below that take audit entries append them in the same
	// transaction as the change they record (docs/design.md §14): both or
	// neither. An entry never carries the endpoint's secret.
	CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint, audit ...AuditEntry) error
	// GetWebhookEndpoint returns actor.ErrNotFound for an unknown id.
	GetWebhookEndpoint(ctx context.Context, id string) (WebhookEndpoint, error)
	// ListWebhookEndpoints returns every endpoint, oldest first.
	ListWebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error)
	// UpdateWebhookEndpoint replaces the endpoint with e.ID (actor.ErrNotFound
	// if there is none).
	UpdateWebhookEndpoint(ctx context.Context, e WebhookEndpoint, audit ...AuditEntry) error
	// DeleteWebhookEndpoint removes the endpoint and its queue and attempts
	// (actor.ErrNotFound if there is none).
	DeleteWebhookEndpoint(ctx context.Context, id string, audit ...AuditEntry) error
	// AppendOutbox writes rows outside any commit (test events).
	AppendOutbox(ctx context.Context, rows []OutboxRow, audit ...AuditEntry) error
	// DispatchOutbox queues up to limit undispatched outbox rows, oldest
	// first, for every enabled endpoint that wants them (due at now) and
	// marks them dispatched, in one transaction; returns how many rows.
	DispatchOutbox(ctx context.Context, now time.Time, limit int) (int, error)
	// ClaimWebhookDeliveries returns pending deliveries due at c.Now (see
	// WebhookClaim), earliest first, and moves their next attempt to
	// c.Now+c.Lease so that no other worker takes them while this one
	// tries (after a crash they come back when the lease ends, or at once
	// when the same owner starts again: ReleaseWebhookClaims).
	ClaimWebhookDeliveries(ctx context.Context, c WebhookClaim) ([]WebhookDelivery, error)
	// ReleaseWebhookClaims makes the pending deliveries owner holds under
	// a lease due at now (a worker starting again after a crash); returns
	// how many.
	ReleaseWebhookClaims(ctx context.Context, owner string, now time.Time) (int, error)
	// RecordWebhookAttempt writes an attempt and its consequences; disabled
	// is true when this call disabled the endpoint (it was enabled).
	RecordWebhookAttempt(ctx context.Context, o WebhookOutcome) (disabled bool, err error)
	// RecordWebhookAttempts records several outcomes in one transaction,
	// in order; disabled[i] is RecordWebhookAttempt's answer for os[i].
	RecordWebhookAttempts(ctx context.Context, os []WebhookOutcome) (disabled []bool, err error)
	// ListWebhookAttempts returns an endpoint's latest attempts, newest first.
	ListWebhookAttempts(ctx context.Context, endpointID string, limit int) ([]WebhookAttempt, error)
	// RecoverWebhookDeliveries queues again, due at now, every outbox row
	// created at or after since that the endpoint wants and has not
	// received; returns how many.
	RecoverWebhookDeliveries(ctx context.Context, endpointID string, since, now time.Time, audit ...AuditEntry) (int, error)
	// WebhookQueue returns how many deliveries are pending plus how many
	// outbox rows are undispatched, and the creation time of the oldest
	// of them (zero when none).
	WebhookQueue(ctx context.Context) (pending int, oldest time.Time, err error)
	// PurgeWebhooks deletes attempts made before t, and outbox rows created
	// before t together with their deliveries once none of those is
	// pending; rows created before dropPending go with their deliveries
	// even if pending (retention: their payloads hold numbers and texts).
	// Returns how many rows it deleted.
	PurgeWebhooks(ctx context.Context, before, dropPending time.Time) (int, error)
}

// Failover is a change of PostgreSQL primary that a store found
// (docs/design.md §19): the system identifier or timeline it writes to is
// not the one last recorded in the database. With asynchronous
// replication the old primary's last transactions may be gone; groups
// created before DetectedAt reconcile their unsent recipients against the
// provider before they send again.
type Failover struct {
	ID         string    // the new primary's identity ("system/timeline")
	Before     string    // the identity recorded before
	DetectedAt time.Time // when the first node wrote to the new primary
	// LastCommit is the time of the newest journal event the new primary
	// had when the failover was found: what the old primary committed
	// after it, up to DetectedAt, is the window that may be lost.
	LastCommit time.Time
}

// FailoverLog is implemented by engines that can fail over (PostgreSQL).
type FailoverLog interface {
	// LastFailover returns the latest failover recorded in the database,
	// as known when this store's newest connection was made: every
	// connection to a new primary records the failover before it is used.
	LastFailover() (Failover, bool)
}
