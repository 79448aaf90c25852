package tracker

import (
	"context"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// groupEnv is what a group actor uses beyond its own state: the tracker's
// parts it talks to, each through the narrow interface it needs. Every part
// synchronises itself, and groupEnv is read-only once built; the actor's
// own state (groupActor's fields) is touched only on the actor's goroutine,
// so nothing a group actor does takes a lock shared with the tracker.
type groupEnv struct {
	cfg groupConfig
	// st is the group's own persistence (journal, snapshots, reminders,
	// projections) and the reads its decisions need; commits go through
	// committer (a group commit shared by every actor).
	st        store.Store
	committer *actor.Committer

	work      groupWorkQueue    // results, lookups, webhooks, in-flight sends (*workQueue)
	sends     sendQueue         // provider calls (*pool)
	pacer     sendPacer         // per-number send rate (*pacer)
	room      backlogRoom       // wait for room in the send backlog (*sendRoom)
	hub       changePublisher   // committed changes (*Hub)
	gate      suppressionWriter // orders commits against provider calls (*suppressionGate)
	stops     followupMarks     // answered follow-ups in flight (*followupStops)
	checks    suppressionChecks // the suppression list (*Tracker, erasure.go)
	owner     shardOwnership    // cluster ownership (*Tracker, cluster.go)
	routing   routeNotes        // what a commit tells routing (*Tracker, route.go)
	reminders reminderWaker     // the durable reminders' poller (*actor.Kind)
	closing   func() bool       // the tracker is stopping: claim nothing more
	codes     *codeLocks        // reply-code assignment per conversation (replycodes.go)
	pools     poolView          // pools, providers and circuits (*Tracker, pools.go)
	failover  failoverSource    // database failovers and the provider's record (reconcile.go)
}

// groupConfig is the part of Config a group actor reads.
type groupConfig struct {
	// Mailer sends ladders' email steps (ladder.go); nil: none.
	Mailer Mailer
	// Caller places ladders' voice calls (voice.go); nil: none.
	Caller          Caller
	Clock           actor.Clock
	Metrics         Metrics
	Provider        string // the provider's name, in route keys and metrics
	Webhooks        Outbox // nil: no outbound webhooks
	ConversationTTL time.Duration
	ReplyCodeWindow time.Duration
	MaxBacklog      int
	ClaimBatch      int
	SnapshotEvery   int
	CommitTimeout   time.Duration
	OptOutReply     string // see Config.OptOutReply
	HelpReply       string
	CalloutSettle   time.Duration // see Config.CalloutSettle
}

// groupWorkQueue is the actor's side of its work queue (workqueue.go).
type groupWorkQueue interface {
	take(id string) ([]sendResult, []lookupResult, []routed)
	requeue(id string, results []sendResult, lookups []lookupResult, entries []routed)
	done(id string, results []sendResult, entries []routed)
	unroute(entries []routed)
	forget(id string, taken []routed)
	addInflight(id string, sendIDs []string)
	dropInflight(id string, sendIDs []string)
	inFlight(id string) func(sendID string) bool
	busy(id string) bool
	unsignal(id string)
	resume(id string) bool
	hasQueued(id string) bool
}

// sendQueue runs provider calls outside the actor (sender.go).
type sendQueue interface {
	backlog() int
	submit(jobs []sendJob)
	lookup(j lookupJob)
}

// sendPacer grants sends per sender number (sender.go).
type sendPacer interface {
	take(from string, want int, now time.Time) (granted int, wait time.Duration)
	ready(from string, now time.Time) time.Duration
}

// backlogRoom kicks a group once the send backlog drained (room.go).
type backlogRoom interface{ wait(id string) }

// changePublisher carries committed changes to subscribers (hub.go).
type changePublisher interface{ Publish(Change) }

// suppressionWriter holds numbers' gate stripes while a commit that
// suppresses them (or answers their follow-up) is made (suppress.go).
type suppressionWriter interface {
	write(numbers []string) (release func())
}

// followupMarks marks claimed follow-ups whose recipient answered before
// the provider call (followups.go).
type followupMarks interface {
	mark(key string)
	clear(key string)
}

// suppressionChecks reads the suppression list as a claim needs it
// (erasure.go).
type suppressionChecks interface {
	suppressed(ctx context.Context, numbers []string, recent bool) (map[string]store.Suppression, error)
	hashes(number string) []string
}

// shardOwnership says whether this node may commit and claim for a key
// (cluster.go).
type shardOwnership interface {
	ownsKey(key string) bool
	draining(key string) bool
}

// routeNotes is what routing hears from a group actor (route.go): message
// ids a commit just routed to the group (cached at once; their parked
// webhooks adopted at the end of the turn, once the turn's routing marks
// are cleared), and that a recipient became unconfirmed (a parked webhook
// may prove its send went out).
type routeNotes interface {
	routed(groupID string, messageIDs []string)
	adoptParked(messageIDs []string)
	sweepSoon()
}

// reminderWaker wakes the reminder poller for a reminder due before its
// next poll.
type reminderWaker interface{ WakeRemindersAt(time.Time) }

func (t *Tracker) newGroupEnv() *groupEnv {
	return &groupEnv{
		cfg: groupConfig{Clock: t.cfg.Clock, Metrics: t.cfg.Metrics, Provider: t.cfg.Provider.Name(),
			Webhooks: t.cfg.Webhooks, ConversationTTL: t.cfg.ConversationTTL, MaxBacklog: t.cfg.MaxBacklog,
			ClaimBatch: t.cfg.ClaimBatch, SnapshotEvery: t.cfg.SnapshotEvery, CommitTimeout: t.cfg.CommitTimeout,
			OptOutReply: t.cfg.OptOutReply, HelpReply: t.cfg.HelpReply, Mailer: t.cfg.Mailer, Caller: t.cfg.Caller,
			CalloutSettle: max(t.cfg.CalloutSettle, 0), ReplyCodeWindow: t.cfg.ReplyCodeWindow},
		st: t.st, committer: t.committer,
		work: t.work, sends: t.pool, pacer: t.pacer, room: t.room, hub: t.hub,
		gate: &t.gate, stops: &t.fstop, checks: t, owner: t, routing: trackerRoutes{t},
		closing: t.closing.Load, codes: &t.codeLocks, pools: t, failover: t.failoverSource(),
	}
}

// ownsKey reports whether this node may commit for key (cluster.go).
func (e *groupEnv) ownsKey(key string) bool { return e.owner.ownsKey(key) }

// writeCtx bounds one store write made outside the Committer (a snapshot,
// an acknowledgement, a reminder deletion) by CommitTimeout, like a commit.
func (e *groupEnv) writeCtx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, e.cfg.CommitTimeout)
}

// trackerRoutes is routeNotes on the tracker's route cache and parked
// webhooks.
type trackerRoutes struct{ t *Tracker }

func (r trackerRoutes) routed(groupID string, keys []string) {
	for _, k := range keys {
		r.t.routes.put(k, groupID)
	}
}

func (r trackerRoutes) adoptParked(messageIDs []string) { r.t.adoptParked(messageIDs) }

func (r trackerRoutes) sweepSoon() { r.t.sweepSoon() }
