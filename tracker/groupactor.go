package tracker

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

// groupMsg is what a group actor receives.
type groupMsg interface{ isGroupMsg() }

type msgCreate struct {
	created group.Created
	idem    *store.IdempotencyKey
	by      string
	reply   actor.Reply[error]
	who     *store.AuditActor // for the audit entry (nil: the system)
}

type msgCommand struct {
	fn    func(*group.Group, time.Time) (group.Event, error)
	reply actor.Reply[error]
	who   *store.AuditActor // for the audit entry (nil: the system)
}

// msgWork says the group's work queue (results, lookups, webhooks) has items.
type msgWork struct{}

// msgKick says: claim and send what is due.
type msgKick struct{}

// msgReminder is a durable reminder that fell due.
type msgReminder struct{ r actor.Reminder }

func (msgCreate) isGroupMsg()   {}
func (msgCommand) isGroupMsg()  {}
func (msgWork) isGroupMsg()     {}
func (msgKick) isGroupMsg()     {}
func (msgReminder) isGroupMsg() {}

// Reminder names: "c:<index>" checks a sent recipient at the provider,
// "r:<index>" wakes the group to retry a recipient after its backoff.
const (
	reminderCheck = "c:"
	reminderRetry = "r:"
)

// errBusy keeps a group in memory while it still has work in flight.
var errBusy = errors.New("group has work in flight")

// groupActor is one group message in memory.
//
// Its fields are touched only on the actor's own goroutine (Activate,
// Receive, Passivate): they need no lock. What it shares with the rest of
// the tracker it reaches through env, whose parts synchronise themselves.
type groupActor struct {
	env *groupEnv
	key string

	// staleSeen holds reminders delivered once that a.rem did not know
	// (staleReminder): one delivered again is rewritten.
	staleSeen map[string]time.Time
	// kickAt is when the latest scheduled kick falls due (kickLater).
	kickAt time.Time

	g *group.Group // nil until created or loaded
	// j is the group's place in its journal (sequence, snapshot cadence);
	// every commit goes through it. Set afresh by each load.
	j        *actor.Journaled
	broken   bool // a commit or load failed: in-memory state is not the store's
	failures int  // consecutive store failures, for the reload backoff
	retired  bool // retention rewrote the store under this instance
	// lastStatus is the group status at the last commit, to take the final
	// snapshot once when the group completes.
	lastStatus crewcast.GroupStatus
	statuses   []crewcast.Status
	rem        map[string]time.Time // reminders as committed
	looking    map[int]bool         // lookups queued

	pending []group.Event
	eff     store.Effects
	sends   []group.Send
	adopt   []string // message-id route keys (msgKey) routed by the commit being built
	adopted []string // message-id route keys routed by committed commits, to adopt

	// pol: follow-up and escalation sends claimed by the commit being
	// built (followups.go).
	pol []sendJob
}

// ---- lifecycle ----

// Activate loads the group from its latest snapshot and later events, then
// marks sends that were in flight when a previous process died as
// unconfirmed. It never fails the activation: a store that cannot be read
// puts the actor in broken mode, which answers "unavailable" and reloads
// with backoff, so queued work is kept rather than dead-lettered.
func (a *groupActor) Activate(c *actor.Context[groupMsg]) error {
	if !a.env.ownsKey(a.key) {
		// Another node holds the group's shard (or none does yet): nothing
		// done here could commit, so the group is not loaded. The stray
		// message that activated it (a scheduled kick, a late wake-up) is
		// answered "unavailable" or dropped by Receive, which then stops
		// the instance. Stopped here, before that message, the instance
		// handed it to the next activation, which stopped too, and so on:
		// a busy loop per lost group (TestNodeWithoutTheShardDoesNotLoadTheGroup).
		a.retired = true
		return nil
	}
	if err := a.load(c); err != nil && !a.retired {
		a.enterBroken(c, err)
	}
	return nil
}

// load (re)builds the in-memory group from the store and resumes its work.
func (a *groupActor) load(c *actor.Context[groupMsg]) error {
	ctx := c.Context()
	a.g, a.j = nil, a.journal(0, 0)
	a.pending, a.eff, a.sends, a.adopt, a.pol = nil, store.Effects{}, nil, nil, nil
	res, err := actor.Recover(ctx, a.env.st, a.env.st, a.key, decodeSnapshot, applyEvent)
	if err != nil {
		return fmt.Errorf("recover group %s: %w", a.key, err)
	}
	if res.SnapshotErr != nil {
		c.Logger().Warn("group snapshot unusable; recovered from the journal", "err", res.SnapshotErr)
	}
	a.j = a.journal(res.Seq, res.SnapshotSeq)
	if res.State.ID == "" {
		return nil // not created (yet): only msgCreate will do anything
	}
	g := res.State
	a.g = &g
	a.g.TakeDirty()
	a.lastStatus = a.g.Status
	a.initTracking()
	now := a.env.cfg.Clock.Now()
	if err := a.reconcileFailover(c, now); err != nil { // before anything is claimed (reconcile.go)
		return err
	}
	if u, ok := a.g.RecoverInFlight(now, a.env.work.inFlight(a.key)); ok {
		a.emit(u)
	}
	a.recoverPolicySends(now)
	if len(a.pending) > 0 {
		if err := a.flush(c); err != nil {
			return err
		}
	}
	if a.g.Status == crewcast.GroupComplete && a.j.SinceSnapshot() > 0 {
		// Completed, but the final snapshot was lost (a crash right after
		// the completing commit): take it now.
		if err := a.snapshot(c); err != nil {
			c.Logger().Warn("final snapshot failed", "err", err)
		}
	}
	a.kickSoon(c)
	if a.env.work.resume(a.key) {
		c.Self().Tell(msgWork{})
	}
	return nil
}

