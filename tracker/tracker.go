// Package tracker runs crewcast's group messages: one persistent virtual
// actor per group (package actor) that applies the pure decisions of package
// group, commits them through the store, makes provider calls outside its
// message loop, and publishes every committed change.
//
// The never-twice rules live here as ordering:
//   - a claim is committed before its provider call is queued;
//   - a provider call's outcome is committed before the send leaves the
//     in-flight registry, so a crash in between is seen on recovery as a
//     recipient left in "sending", which becomes "unconfirmed" — never resent;
//   - webhooks are made durable in the inbox before the provider hears 2xx,
//     and are acknowledged in the same transaction as the state they change.
package tracker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Config configures a Tracker. Zero fields take the defaults stated.
type Config struct {
	// Store keeps everything durable. Required.
	Store store.Store
	// Mailer sends the email steps of follow-up ladders (ladder.go);
	// nil: groups with an email step are refused.
	Mailer Mailer
	// Caller places the voice calls of follow-up ladders (voice.go); nil:
	// groups with a voice step are refused.
	Caller Caller
	// Provider sends messages and parses nothing here (webhooks are parsed
	// by the HTTP layer). Required.
	Provider crewcast.Provider
	// Providers are the other configured providers by name (docs/design.md
	// §16): a registered sender's provider sends its messages; Provider
	// stays the default for a from that is no sender.
	Providers map[string]crewcast.Provider
	// CircuitHalfOpen is how long a provider's open circuit waits before
	// it lets a call try again (circuit.go); default 30s.
	CircuitHalfOpen time.Duration
	// System is the actor system to run in; default: a new one, owned and
	// shut down by the tracker.
	System *actor.System
	// Logger; default discards.
	Logger *slog.Logger
	// Clustered says the tracker will be one node of several: StartCluster
	// follows Start. Until then it holds no shard, so starting it resumes,
	// routes to and reminds no group (every commit would be fenced; a
	// group activated for nothing would keep work no one can commit).
	Clustered bool
	// Clock; default the real clock. Tests inject actor.NewManualClock.
	Clock actor.Clock
	// Metrics; default NopMetrics.
	Metrics Metrics
	// RuntimeMetrics receives the actor runtime's counters (when the
	// tracker creates the system) and commit batch figures.
	RuntimeMetrics actor.Metrics
	// Settings are the policies of new groups (group.DefaultSettings for
	// zero fields).
	Settings group.Settings
	// SendRate is messages per second per sender number; 0 = no pacing.
	SendRate float64
	// SendRates overrides SendRate for particular sender numbers (E.164):
	// a toll-free or short code sends faster than a 10DLC long code.
	SendRates map[string]float64
	// SendBurst is the pacer's burst; default max(1, SendRate).
	SendBurst int
	// SendWorkers bounds concurrent provider calls. Default 64.
	SendWorkers int
	// SendTimeout bounds one provider call. Default 30s.
	SendTimeout time.Duration
	// CommitTimeout bounds one store commit (a group-commit batch of actor
	// units, or of webhook inbox inserts): a stuck store then surfaces as
	// an error (503 to a webhook), never as a hang. Default
	// actor.DefaultFlushTimeout (10s, above SQLite's 5s busy timeout).
	CommitTimeout time.Duration
	// ClaimBatch bounds the sends claimed in one commit. Default 500.
	ClaimBatch int
	// CalloutSettle is how long after the provider received a YES an exact
	// quota waits before ranking it, so that answers whose webhooks arrive
	// out of order within it are still selected in the provider's order
	// (tracker/callout.go). Default DefaultCalloutSettle; negative: none.
	CalloutSettle time.Duration
	// MaxBacklog bounds claimed sends waiting for a worker, across groups.
	// Default 2000.
	MaxBacklog int
	// IdleTimeout passivates a group actor idle this long. Default 2m.
	IdleTimeout time.Duration
	// SnapshotEvery snapshots a group after this many journal events.
	// Default 1000.
	SnapshotEvery int
	// ConversationTTL is how long a reply from a recipient routes to the
	// group last sent to them. Default 30 days.
	ConversationTTL time.Duration
	// ReplyCodeWindow is how long after a group with response options
	// last texted a person it counts as one of their open requests, for
	// reply codes (replycodes.go). Default 24h.
	ReplyCodeWindow time.Duration
	// SweepInterval is how often unprocessed inbox entries are routed again
	// (after a crash, a routing failure, or while parked). Default 15s.
	SweepInterval time.Duration
	// ReminderPoll is the durable-reminder poll interval. Default 1s.
	ReminderPoll time.Duration
	// ParkedTTL is how long a receipt for a message id with no route
	// stays parked (its send result may still be committing, or it may
	// prove an unconfirmed send went out) before it is acknowledged as
	// expired and its payload dropped. Default 2h (twice the default
	// claim window); at most MaxParkedTTL. See route.go.
	ParkedTTL time.Duration
	// NewID generates group ids; default random, time-ordered.
	NewID func() string
	// HashKey keys the hash that replaces an erased person's number and
	// keeps their opt-out in force (CREWCAST_HASH_KEY, or the server's
	// generated key stored in the database); empty: erasure uses random
	// tokens and cannot keep an opt-out.
	HashKey []byte
	// PastHashKeys are keys opt-outs may have been kept under before (the
	// key stored in the database when a configured HashKey differs from
	// it): every suppression check matches their hashes too; new hashes
	// use HashKey only.
	PastHashKeys [][]byte
	// Webhooks, when set, makes commits write outbound webhook events to
	// the outbox (docs/design.md §13) while any endpoint exists, and is kicked
	// after such a commit.
	Webhooks Outbox
	// PolicyDefaults are the server's quiet hours and default time zone
	// for new groups (docs/design.md §12).
	PolicyDefaults group.PolicyDefaults
	// ResolveCrews turns escalation crews into numbers at creation; nil:
	// crews are kept unresolved (see followups.go).
	ResolveCrews CrewResolver
	// OptOutReply is what crewcast sends on an opt-out: "provider" or ""
	// (the provider sends its own confirmation, crewcast nothing), "off"
	// (nothing) or the text to send. HelpReply is the text sent on
	// HELP/INFO ("" = none). Each is sent at most once per keyword reply,
	// claimed like any message (group/confirm.go).
	OptOutReply string
	HelpReply   string
}

