// Package storetest is the conformance suite every store.Store engine
// passes: one body of tests, run by each engine's own tests against a real
// database (store/sqlite always, store/postgres when CREWCAST_TEST_POSTGRES
// is set). It also holds the crash test harness (Crash) that kills a child
// process committing units and checks that nothing acknowledged was lost and
// nothing was half written.
package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// Config is what the suite asks of an engine when it opens a store.
type Config struct {
	// Owner is the shard lease owner name ("" = the engine default).
	Owner string
	// Leased opens the store taking no shard: it takes expiring leases
	// through store.ExpiringLeases (several nodes).
	Leased bool
	// Now is the store's clock.
	Now func() time.Time
}

// DB is one empty database, made for one subtest.
type DB struct {
	// Open opens a store instance on this database; the engine closes it
	// at the end of the test. Several instances may be open at once.
	Open func(t *testing.T, c Config) store.Store
	// Corrupt changes the stored state bytes of key's snapshot directly in
	// the table, leaving its checksum as it was.
	Corrupt func(t *testing.T, key string)
	// TamperAudit tries to change every audit log row directly in the
	// table and returns the database's answer (the log is append-only,
	// so it must be an error).
	TamperAudit func(t *testing.T) error
	// FailAudit makes the database refuse, from now on, every audit log
	// insert whose action is action (a trigger), so that the suite can
	// show a change and its audit entry commit together or not at all.
	FailAudit func(t *testing.T, action string)
	// InboxPayload reads an inbox row's payload directly from the table
	// (the API never returns processed entries).
	InboxPayload func(t *testing.T, provider, eventID string) []byte
}

// Options plugs an engine into the suite.
type Options struct {
	// NewDB creates an empty database for one subtest and removes it when
	// the test ends.
	NewDB func(t *testing.T) DB
}

// Clock is a settable clock for stores under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// t0 is the suite's epoch; it carries nanoseconds so that every engine is
// shown to keep instants exactly.
var t0 = time.Date(2025, 3, 14, 9, 26, 53, 589793238, time.UTC)

// Run runs the whole conformance suite against an engine.
func Run(t *testing.T, o Options) {
	tests := []struct {
		name string
		fn   func(t *testing.T, o Options)
	}{
		{"Migrations", testMigrations},
		{"InboxConcurrentInsert", testInboxConcurrentInsert},
		{"InboxBatchMixed", testInboxBatchMixed},
		{"InboxPendingAckPurge", testInboxPendingAckPurge},
		{"ReplayRecord", testReplayRecord},
		{"ServerKeys", testServerKeys},
		{"AppendAndConflict", testAppendAndConflict},
		{"CommitBatch", testCommitBatch},
		{"CommitChainedSameKey", testCommitChainedSameKey},
		{"CommitUnknownEffect", testCommitUnknownEffect},
		{"CommitIdempotency", testCommitIdempotency},
		{"CommitSharedRowsInOrder", testCommitSharedRowsInOrder},
		{"Fencing", testFencing},
		{"Leases", testLeases},
		{"LeaseExpiryTakeover", testLeaseExpiryTakeover},
		{"LeaseRenewal", testLeaseRenewal},
		{"LeaseAcquireMixed", testLeaseAcquireMixed},
		{"LeaseCommitVersusTakeover", testLeaseCommitVersusTakeover},
		{"JournalStamps", testJournalStamps},
		{"JournalStampsVersusRelease", testJournalStampsVersusRelease},
		{"Membership", testMembership},
		{"Reminders", testReminders},
		{"Routes", testRoutes},
		{"Groups", testGroups},
		{"GroupSearch", testGroupSearch},
		{"GroupSnapshot", testGroupSnapshot},
		{"Deliveries", testDeliveries},
		{"DeliveriesMany", testDeliveriesMany},
		{"Replies", testReplies},
		{"Summarize", testSummarize},
		{"Snapshots", testSnapshots},
		{"Suppressions", testSuppressions},
		{"SuppressionSources", testSuppressionSources},
		{"ClaimRefusesSuppressed", testClaimRefusesSuppressed},
		{"APIKeys", testAPIKeys},
		{"KeyOwner", testKeyOwner},
		{"LoadAllEvents", testLoadAllEvents},
		{"Retention", testRetention},
		{"RetentionDropsOutbox", testRetentionDropsOutbox},
		{"RedactUnmatchedReplies", testRedactUnmatched},
		{"Erasure", testErasure},
		{"ErasureWebhookAttempts", testErasureWebhookAttempts},
		{"TrimJournal", testTrimJournal},
		{"DeleteUnmatchedReplies", testDeleteUnmatchedReplies},
		{"InvalidCursor", testInvalidCursor},
		{"Users", testUsers},
		{"Sessions", testSessions},
		{"Senders", testSenders},
		{"SendersAuditWithChange", testSendersAuditWithChange},
		{"SentSince", testSentSince},
		{"Audit", testAudit},
		{"AuditAppendOnly", testAuditAppendOnly},
		{"AuditWithChange", testAuditWithChange},
		{"DirectoryAuditWithChange", testDirectoryAuditWithChange},
		{"ErasureAuditWithChange", testErasureAuditWithChange},
		{"RetentionAuditWithChange", testRetentionAuditWithChange},
		{"WebhookAuditWithChange", testWebhookAuditWithChange},
		{"CrewNewContactsWithCrew", testCrewNewContactsWithCrew},
		{"WebhookEndpoints", testWebhookEndpoints},
		{"WebhookOutbox", testWebhookOutbox},
		{"WebhookClaimsConcurrent", testWebhookClaimsConcurrent},
		{"Contacts", testContacts},
		{"ImportContacts", testImportContacts},
		{"ContactEmail", testContactEmail},
		{"Consent", testConsent},
		{"LargeCrewContacts", testLargeCrewContacts},
		{"Templates", testTemplates},
		{"TemplateFollowup", testTemplateFollowup},
		{"EmailOptOuts", testEmailOptOuts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, o)
		})
	}
}

// open makes a fresh database and opens one store on it with a clock.
func open(t *testing.T, o Options) (store.Store, *Clock, DB) {
	t.Helper()
	db := o.NewDB(t)
	c := NewClock(t0)
	return db.Open(t, Config{Now: c.Now}), c, db
}