// msgReload asks a broken actor to reload from the store.
type msgReload struct{}

func (msgReload) isGroupMsg() {}

// reloadBackoff is the wait before the n-th reload attempt: 100 ms doubling
// to 10 s, so a store outage is not hammered.
func reloadBackoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(n-1, 7)
	return min(d, 10*time.Second)
}

// enterBroken puts the actor in broken mode after a failed commit or load:
// its in-memory state cannot be trusted, so it refuses work and reloads
// from the store after a backoff.
func (a *groupActor) enterBroken(c *actor.Context[groupMsg], err error) {
	a.broken = true
	a.failures++
	a.pending, a.eff, a.sends, a.adopt, a.pol = nil, store.Effects{}, nil, nil, nil
	if a.failures&(a.failures-1) == 0 { // log the 1st, 2nd, 4th, 8th… failure
		c.Logger().Error("group store failure; reloading with backoff", "err", err, "failures", a.failures)
	}
	// A sequence conflict means another writer moved the journal on: the
	// store is healthy, so reload at once (twice); anything else is an
	// outage to back off from.
	if errors.Is(err, actor.ErrConflict) && a.failures <= 2 {
		c.Self().Tell(msgReload{})
		return
	}
	c.Schedule(reloadBackoff(a.failures), msgReload{})
}

// Passivate refuses while sends, results or webhooks are in flight, and
// otherwise saves a final snapshot before the group leaves memory.
func (a *groupActor) Passivate(c *actor.Context[groupMsg]) error {
	if a.g == nil || a.broken || a.retired {
		return nil
	}
	if !a.env.ownsKey(a.key) {
		// The shard moved: the owner's state is ahead of this copy, and
		// its snapshots are its own to write.
		return nil
	}
	busy := a.busy()
	if busy && a.env.closing() {
		// Shutting down: the send pool is closed, so every claimed send
		// already has its answer queued here. Commit them now.
		for range 3 {
			a.doWork(c)
			if busy = a.busy(); !busy || a.broken || a.retired {
				break
			}
		}
	}
	if busy || (!a.env.closing() && a.g.HasClaimable(a.env.cfg.Clock.Now())) {
		return errBusy
	}
	return a.snapshot(c)
}

// busy reports whether the group has uncommitted work; an idle group's
// work entry is dropped so that hibernated groups cost no memory.
func (a *groupActor) busy() bool { return a.env.work.busy(a.key) }

// journal returns the group's Journaled, positioned at seq with its latest
// snapshot at snapSeq: commits go through the shared Committer, snapshots
// to the store at the cadence of snapshotEvery.
func (a *groupActor) journal(seq, snapSeq uint64) *actor.Journaled {
	return actor.NewJournaled(actor.JournaledConfig{Key: a.key, Committer: a.env.committer, Snapshots: a.env.st,
		Seq: seq, SnapshotSeq: snapSeq, SnapshotInterval: a.snapshotEvery, Clock: a.env.cfg.Clock})
}

// snapshot saves the group as of its last commit, unless a snapshot is
// there already.
func (a *groupActor) snapshot(c *actor.Context[groupMsg]) error {
	if a.j.SinceSnapshot() == 0 {
		return nil
	}
	ctx, cancel := a.env.writeCtx(c.Context())
	defer cancel()
	return a.j.Snapshot(ctx, func() ([]byte, error) { return json.Marshal(a.g) })
}

// snapshotEvery is how many events a group's journal grows between two
// snapshots: Config.SnapshotEvery, or twice the roster in a larger group.
// A snapshot holds every recipient (about 380 bytes each), so a fixed
// cadence made a 10,000-recipient group rewrite ~4 MB every 1,000 events;
// scaling it keeps the snapshot bytes per event bounded, and recovery reads
// at most two events per recipient after the snapshot.
func (a *groupActor) snapshotEvery() uint64 {
	n := uint64(a.env.cfg.SnapshotEvery)
	if a.g != nil {
		n = max(n, 2*uint64(len(a.g.Recipients)))
	}
	return n
}

func decodeSnapshot(b []byte) (group.Group, error) {
	var g group.Group
	if err := json.Unmarshal(b, &g); err != nil {
		return group.Group{}, err
	}
	return g, nil
}

func applyEvent(g *group.Group, e actor.Event) error {
	ev, err := group.Decode(e.Type, e.Data)
	if err != nil {
		return err
	}
	return g.Apply(ev)
}

// initTracking derives the committed reminders and statuses from state:
// every commit writes reminders together with the state they follow from.
func (a *groupActor) initTracking() {
	a.rem = make(map[string]time.Time)
	a.looking = make(map[int]bool)
	a.statuses = make([]crewcast.Status, len(a.g.Recipients))
	for i, r := range a.g.Recipients {
		a.statuses[i] = r.Status
		check, retry := wantedReminders(r)
		if !check.IsZero() {
			a.rem[reminderCheck+strconv.Itoa(i)] = check
		}
		if !retry.IsZero() {
			a.rem[reminderRetry+strconv.Itoa(i)] = retry
		}
	}
	a.initPolicyTracking(a.env.cfg.Clock.Now())
	a.initCalloutTracking(a.env.cfg.Clock.Now())
}