// Outbox is what the tracker needs of the outbound webhook worker.
type Outbox interface {
	// Enabled reports whether any webhook endpoint exists.
	Enabled() bool
	// Kick says outbox rows were committed.
	Kick()
}

func (c Config) withDefaults() (Config, error) {
	if c.Store == nil || c.Provider == nil {
		return c, errors.New("tracker: Store and Provider are required")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = actor.RealClock()
	}
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	if c.RuntimeMetrics == nil {
		c.RuntimeMetrics = actor.NopMetrics{}
	}
	c.Settings = c.Settings.WithDefaults()
	if c.SendWorkers <= 0 {
		c.SendWorkers = 64
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = actor.DefaultFlushTimeout
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = 500
	}
	if c.CalloutSettle == 0 {
		c.CalloutSettle = DefaultCalloutSettle
	}
	if c.MaxBacklog <= 0 {
		c.MaxBacklog = 2000
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.SnapshotEvery <= 0 {
		c.SnapshotEvery = 1000
	}
	if c.ConversationTTL <= 0 {
		c.ConversationTTL = 30 * 24 * time.Hour
	}
	if c.ReplyCodeWindow <= 0 {
		c.ReplyCodeWindow = DefaultReplyCodeWindow
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = 15 * time.Second
	}
	if c.ReminderPoll <= 0 {
		c.ReminderPoll = time.Second
	}
	if c.ParkedTTL <= 0 {
		c.ParkedTTL = DefaultParkedTTL
	}
	if c.ParkedTTL > MaxParkedTTL {
		return c, fmt.Errorf("tracker: ParkedTTL %s is longer than %s", c.ParkedTTL, MaxParkedTTL)
	}
	if c.NewID == nil {
		c.NewID = newGroupID
	}
	return c, nil
}

// Tracker runs group messages. Create it with New, then Start; Stop ends it.
type Tracker struct {
	cfg Config
	// codeLocks orders reply-code assignment per conversation (replycodes.go).
	codeLocks codeLocks
	st        store.Store
	log       *slog.Logger
	sys       *actor.System
	ownSys    bool
	groups    *actor.Kind[groupMsg]
	committer *actor.Committer
	inbox     *actor.Batcher[store.InboxEntry, store.InboxResult]
	pool      *pool
	provs     *providerSet // the configured providers and the senders (providers.go)
	circuits  *circuits    // one per provider (circuit.go)
	pools     poolGroups   // active pool groups (pools.go)
	pacer     *pacer
	hub       *Hub
	route     chan routeReq
	// routed counts the routeReqs sent on route and those the router has
	// handled: equal when no webhook is between the inbox and its group
	// (tests settle on it).
	routed   struct{ queued, done atomic.Uint64 }
	sweepNow chan struct{}
	// sweeps counts the sweeper's work, for tests that must know a sweep
	// asked for (or a number of them) is over (route.go).
	sweeps sweepCounts

	// work is each group's uncommitted work, in-flight sends and routing
	// marks (workqueue.go); env is what group actors see of the tracker
	// (groupenv.go).
	work *workQueue
	env  *groupEnv

	// mu guards parked, and orders closing against adoptParked's wg.Add
	// (see Stop). Nothing else shares it: every other part synchronises
	// itself.
	mu      sync.Mutex
	parked  map[string]struct{} // provider message ids with parked events (this process)
	routes  routeCache
	sweepMu sync.Mutex // one Sweep pass at a time (the sweeper's and tests')
	idle    chan struct{}

	unmatched *unmatchedJournal // inbound messages for no group (unmatched.go)
	gate      suppressionGate   // orders provider calls against suppression commits
	erased    erasedNumbers     // numbers this process erased recently (erasure.go)
	fstop     followupStops     // follow-ups whose recipient answered before the call (followups.go)
	room      *sendRoom         // groups waiting for room in the send backlog (room.go)

	closing    atomic.Bool
	actorsDown atomic.Bool
	down       chan struct{} // closed with actorsDown: ends pending retries
	stop       chan struct{}
	wg         sync.WaitGroup // router, sweeper, adoptions
	started    bool
	// bg is the context of the work under wg: routing and sweeping, which
	// a later sweep redoes, so Stop cancels it first.
	bg       context.Context
	cancelBG context.CancelFunc
	// cancelCalls ends the provider calls still running when Stop's
	// deadline passes.
	cancelCalls context.CancelFunc
	// cluster is the lease keeper when this tracker is one of several
	// nodes (cluster.go); nil for a single node.
	cluster atomic.Pointer[cluster]
}

// New builds a tracker; nothing runs until Start.
func New(cfg Config) (*Tracker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Tracker{
		cfg:      cfg,
		st:       cfg.Store,
		log:      cfg.Logger,
		sys:      cfg.System,
		hub:      NewHub(),
		parked:   make(map[string]struct{}),
		idle:     make(chan struct{}, 1),
		route:    make(chan routeReq, 4096),
		sweepNow: make(chan struct{}, 1),
		stop:     make(chan struct{}),
		down:     make(chan struct{}),
	}
	t.unmatched = newUnmatchedJournal(unmatchedDeps{st: cfg.Store, hub: t.hub, gate: &t.gate, webhooks: cfg.Webhooks,
		clock: cfg.Clock, log: cfg.Logger, snapshotEvery: cfg.SnapshotEvery,
		confirmText: (&groupConfig{OptOutReply: cfg.OptOutReply, HelpReply: cfg.HelpReply}).confirmText,
		submit:      func(jobs []sendJob) { t.pool.submit(jobs) }})
	t.bg, t.cancelBG = context.WithCancel(context.Background())
	if t.sys == nil {
		t.sys = actor.NewSystem(actor.WithLogger(cfg.Logger), actor.WithClock(cfg.Clock), actor.WithMetrics(cfg.RuntimeMetrics))
		t.ownSys = true
	}
	t.pacer = newPacer(cfg.SendRate, cfg.SendBurst, cfg.SendRates)
	t.work = newWorkQueue(func(id string) bool { return t.groups.Tell(id, msgWork{}) }, t.after, t.actorsDown.Load,
		t.ownsKey, t.notifyIdle)
	t.provs = newProviderSet(cfg.Provider, cfg.Providers)
	t.circuits = newCircuits(cfg.Clock.Now, t.log, cfg.CircuitHalfOpen)
	t.pool = newPool(t.provs, cfg.SendWorkers, cfg.SendTimeout, cfg.Clock.Now, t.work.postResult, t.work.postLookup)
	t.pool.guard = t.guardSend
	t.pool.onCall = t.circuits.observe
	t.circuits.onChange = t.circuitChanged
	t.pool.ctx, t.cancelCalls = context.WithCancel(context.Background())
	t.room = newSendRoom(cfg.MaxBacklog/2, t.pool.backlog, t.kick)
	t.pool.onDrain = t.room.drained
	return t, nil
}

// Hub is where committed changes are published.
func (t *Tracker) Hub() *Hub { return t.hub }

// System is the actor system the tracker runs in (for /debug views).
func (t *Tracker) System() *actor.System { return t.sys }

// Start runs the tracker: group actors, durable reminders, the send pool,
// and the inbox sweep that routes webhooks acknowledged before a crash.
func (t *Tracker) Start(ctx context.Context) error {
	if t.started {
		return errors.New("tracker: already started")
	}
	t.started = true
	t.committer = actor.NewCommitter(t.st, actor.CommitterOptions{Metrics: t.cfg.RuntimeMetrics, Clock: t.cfg.Clock,
		FlushTimeout: t.cfg.CommitTimeout})
	t.inbox = actor.NewBatcher(func(ctx context.Context, items []store.InboxEntry) ([]store.InboxResult, error) {
		return t.st.IngestInbox(ctx, items)
	}, actor.BatcherOptions{FlushTimeout: t.cfg.CommitTimeout})
	t.env = t.newGroupEnv()
	t.groups = actor.NewKind(t.sys, "group", func(key string) actor.Actor[groupMsg] {
		return &groupActor{env: t.env, key: key}
	}, actor.KindOptions{IdleTimeout: t.cfg.IdleTimeout, MailboxSize: 4096})
	t.env.reminders = t.groups
	var reminders actor.ReminderStore = t.st
	if t.cfg.Clustered {
		reminders = heldReminders{t.st, t.ownsKey} // only the held shards' (cluster.go)
	}
	t.groups.EnableReminders(reminders, func(r actor.Reminder) groupMsg { return msgReminder{r: r} },
		actor.ReminderOptions{PollInterval: t.cfg.ReminderPoll})
	if err := t.unmatched.start(ctx, t.committer); err != nil {
		return fmt.Errorf("tracker start: %w", err)
	}
	t.pool.start()
	for range 2 {
		t.wg.Add(1)
		go t.router()
	}
	t.wg.Add(1)
	go t.sweeper()
	return nil
}

// Stop stops taking new work, lets claimed sends finish or answers them as
// not sent, commits every outcome, and passivates the group actors — all
// within ctx's deadline. Routing and sweeping (which the next start's
// sweep redoes) are cancelled at once. When ctx ends first, Stop cancels
// what still runs (provider calls, actors) and returns an error wrapping
// ctx's, without waiting for goroutines that ignore the cancellation. It
// reports an error when the stop was not clean.
func (t *Tracker) Stop(ctx context.Context) error {
	// closing flips under t.mu, where adoptParked checks it before
	// registering with t.wg: every adoption either registered before this
	// point (and the wait below covers it) or sees closing and stays out.
	t.mu.Lock()
	already := t.closing.Swap(true)
	t.mu.Unlock()
	if !t.started || already {
		return nil
	}
	defer t.cancelCalls()
	close(t.stop)
	t.cancelBG()
	var errs []error
	if err := waitCtx(ctx, t.pool.close); err != nil {
		t.cancelCalls()
		errs = append(errs, fmt.Errorf("tracker stop: provider calls still running: %w", err))
	}
	if err := t.waitIdle(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := waitCtx(ctx, t.wg.Wait); err != nil {
		errs = append(errs, fmt.Errorf("tracker stop: routing or sweep still running: %w", err))
	}
	t.actorsDown.Store(true)
	close(t.down)
	if t.ownSys {
		clean, err := t.sys.Shutdown(ctx)
		if err != nil {
			errs = append(errs, err)
		} else if !clean {
			errs = append(errs, errors.New("tracker stop: actors did not all stop cleanly"))
		}
	}
	return errors.Join(errs...)
}

// waitCtx runs wait and returns when it did, or with ctx's error when ctx
// ends first (wait then finishes, or not, on its own goroutine).
func waitCtx(ctx context.Context, wait func()) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitIdle waits until no group has uncommitted work.
func (t *Tracker) waitIdle(ctx context.Context) error {
	for {
		busy := t.work.busyGroups() // another node's work is theirs to recover (cluster.go)
		if busy == 0 {
			return nil
		}
		select {
		case <-t.idle:
		case <-ctx.Done():
			return fmt.Errorf("tracker stop: %d groups still had uncommitted work: %w", busy, ctx.Err())
		}
	}
}

// ---- public operations ----

// Create validates req, records the group and its roster durably, and
// starts sending. With an idempotency key, a repeat of the same request
// returns the first group (created false).
func (t *Tracker) Create(ctx context.Context, req group.Request, opts CreateOptions) (string, bool, error) {
	if t.closing.Load() {
		return "", false, ErrClosed
	}
	hash := requestHash(req, opts)
	idemKey := scopedIdempotencyKey(opts)
	if idemKey != "" {
		if id, ok, err := t.idempotent(ctx, opts, hash); ok || err != nil {
			return id, false, err
		}
	}
	// An oversized request is refused before any number is parsed.
	if e := req.TooMany(); e != nil {
		return "", false, &ValidationError{Fields: []group.FieldError{*e}, Total: 1}
	}
	normalize := memoNormalize()
	suppressed, err := t.suppressedOf(ctx, req, normalize)
	if err != nil {
		return "", false, err
	}
	settings := t.cfg.Settings
	if opts.CheckAfter > 0 {
		settings.CheckAfter = opts.CheckAfter
	}
	id := t.cfg.NewID()
	pool, err := t.planPool(&req) // pools.go
	if err != nil {
		return "", false, err
	}
	created, ferrs, total := group.PlanWith(id, req, settings, suppressed, t.cfg.Clock.Now(), normalize)
	if len(ferrs) > 0 {
		return "", false, &ValidationError{Fields: ferrs, Total: total}
	}
	if pool != nil {
		if err := t.assignPool(ctx, &created, pool, req.Pool); err != nil {
			return "", false, unavailable(ctx, "read sticky senders", err)
		}
	}
	if req.UsesDirectory() && !slices.ContainsFunc(created.Recipients, func(e group.RosterEntry) bool { return !e.Suppressed }) {
		return "", false, fmt.Errorf("%w: all %d recipients are on the suppression list", ErrNoneReachable, len(created.Recipients))
	}
	if err := t.planPolicy(ctx, &created, req, normalize); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return "", false, err
		}
		return "", false, unavailable(ctx, "resolve escalation crews", err)
	}
	var idem *store.IdempotencyKey
	if idemKey != "" {
		idem = &store.IdempotencyKey{Key: idemKey, RequestHash: hash, GroupID: id, CreatedAt: created.At}
	}
	// Our own deadline, so that unavailable (which reads ctx) tells it
	// from the caller giving up.
	askCtx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	res, err := actor.Ask(askCtx, t.groups.Get(id), func(r actor.Reply[error]) groupMsg {
		return msgCreate{created: created, idem: idem, by: opts.By, reply: r, who: auditActorFrom(ctx)}
	})
	if err == nil {
		err = res
	}
	if errors.Is(err, store.ErrIdempotencyConflict) {
		// Another request with the same key won the race.
		if id, ok, err := t.idempotent(ctx, opts, hash); ok || err != nil {
			return id, false, err
		}
	}
	if err != nil {
		return "", false, unavailable(ctx, "create group", err)
	}
	return id, true, nil
}