func wantedReminders(r *group.Recipient) (check, retry time.Time) {
	if r.Status == crewcast.StatusSent {
		check = r.NextCheckAt
	}
	if r.Status == crewcast.StatusPending {
		retry = r.RetryAt
	}
	return check, retry
}

// ---- messages ----

// Receive handles one message. A failed commit leaves the in-memory state
// ahead of the store, so the actor stops itself; the next message brings a
// fresh instance that recovers from what is durable.
func (a *groupActor) Receive(c *actor.Context[groupMsg], m groupMsg) {
	if a.retired || a.broken {
		if a.retired {
			// Each message leaves with its answer; the next one activates
			// a fresh instance, which loads the group if this node holds
			// its shard by then.
			defer c.Stop()
		}
		switch m.(type) {
		case msgReload:
			if a.retired {
				return
			}
			a.broken = false
			if err := a.load(c); err != nil && !a.retired {
				a.enterBroken(c, err)
			}
		case msgWork:
			switch {
			case a.retired && !a.env.ownsKey(a.key):
				// Queued while this node held the shard (a send answered
				// just before it moved): it cannot be committed here, as a
				// fenced commit could not; the owner counts such a send
				// unconfirmed. Kept, it would count as a send to drain if
				// the shard ever came back (TestNodeWithoutTheShardDropsWorkQueuedBefore).
				a.env.work.forget(a.key, nil)
			case a.retired:
				// The shard came (back) since this instance activated: the
				// next instance, which loads the group, takes the work.
				a.env.work.unsignal(a.key)
				if a.env.work.resume(a.key) {
					c.Self().Tell(msgWork{})
				}
			default:
				// Broken: the work stays queued; load re-signals it.
				a.env.work.unsignal(a.key)
			}
		default:
			if r, ok := m.(interface{ replyErr(error) }); ok {
				r.replyErr(ErrUnavailable)
			}
		}
		return
	}
	defer a.adoptParked()
	switch m := m.(type) {
	case msgCreate:
		m.reply.Send(a.create(c, m))
	case msgCommand:
		if a.g == nil {
			m.reply.Send(ErrNotFound)
			return
		}
		ev, err := m.fn(a.g, a.env.cfg.Clock.Now())
		if err != nil {
			m.reply.Send(err)
			return
		}
		a.emit(ev)
		a.audit(m.who, ev)
		err = a.flush(c)
		if err == nil {
			// Told before the reply: what the caller does next (a
			// barrier, a read) queues behind the work the command made due.
			a.kickSoon(c)
		}
		m.reply.Send(err)
	case msgWork:
		a.doWork(c)
	case msgKick:
		// Work first: send outcomes and webhooks queued behind kicks
		// (each a claim commit) would wait for every one of them — and a
		// hand-off waits for the outcomes. Its msgWork then finds nothing.
		if a.env.work.hasQueued(a.key) {
			a.doWork(c)
			if a.retired || a.broken {
				return
			}
		}
		a.kick(c)
	case msgReminder:
		a.reminder(c, m.r)
	case msgRetention:
		m.reply.Send(a.retain(c, m))
	case msgErase:
		m.reply.Send(a.erase(c, m))
	}
}

// adoptParked hands parked webhooks of newly routed message ids back to the
// router. It runs at the end of a turn, after doWork cleared the routing
// marks of entries it could not apply, so those are routed again too.
func (a *groupActor) adoptParked() {
	if len(a.adopted) > 0 {
		a.env.routing.adoptParked(a.adopted)
		a.adopted = nil
	}
}

func (m msgCreate) replyErr(err error)  { m.reply.Send(err) }
func (m msgCommand) replyErr(err error) { m.reply.Send(err) }

func (a *groupActor) create(c *actor.Context[groupMsg], m msgCreate) error {
	if a.g != nil {
		return fmt.Errorf("group %s already exists", a.key)
	}
	a.g = &group.Group{}
	a.statuses = make([]crewcast.Status, len(m.created.Recipients))
	a.rem = map[string]time.Time{}
	a.looking = map[int]bool{}
	created := m.created
	created.By = m.by
	a.emit(created)
	a.audit(m.who, created)
	a.eff.Idempotency = m.idem
	if a.g.Mode == crewcast.ModeGroupMMS {
		a.addRoute(threadKey(a.g.From, numbersOf(a.g.Recipients)), 0)
	}
	a.eff.Routes = append(a.eff.Routes, stickyRoutes(created)...) // pools.go
	if err := a.flush(c); err != nil {
		return err
	}
	if a.g.Pool != "" {
		a.env.pools.watchPool(a.key, true)
	}
	a.kickSoon(c)
	return nil
}

func (a *groupActor) kickSoon(c *actor.Context[groupMsg]) {
	now := a.env.cfg.Clock.Now()
	if a.g != nil && (a.g.HasClaimable(now) || policyDue(a.g, now) || calloutDue(a.g, now, a.env.cfg.CalloutSettle) || a.failoverDue()) {
		c.Self().Tell(msgKick{})
	} else if a.g != nil {
		a.settleSoon(c, now) // callout.go
	}
}

// kick claims what is due, within the pacing and the send backlog, and
// commits the claims; flush then queues the provider calls.
func (a *groupActor) kick(c *actor.Context[groupMsg]) {
	e := a.env
	if e.closing() || a.g == nil || e.owner.draining(a.key) { // draining: cluster.go hands the shard off
		return
	}
	if !e.owner.ownsKey(a.key) {
		// Handed off: a claim here could only be fenced.
		a.retired = true
		c.Stop()
		return
	}
	now := e.cfg.Clock.Now()
	if !a.kickCallout(c, now) || a.g == nil || a.broken || a.retired { // callout.go
		return
	}
	if !a.kickPolicy(c, now) || a.g == nil || a.broken || a.retired {
		return
	}
	if a.g.Pool != "" {
		a.kickPool(c, now) // pools.go: failover, then claims paced per number
		return
	}
	if !a.g.HasClaimable(now) {
		return
	}
	room := e.cfg.MaxBacklog - e.sends.backlog()
	if room <= 0 {
		e.room.wait(a.key) // kicked again once the backlog drains
		return
	}
	if wait := e.pacer.ready(a.g.From, now); wait > 0 {
		a.kickLater(c, now, wait) // no token: nothing to read or claim yet
		return
	}
	limit := min(room, e.cfg.ClaimBatch)
	if !a.suppressBeforeClaim(c.Context(), now, limit) {
		c.Schedule(time.Second, msgKick{}) // the suppression list could not be read
		return
	}
	cl, ok := a.g.Claim(now, limit)
	if !ok {
		if len(a.pending) > 0 {
			_ = a.flush(c) // only suppressed recipients: record them
		}
		return
	}
	granted, wait := e.pacer.take(a.g.From, len(cl.Sends), now)
	if granted == 0 {
		if len(a.pending) > 0 {
			_ = a.flush(c) // recipients found suppressed
		}
		a.kickLater(c, now, wait)
		return
	}
	cl.Sends = cl.Sends[:granted]
	release, ok := a.assignCodes(c.Context(), cl, now) // reply codes (replycodes.go)
	if !ok {
		if len(a.pending) > 0 {
			_ = a.flush(c) // recipients found suppressed
		}
		c.Schedule(time.Second, msgKick{}) // the code maps could not be read
		return
	}
	a.emit(cl)
	a.eff.Claim = a.claimedNumbers(cl)
	err := a.flush(c)
	release()
	if err != nil {
		return
	}
	if a.g.HasClaimable(now) {
		if wait > 0 {
			a.kickLater(c, now, wait)
		} else {
			c.Self().Tell(msgKick{})
		}
	}
}

// kickLater schedules a kick after wait, unless one is scheduled for no
// later than that: every turn that finds the pacer empty would otherwise
// add a timer of its own, and the group wake up once per timer.
func (a *groupActor) kickLater(c *actor.Context[groupMsg], now time.Time, wait time.Duration) {
	at := now.Add(wait)
	if a.kickAt.After(now) && !a.kickAt.After(at) {
		return
	}
	a.kickAt = at
	c.Schedule(wait, msgKick{})
}

// doWork applies everything queued for the group in one commit.
func (a *groupActor) doWork(c *actor.Context[groupMsg]) {
	e := a.env
	results, lookups, entries := e.work.take(a.key)
	if len(results)+len(lookups)+len(entries) == 0 {
		return
	}
	if a.g == nil {
		// Work for a group that does not exist (deleted by retention, or a
		// route to a foreign id): acknowledge webhooks so they stop
		// circulating; results cannot happen without a group.
		a.ackOrphaned(c, entries) // Stop may be waiting for this work: unroute tells it
		return
	}
	now := e.cfg.Clock.Now()
	if len(results) > 0 {
		out := group.Outcomes{At: now}
		for _, r := range results {
			if a.policyResult(r, now) {
				continue
			}
			o := a.g.Outcome(r.send, r.res, r.err, r.at)
			prov := e.provName(r.provider)
			if prov != e.cfg.Provider {
				o.Provider = prov // recorded only off the default, as before §16
			}
			out.Outcomes = append(out.Outcomes, o)
			e.cfg.Metrics.SendOutcome(prov, o.Result, o.Class)
			if o.Result == group.ResultAccepted && o.MessageID != "" {
				a.addRoute(msgKey(prov, o.MessageID), 0)
				if o.GroupMessageID != "" && o.GroupMessageID != o.MessageID {
					a.addRoute(msgKey(prov, o.GroupMessageID), 0)
				}
				a.adopt = append(a.adopt, msgKey(prov, o.MessageID))
			}
			if o.OptOut {
				for _, i := range o.Indices {
					a.eff.Suppress = append(a.eff.Suppress, store.Suppression{Number: a.g.Recipients[i].Number, Reason: "provider_opt_out", CreatedAt: now})
				}
			}
		}
		if len(out.Outcomes) > 0 {
			a.emit(out)
		}
	}
	for _, l := range lookups {
		delete(a.looking, l.index)
		if l.index < len(a.g.Recipients) && a.g.Recipients[l.index].Status == crewcast.StatusSent {
			a.emit(a.g.CheckResult(l.index, l.st, l.err, l.at))
		}
	}
	for _, en := range entries {
		if a.applyEntry(en, now) {
			a.eff.InboxDone = append(a.eff.InboxDone, store.InboxRef{Provider: en.ref.Provider, EventID: en.ref.EventID, Target: a.key})
		}
	}
	if err := a.flush(c); err != nil {
		if a.retired || !e.owner.ownsKey(a.key) {
			e.work.forget(a.key, entries) // the shard moved: the new owner recovers it (cluster.go)
			return
		}
		// Put everything back for the next instance; sends stay in flight.
		e.work.requeue(a.key, results, lookups, entries)
		return
	}
	// Recorded: the sends leave the in-flight set, and every entry's
	// routing mark goes (one left parked is routed again later).
	e.work.done(a.key, results, entries)
	a.kickSoon(c)
}