// memoNormalize returns a number normaliser that parses each distinct
// input once: the suppression lookup and the plan both need every number.
func memoNormalize() func(string) (string, error) {
	type norm struct {
		e164 string
		err  error
	}
	memo := map[string]norm{}
	return func(n string) (string, error) {
		if group.IsCanonical(n) { // a crew's members: already E.164
			return n, nil
		}
		if v, ok := memo[n]; ok {
			return v.e164, v.err
		}
		e, err := group.NormalizeNumber(n)
		memo[n] = norm{e, err}
		return e, err
	}
}

// suppressedOf reads which of the request's numbers are suppressed (the
// ones that do not parse are the plan's field errors, not looked up).
func (t *Tracker) suppressedOf(ctx context.Context, req group.Request, normalize func(string) (string, error)) (map[string]bool, error) {
	var nums []string
	add := func(n string) {
		if e, err := normalize(n); err == nil {
			nums = append(nums, e)
		}
	}
	for _, n := range req.To {
		add(n)
	}
	for _, r := range req.Recipients {
		add(r.Number)
	}
	for _, r := range req.Resolved {
		add(r.Number)
	}
	sup, err := t.suppressed(ctx, nums, false)
	if err != nil {
		return nil, unavailable(ctx, "read suppressions", err)
	}
	suppressed := make(map[string]bool, len(sup))
	for n := range sup {
		suppressed[n] = true
	}
	return suppressed, nil
}