// applyEntry turns one routed webhook into events. It reports whether the
// entry is done (to be acknowledged in this commit); an orphan that matches
// nothing stays parked.
func (a *groupActor) applyEntry(e routed, now time.Time) bool {
	done := true
	for _, ev := range e.events {
		switch ev.Kind {
		case crewcast.KindInbound:
			rep, ok := a.g.Reply(ev, now)
			grp := a.key
			// The group's reading (an answer to its options is never an
			// opt-out), or the text's alone for one that is not its own.
			cl := group.Classification{Keyword: rep.Keyword, PossibleOptOut: rep.PossibleOptOut}
			if !ok {
				grp = "" // not from a recipient of this group: keep it unmatched
				cl = group.ClassifyReply(ev.Text)
			} else {
				a.emit(rep)
				if qm, ok := a.g.QuorumReached(now); ok {
					a.emit(qm) // journaled with the reply that met it
				}
				a.confirm(rep, ev, now)
			}
			a.eff.Replies = append(a.eff.Replies, store.Reply{Provider: ev.Provider, EventID: ev.EventID, GroupID: grp,
				Number: ev.From, To: ev.To, Text: ev.Text, Media: ev.Media, ReceivedAt: now, PossibleOptOut: cl.PossibleOptOut})
			switch cl.Keyword {
			case group.KeywordStop:
				a.eff.Suppress = append(a.eff.Suppress, store.Suppression{Number: ev.From, Reason: "stop", CreatedAt: now})
			case group.KeywordStart:
				a.eff.Unsuppress = append(a.eff.Unsuppress, ev.From)
			}
		case crewcast.KindCallEnded: // how a ladder's call ended (voice.go)
			if ce, ok := a.g.CallEnd(ev, now); ok {
				a.emit(ce)
			}
		default:
			if e.orphan && !a.knownMessage(ev) {
				o, ok := a.g.Reconcile(ev, now)
				if !ok {
					done = false
					continue
				}
				a.emit(o)
				a.addRoute(msgKey(ev.Provider, ev.MessageID), 0)
				a.adopt = append(a.adopt, msgKey(ev.Provider, ev.MessageID))
				continue
			}
			if o, ok := a.g.Observe(ev, now); ok {
				a.emit(o)
			}
		}
	}
	return done
}

// knownMessage reports whether ev's message id is its recipient's current
// one: an entry routed as an orphan before its send result committed (the
// webhook beat the result) is then an ordinary observation.
func (a *groupActor) knownMessage(ev crewcast.Event) bool {
	r := a.g.Recipient(ev.To)
	return r != nil && ev.MessageID != "" && (r.MessageID == ev.MessageID || r.GroupMessageID == ev.MessageID)
}

func (a *groupActor) ackOrphaned(c *actor.Context[groupMsg], entries []routed) {
	var refs []store.InboxRef
	for _, e := range entries {
		refs = append(refs, store.InboxRef{Provider: e.ref.Provider, EventID: e.ref.EventID, Target: a.key})
	}
	ctx, cancel := a.env.writeCtx(c.Context())
	defer cancel()
	if err := a.env.st.AckInbox(ctx, refs); err != nil {
		// Still pending in the inbox: the sweep routes them here again,
		// once their routing marks are cleared below.
		c.Logger().Error("acknowledge webhooks for a missing group", "err", err)
	}
	a.env.work.unroute(entries)
}

// reminder handles a durable reminder: a status check or a retry wake-up.
func (a *groupActor) reminder(c *actor.Context[groupMsg], r actor.Reminder) {
	if a.g == nil {
		// The group is gone: drop its reminders.
		a.dropReminder(c, r.Name)
		return
	}
	now := a.env.cfg.Clock.Now()
	switch {
	case strings.HasPrefix(r.Name, reminderCheck):
		i, err := strconv.Atoi(strings.TrimPrefix(r.Name, reminderCheck))
		if err != nil || i < 0 || i >= len(a.g.Recipients) {
			a.dropReminder(c, r.Name)
			return
		}
		rc := a.g.Recipients[i]
		if rc.Status == crewcast.StatusSent && !rc.NextCheckAt.After(now) {
			if !a.looking[i] && !a.env.closing() {
				a.looking[i] = true
				a.env.sends.lookup(lookupJob{groupID: a.key, index: i, messageID: rc.MessageID, provider: rc.Provider})
			}
			return
		}
		a.staleReminder(c, r, i)
	case strings.HasPrefix(r.Name, reminderRetry):
		a.kick(c)
		if a.retired || a.broken {
			return
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(r.Name, reminderRetry)); err == nil && i >= 0 && i < len(a.g.Recipients) {
			if rc := a.g.Recipients[i]; rc.Status != crewcast.StatusPending || rc.RetryAt.After(now) {
				a.staleReminder(c, r, i)
			}
		}
	default:
		if !a.policyReminder(c, r) && !a.calloutReminder(c, r) {
			a.dropReminder(c, r.Name)
		}
	}
}

// staleReminder handles a reminder of recipient i that the state no longer
// wants. Mostly a commit since the poller read it deleted or moved its row
// (a receipt came in meanwhile): a.rem, what this instance committed, then
// no longer has it at this due, and there is nothing to do — no I/O, so a
// group behind on its receipts is not slowed further by such reminders.
// One a.rem does not know that fires again (RefireAfter later) is really
// there: the row and the state disagree, so the rows are rewritten.
func (a *groupActor) staleReminder(c *actor.Context[groupMsg], r actor.Reminder, i int) {
	have, ok := a.rem[r.Name]
	if ok && !have.Equal(r.Due) {
		return // moved by a commit since it was read
	}
	if !ok {
		if seen, again := a.staleSeen[r.Name]; !again || !seen.Equal(r.Due) {
			if a.staleSeen == nil {
				a.staleSeen = map[string]time.Time{}
			}
			a.staleSeen[r.Name] = r.Due
			return // deleted by a commit since it was read, most likely
		}
		delete(a.staleSeen, r.Name)
	}
	delete(a.rem, r.Name)
	a.g.MarkDirty(i)
	_ = a.flush(c) // a failure is handled (logged, reloaded) inside flush
}

// dropReminder deletes a reminder that refers to nothing (a deleted group,
// a recipient index out of range, an unknown name). If the store fails,
// the poller fires the reminder again later and it is dropped then.
func (a *groupActor) dropReminder(c *actor.Context[groupMsg], name string) {
	ctx, cancel := a.env.writeCtx(c.Context())
	defer cancel()
	if err := a.env.st.DeleteReminder(ctx, a.key, name); err != nil {
		c.Logger().Warn("delete stale reminder; it will fire again", "reminder", name, "err", err)
	}
}

// ---- committing ----

func (a *groupActor) emit(e group.Event) {
	if o, ok := e.(group.Observed); ok && o.OptOut {
		// The provider says the recipient opted out (Telnyx 40300 in a
		// delivery report, Twilio 21610): never send to them again.
		a.eff.Suppress = append(a.eff.Suppress, store.Suppression{Number: a.g.Recipients[o.Index].Number,
			Reason: "provider_opt_out", CreatedAt: o.At})
	}
	if err := a.g.Apply(e); err != nil {
		// Decisions come from the same state Apply checks: an error here is
		// a bug, not bad input. Do not persist what cannot be replayed.
		panic(fmt.Sprintf("group %s: apply %s: %v", a.key, e.Type(), err))
	}
	a.pending = append(a.pending, e)
	if cl, ok := e.(group.Claimed); ok {
		a.sends = append(a.sends, cl.Sends...)
		// Replies, and orphan webhooks of a send whose answer is lost, find
		// the group through the conversation: written with the claim, so it
		// exists for every message that may have gone out.
		for _, s := range cl.Sends {
			for _, i := range s.Indices {
				a.addRoute(convKey(a.g.FromFor(i), a.g.Recipients[i].Number), a.env.cfg.ConversationTTL)
			}
		}
	}
}

func (a *groupActor) addRoute(key string, ttl time.Duration) {
	r := store.Route{Key: key, Value: a.key}
	if ttl > 0 {
		r.ExpiresAt = a.env.cfg.Clock.Now().Add(ttl)
	}
	a.eff.Routes = append(a.eff.Routes, r)
}