// askTimeout bounds how long an API call waits for a group actor.
const askTimeout = 30 * time.Second

// idempotent finds the group an earlier request with the same (scoped)
// idempotency key made: ok is false when there is none.
func (t *Tracker) idempotent(ctx context.Context, opts CreateOptions, hash string) (string, bool, error) {
	rec, err := t.st.GetIdempotency(ctx, scopedIdempotencyKey(opts))
	if errors.Is(err, actor.ErrNotFound) {
		rec, err = t.legacyIdempotency(ctx, opts)
	}
	switch {
	case errors.Is(err, actor.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", false, unavailable(ctx, "read idempotency key", err)
	case rec.RequestHash != hash:
		return "", false, ErrIdempotencyMismatch
	}
	return rec.GroupID, true, nil
}

// legacyIdempotency finds a key stored before keys were scoped (the
// client's key as it was) and accepts it only when its group was created
// by the same caller, so a retry across the upgrade still finds its group
// and another API key never does. actor.ErrNotFound otherwise.
func (t *Tracker) legacyIdempotency(ctx context.Context, opts CreateOptions) (store.IdempotencyKey, error) {
	if isScopedIdempotencyKey(opts.IdempotencyKey) {
		return store.IdempotencyKey{}, actor.ErrNotFound // would read another caller's scoped row
	}
	rec, err := t.st.GetIdempotency(ctx, opts.IdempotencyKey)
	if err != nil {
		return rec, err
	}
	errFound := errors.New("found")
	var created group.Created
	err = t.st.Load(ctx, rec.GroupID, 0, func(ev actor.Event) error {
		if ev.Type != group.TypeCreated {
			return nil
		}
		if err := json.Unmarshal(ev.Data, &created); err != nil {
			return err
		}
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return store.IdempotencyKey{}, err
	}
	if !errors.Is(err, errFound) || created.By != opts.By {
		return store.IdempotencyKey{}, actor.ErrNotFound
	}
	return rec, nil
}

// isScopedIdempotencyKey reports whether k has the form
// scopedIdempotencyKey writes.
func isScopedIdempotencyKey(k string) bool {
	n, rest, ok := strings.Cut(k, ":")
	if !ok {
		return false
	}
	l, err := strconv.Atoi(n)
	return err == nil && l >= 0 && len(rest) > l && rest[l] == ':'
}

// scopedIdempotencyKey is the stored form of a request's idempotency key:
// the caller (opts.By, an API key id) and the client's key, as
// "<len(By)>:<By>:<key>" so that no two (caller, key) pairs share a form.
// Keys of different callers never meet, so one API key cannot reach
// another's group by guessing or reusing its key. "" when the request has
// no idempotency key.
func scopedIdempotencyKey(opts CreateOptions) string {
	if opts.IdempotencyKey == "" {
		return ""
	}
	return strconv.Itoa(len(opts.By)) + ":" + opts.By + ":" + opts.IdempotencyKey
}

// requestHash fingerprints a create request for idempotency.
func requestHash(req group.Request, opts CreateOptions) string {
	b, _ := json.Marshal(struct {
		R group.Request `json:"r"`
		C time.Duration `json:"c"`
	}{req, opts.CheckAfter})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Cancel cancels a group: pending recipients are never sent to.
func (t *Tracker) Cancel(ctx context.Context, id, by string) error {
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Cancel(now, by) })
}

// Resolve records an operator's decision about an unconfirmed recipient.
// not_delivered (which allows a new attempt) is refused for a suppressed
// number with ErrSuppressed.
func (t *Tracker) Resolve(ctx context.Context, id, number, outcome, by string) error {
	if outcome == group.ResolveNotDelivered {
		if err := t.refuseSuppressed(ctx, id, number); err != nil {
			return err
		}
	}
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) {
		return g.Resolve(number, outcome, now, by)
	})
}

// Retry asks for a new attempt for a failed recipient; ErrSuppressed for a
// suppressed number.
func (t *Tracker) Retry(ctx context.Context, id, number, by string) error {
	if err := t.refuseSuppressed(ctx, id, number); err != nil {
		return err
	}
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Retry(number, now, by) })
}

// Resume lifts a pause caused by a sender failure.
func (t *Tracker) Resume(ctx context.Context, id, by string) error {
	return t.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Resume(now, by) })
}

func (t *Tracker) command(ctx context.Context, id string, fn func(*group.Group, time.Time) (group.Event, error)) error {
	if t.closing.Load() {
		return ErrClosed
	}
	if _, err := t.st.GetGroup(ctx, id); errors.Is(err, actor.ErrNotFound) {
		return ErrNotFound
	} else if err != nil {
		return unavailable(ctx, "read group", err)
	}
	// Our own deadline, so that unavailable (which reads ctx) tells it
	// from the caller giving up.
	askCtx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	res, err := actor.Ask(askCtx, t.groups.Get(id), func(r actor.Reply[error]) groupMsg {
		return msgCommand{fn: fn, reply: r, who: auditActorFrom(ctx)}
	})
	if err != nil {
		return unavailable(ctx, "group actor", err)
	}
	switch {
	case res == nil, errors.Is(res, group.ErrState), errors.Is(res, group.ErrNoRecipient), errors.Is(res, ErrNotFound):
		return res
	}
	return unavailable(ctx, "commit", res)
}