// flush commits the events, projections, reminders and effects gathered in
// this turn as one unit, then does what the commit allows: queue claimed
// sends, publish the change, adopt parked webhooks.
func (a *groupActor) flush(c *actor.Context[groupMsg]) error {
	e := a.env
	now := e.cfg.Clock.Now()
	dirty := a.g.TakeDirty()
	var u actor.Unit
	for _, pe := range a.pending {
		typ, data, err := group.Encode(pe)
		if err != nil {
			a.fail(c, err)
			return err
		}
		u.Events = append(u.Events, actor.Event{Type: typ, Data: data, Time: now})
	}
	// Sequence numbers as the journal will have them: the projection, the
	// outbox rows and the published views carry them.
	u = a.j.Stamp(u)
	views := make([]EventView, 0, len(u.Events))
	for _, ev := range u.Events {
		views = append(views, EventView{Seq: ev.Seq, Type: ev.Type, Time: ev.Time, Data: ev.Data})
	}
	for _, i := range dirty {
		r := a.g.Recipients[i]
		check, retry := wantedReminders(r)
		u.Reminders = append(u.Reminders, a.reminderOps(reminderCheck+strconv.Itoa(i), check)...)
		u.Reminders = append(u.Reminders, a.reminderOps(reminderRetry+strconv.Itoa(i), retry)...)
	}
	u.Reminders = append(u.Reminders, a.policyReminderOps(dirty, now)...)
	u.Reminders = append(u.Reminders, a.calloutReminderOps(now)...)
	if len(u.Events) > 0 || len(dirty) > 0 {
		row := groupRow(a.g, a.j.Seq()+uint64(len(u.Events)))
		a.eff.Group = &row
		for _, i := range dirty {
			a.eff.Deliveries = append(a.eff.Deliveries, deliveryRow(a.g, a.g.Recipients[i]))
		}
	}
	if len(u.Events) == 0 && len(u.Reminders) == 0 && effectsEmpty(a.eff) {
		return nil
	}
	if a.eff.Group != nil && e.cfg.Webhooks != nil && e.cfg.Webhooks.Enabled() {
		a.eff.Outbox = append(a.eff.Outbox, webhookout.Derive(a.outboxChange(u.Events, dirty, now))...)
	}
	u.Effects = []any{withConsent(a.eff, now)} // consent.go
	// STOP or a provider opt-out: no provider call to these numbers may
	// pass its check while this commits (see suppress.go).
	// STOP or a provider opt-out, or an answer to a follow-up in flight: that call may not start after
	// this commits (followups.go).
	release := e.gate.write(append(suppressedNumbers(a.eff.Suppress), a.answeredInFlight()...))
	outbox := len(a.eff.Outbox) > 0
	sends, adopt, pol := a.sends, a.adopt, a.takePolicyJobs()
	// The claims count as in flight from before their commit: a hand-off
	// (cluster.go) that saw no send in flight must not release the shard
	// between this commit and the provider calls it queues.
	claimed := claimIDs(sends, pol)
	e.work.addInflight(a.key, claimed)
	err := a.j.Persist(c.Context(), u)
	release()
	a.pending, a.eff, a.sends, a.adopt = nil, store.Effects{}, nil, nil
	if err != nil {
		e.work.dropInflight(a.key, claimed)
		a.fail(c, err)
		return err
	}
	a.failures = 0
	if outbox {
		e.cfg.Webhooks.Kick()
	}
	for _, op := range u.Reminders {
		if op.Delete {
			delete(a.rem, op.Name)
		} else {
			a.rem[op.Name] = op.Due
		}
	}
	if len(u.Reminders) > 0 {
		if due := earliestSet(u.Reminders); !due.IsZero() {
			e.reminders.WakeRemindersAt(due)
		}
	}
	unconfirmed := false
	for _, i := range dirty {
		r := a.g.Recipients[i]
		if r.Status != a.statuses[i] {
			unconfirmed = unconfirmed || r.Status == crewcast.StatusUnconfirmed
			e.cfg.Metrics.StatusChanged(r.Status)
			if r.Status == crewcast.StatusDelivered && !r.SentAt.IsZero() {
				e.cfg.Metrics.TimeToDelivered(r.DeliveredAt.Sub(r.SentAt))
			}
			a.statuses[i] = r.Status
		}
	}
	if unconfirmed {
		e.routing.sweepSoon()
	}
	if len(sends) > 0 {
		a.queueSends(sends)
	}
	a.queuePolicyJobs(pol)
	if len(views) > 0 {
		e.hub.Publish(Change{GroupID: a.key, Seq: a.j.Seq(), Events: views})
	}
	// Parked webhooks of the message ids just routed are adopted by the
	// caller once this turn's routing marks are cleared (see doWork).
	a.adopted = append(a.adopted, adopt...)
	e.routing.routed(a.key, adopt)
	// Snapshot every SnapshotEvery events — or every two events per
	// recipient in a larger group, whose snapshot grows with its roster
	// (see snapshotEvery) — and once when the group becomes complete (its
	// final snapshot); a complete group's later events (late receipts,
	// replies) wait for the next threshold or passivation.
	becameComplete := a.g.Status == crewcast.GroupComplete && a.lastStatus != crewcast.GroupComplete
	a.lastStatus = a.g.Status
	if a.j.SnapshotDue() || (becameComplete && a.j.SinceSnapshot() > 0) {
		if err := a.snapshot(c); err != nil {
			// A snapshot is an optimisation: the journal has everything.
			c.Logger().Warn("snapshot failed", "err", err)
		}
	}
	return nil
}

func (a *groupActor) reminderOps(name string, due time.Time) []actor.ReminderOp {
	have, ok := a.rem[name]
	switch {
	case due.IsZero() && ok:
		return []actor.ReminderOp{{Name: name, Delete: true}}
	case !due.IsZero() && (!ok || !have.Equal(due)):
		return []actor.ReminderOp{{Name: name, Due: due}}
	}
	return nil
}

func earliestSet(ops []actor.ReminderOp) time.Time {
	var t time.Time
	for _, op := range ops {
		if !op.Delete && (t.IsZero() || op.Due.Before(t)) {
			t = op.Due
		}
	}
	return t
}

// fail handles a failed commit: the in-memory state is ahead of the store.
// Fenced means another node owns the group: stop, never send. Anything else
// reloads from the store after a backoff.
func (a *groupActor) fail(c *actor.Context[groupMsg], err error) {
	if errors.Is(err, store.ErrSuppressed) {
		// A claim refused because a number was suppressed after this actor
		// looked: nothing was written, the store is healthy. Reload now
		// (the in-memory claim is discarded) and look again.
		c.Logger().Info("claim refused: a number was suppressed meanwhile; reloading")
		if lerr := a.load(c); lerr != nil && !a.retired {
			a.enterBroken(c, lerr)
		}
		return
	}
	if errors.Is(err, actor.ErrFenced) {
		a.retired = true
		a.pending, a.eff, a.sends, a.adopt = nil, store.Effects{}, nil, nil
		// Nothing queued here can be committed here: the owner applies
		// the webhooks from the shared inbox and counts the sends claimed
		// without an outcome as unconfirmed. Kept, the work would
		// re-activate this actor (to be fenced again) and hold Stop.
		a.env.work.forget(a.key, nil)
		c.Logger().Error("group fenced: another node owns it; stopping without sending", "err", err)
		c.Stop()
		return
	}
	a.enterBroken(c, err)
}