// Ingest makes one webhook's events durable in the inbox and hands new ones
// to the router; a duplicate, or a replay the replay record knows (see
// store.Inbox.IngestInbox), is acknowledged and ignored. The caller may
// answer 2xx only when it returns nil.
func (t *Tracker) Ingest(ctx context.Context, events []crewcast.Event) (bool, error) {
	if len(events) == 0 {
		return false, nil
	}
	first := events[0]
	payload, err := json.Marshal(events)
	if err != nil {
		return false, fmt.Errorf("ingest: encode events: %w", err)
	}
	e := store.InboxEntry{Provider: first.Provider, EventID: first.EventID, Payload: payload, ReceivedAt: t.cfg.Clock.Now()}
	if first.Kind != crewcast.KindInbound {
		e.MessageID = first.MessageID
	}
	res, err := t.inbox.Do(ctx, e)
	if err != nil {
		t.cfg.Metrics.WebhookIngested(first.Provider, "error")
		return false, unavailable(ctx, "store webhook", err)
	}
	switch res {
	case store.InboxDuplicate:
		t.cfg.Metrics.WebhookIngested(first.Provider, "duplicate")
		return false, nil
	case store.InboxReplay:
		// Seen before, its inbox row since purged: a captured webhook
		// posted again (Twilio's signatures never expire). Nothing is
		// applied; the provider still gets its 2xx.
		t.cfg.Metrics.WebhookIngested(first.Provider, "replay")
		return false, nil
	}
	t.cfg.Metrics.WebhookIngested(first.Provider, "new")
	select {
	case t.route <- routeReq{ref: store.InboxRef{Provider: e.Provider, EventID: e.EventID}, events: events}:
		t.routed.queued.Add(1)
	default:
		// The router is saturated; the entry is durable and the sweep will
		// route it.
	}
	return true, nil
}

// unavailable wraps err, a failure of what, for the API layer: ErrCanceled
// when it is ctx's own end (the caller left or its deadline passed — not a
// failure of crewcast, and not logged as one), ErrUnavailable otherwise
// (an internal failure, with its cause kept for the logs).
func unavailable(ctx context.Context, what string, err error) error {
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrCanceled) {
		return err
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%w: %s: %w", ErrCanceled, what, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

// newGroupID returns "grp_" + 8 bytes of time + 8 random bytes, base32:
// unique, unguessable and sortable by creation time.
func newGroupID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	_, _ = rand.Read(b[8:])
	return "grp_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}