// claimIDs lists the send ids of claims and policy jobs about to commit.
func claimIDs(sends []group.Send, pol []sendJob) []string {
	if len(sends)+len(pol) == 0 {
		return nil
	}
	ids := make([]string, 0, len(sends)+len(pol))
	for _, s := range sends {
		ids = append(ids, s.ID)
	}
	for _, j := range pol {
		ids = append(ids, j.send.ID)
	}
	return ids
}

// queueSends registers committed claims as in flight and hands them to the
// send pool.
func (a *groupActor) queueSends(sends []group.Send) {
	jobs := make([]sendJob, 0, len(sends))
	ids := make([]string, 0, len(sends))
	for _, s := range sends {
		ids = append(ids, s.ID)
		to := make([]string, len(s.Indices))
		for k, i := range s.Indices {
			to[k] = a.g.Recipients[i].Number
		}
		jobs = append(jobs, sendJob{
			groupID: a.key, send: s, mms: a.g.Mode == crewcast.ModeGroupMMS,
			req: crewcast.SendRequest{From: a.g.FromFor(s.Indices[0]), To: to, Text: a.g.TextFor(s.Indices[0]), MediaURLs: a.g.MediaURLs,
				IdempotencyKey: group.ClaimKey(a.key, s.ID)},
		})
	}
	a.env.work.addInflight(a.key, ids)
	a.env.sends.submit(jobs)
}

// outboxChange describes the commit being built for webhookout.Derive:
// dirty recipients' statuses before it are a.statuses (updated after the
// commit), the group's is a.lastStatus.
func (a *groupActor) outboxChange(events []actor.Event, dirty []int, now time.Time) webhookout.Change {
	c := webhookout.Change{Group: *a.eff.Group, PrevStatus: a.lastStatus, Events: events, Time: now,
		Recipient: func(i int) (store.DeliveryRow, bool) {
			if i < 0 || i >= len(a.g.Recipients) {
				return store.DeliveryRow{}, false
			}
			return deliveryRow(a.g, a.g.Recipients[i]), true
		},
		Extra: func(number string) webhookout.RecipientExtra {
			r := a.g.Recipient(number)
			if r == nil {
				return webhookout.RecipientExtra{}
			}
			x := webhookout.RecipientExtra{ContactID: r.ContactID, Text: a.g.Text, FollowupsSent: r.FollowupsSent,
				NextFollowupAt: a.g.NextFollowupAt(r), Wave: r.Wave, Selected: r.Selected, Standby: r.Standby}
			if r.Text != "" {
				x.Text = r.Text
			}
			if r.Status == crewcast.StatusScheduled {
				x.HeldUntil = r.HeldUntil
			}
			return x
		}}
	for k, i := range dirty {
		c.Dirty = append(c.Dirty, webhookout.RecipientChange{Row: a.eff.Deliveries[len(a.eff.Deliveries)-len(dirty)+k],
			PrevStatus: a.statuses[i]})
	}
	return c
}

func effectsEmpty(e store.Effects) bool {
	return e.Group == nil && len(e.Deliveries) == 0 && len(e.InboxDone) == 0 && len(e.Routes) == 0 &&
		len(e.Suppress) == 0 && len(e.Unsuppress) == 0 && len(e.Replies) == 0 && e.Idempotency == nil &&
		len(e.Consent) == 0
}

// ---- projections ----

func groupRow(g *group.Group, seq uint64) store.GroupRow {
	return store.GroupRow{ID: g.ID, Status: g.Status, From: g.From, Mode: g.Mode, Text: g.Text, PauseReason: g.PauseReason,
		CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt, Counts: g.Counts(), Seq: seq, Answers: g.AnswersJSON()}
}

func deliveryRow(g *group.Group, r *group.Recipient) store.DeliveryRow {
	return store.DeliveryRow{GroupID: g.ID, Number: r.Number, Name: r.Name, Status: r.Status, Attempts: r.Attempts,
		ProviderMessageID: r.MessageID, ErrorCode: r.ErrorCode, ErrorClass: r.ErrorClass,
		ClaimedAt: r.ClaimedAt, SentAt: r.SentAt, DeliveredAt: r.DeliveredAt, FailedAt: r.FailedAt, RepliedAt: r.RepliedAt,
		Ack: r.Ack, LastReply: r.LastReply, UpdatedAt: g.UpdatedAt, Response: r.Response, Code: g.ShownCode(r.Index)}
}

// ---- route keys ----

func msgKey(provider, messageID string) string { return "m:" + provider + ":" + messageID }

func convKey(ours, theirs string) string { return "c:" + ours + ":" + theirs }

// threadKey names a group MMS thread by our number and the other members.
func threadKey(ours string, others []string) string {
	s := append([]string(nil), others...)
	sort.Strings(s)
	return "g:" + ours + ":" + strings.Join(s, ",")
}

func numbersOf(rs []*group.Recipient) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Number
	}
	return out
}
