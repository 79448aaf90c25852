package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

// unmatchedJournal records inbound messages that match no group, so that
// nothing a person sends is dropped: a journal of its own (key
// "unmatched"), the replies projection, and STOP/START suppressions.
//
// Its journal is persisted through actor.Journaled, like a group's: the
// Journaled numbers each unit's events (Stamp, so the outbox rows committed
// with them carry the events' sequence) and decides the snapshot cadence
// (every SnapshotEvery events). The journal's events carry no number or
// text (only the inbox event's name), so they are kept, like a group's
// audit trail, until retention's DeleteAfter. Start-up needs only the
// journal's head: the snapshot (an empty state, "{}") records the position
// and only what follows it is read; retention trims what a snapshot covers
// (trim).
//
// Only the node that owns the "unmatched" key's shard records (routeEntry
// checks ownership before calling record); a commit from a node whose
// position is stale fails with a conflict, after which the journal reads
// its head again and the sweep retries the entry.
type unmatchedJournal struct {
	deps unmatchedDeps
	// sem serializes recording (a Journaled is not safe for concurrent
	// use); it is taken honouring the caller's context, so a commit that
	// hangs does not hold every other recorder past its deadline. It
	// guards j, done, ring and next.
	sem chan struct{}
	j   *actor.Journaled // nil until start
	// committer commits the journal's units (set by start).
	committer *actor.Committer
	// done remembers the latest entries this process recorded (ring holds
	// them in order; ring[next] is the oldest once full). The sweep reads
	// the inbox outside the commit that records and acknowledges an entry,
	// so it may hand over one just recorded; no group's state dedupes
	// these, so the journal does.
	done map[inboxKey]struct{}
	ring []inboxKey
	next int
}

// unmatchedDeps is what the unmatched journal uses of the tracker, each
// part through the narrow interface it needs.
type unmatchedDeps struct {
	st            unmatchedStore
	hub           changePublisher   // committed changes (*Hub)
	gate          suppressionWriter // orders STOP commits against provider calls (*suppressionGate)
	webhooks      Outbox            // nil: no outbound webhooks
	clock         actor.Clock
	log           *slog.Logger
	snapshotEvery int
	// confirmText is the confirmation of a keyword reply ("" for none)
	// and submit queues its send (unmatched_confirm.go); nil: none.
	confirmText func(keyword string) string
	submit      func([]sendJob)
}

// unmatchedStore is the part of the store the unmatched journal reads and
// writes outside its commits (those go through the Committer): its
// journal's head, its snapshots, and retention's trim.
type unmatchedStore interface {
	Load(ctx context.Context, key string, afterSeq uint64, fn func(actor.Event) error) error
	actor.SnapshotStore
	TrimJournal(ctx context.Context, key string, beforeSeq uint64, before time.Time) (int, error)
}

const unmatchedKey = "unmatched"

// unmatchedDone bounds the remembered entries: far more than one sweep
// pass can have read stale.
const unmatchedDone = 4096

// unmatchedReply is the journal event of an unmatched inbound message. It
// names the inbox event only: the number and text live in the replies
// projection, where retention redacts them.
type unmatchedReply struct {
	Provider string `json:"provider"`
	EventID  string `json:"event_id"`
	Keyword  string `json:"keyword,omitempty"`
	// Ambiguous: a bare answer while several of the person's groups were
	// open (replycodes.go); applied to none.
	Ambiguous bool `json:"ambiguous,omitempty"`
}

// unmatchedSnapshot is the snapshot's state: the journal has none beyond
// its position.
var unmatchedSnapshot = []byte("{}")

func newUnmatchedJournal(d unmatchedDeps) *unmatchedJournal {
	return &unmatchedJournal{deps: d, sem: make(chan struct{}, 1)}
}

func (u *unmatchedJournal) lock(ctx context.Context) error {
	select {
	case u.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (u *unmatchedJournal) unlock() { <-u.sem }

// start reads the journal's head and commits through committer from now
// on. The tracker calls it once, from Start.
func (u *unmatchedJournal) start(ctx context.Context, committer *actor.Committer) error {
	if err := u.lock(ctx); err != nil {
		return err
	}
	defer u.unlock()
	u.committer = committer
	return u.readHead(ctx)
}

// readHead positions a new Journaled at the journal's head, found from the
// latest snapshot and the events after it. A snapshot that cannot be read
// is skipped: the journal then reads from the start (what retention left
// of it). Unlike actor.Recover it does not insist that the journal start
// at 1: there is no state to rebuild, and a trimmed journal read without
// its snapshot still ends at the head.
func (u *unmatchedJournal) readHead(ctx context.Context) error {
	var seq, snapSeq uint64
	snap, err := u.deps.st.LoadSnapshot(ctx, unmatchedKey)
	switch {
	case err == nil:
		seq, snapSeq = snap.Seq, snap.Seq
	case errors.Is(err, actor.ErrNotFound), errors.Is(err, actor.ErrCorruptSnapshot):
	default:
		return fmt.Errorf("load unmatched snapshot: %w", err)
	}
	if err := u.deps.st.Load(ctx, unmatchedKey, seq, func(e actor.Event) error {
		seq = e.Seq
		return nil
	}); err != nil {
		return err
	}
	u.j = actor.NewJournaled(actor.JournaledConfig{Key: unmatchedKey, Committer: u.committer,
		Snapshots: u.deps.st, Seq: seq, SnapshotSeq: snapSeq,
		SnapshotEvery: u.deps.snapshotEvery, Clock: u.deps.clock})
	return nil
}

// record journals the inbox entry ref's inbound events and, in the same
// commit, writes their replies rows, STOP/START suppressions and outbox
// rows and acknowledges the entry.
func (u *unmatchedJournal) record(ctx context.Context, ref store.InboxRef, events []crewcast.Event) error {
	return u.recordWith(ctx, ref, events, "")
}

// recordAmbiguous records an ambiguous reply (docs/design.md §15): a bare
// answer applied to no group, kept as a reply with ambiguous set, and, in
// the same commit, the claim of the one message listing the person's open
// requests (listing), sent after the commit like a STOP's confirmation.
func (u *unmatchedJournal) recordAmbiguous(ctx context.Context, ref store.InboxRef, events []crewcast.Event, listing string) error {
	return u.recordWith(ctx, ref, events, listing)
}

// recordWith is record, for an ambiguous reply when listing is set.
func (u *unmatchedJournal) recordWith(ctx context.Context, ref store.InboxRef, events []crewcast.Event, listing string) error {
	d := &u.deps
	now := d.clock.Now()
	if err := u.lock(ctx); err != nil {
		return fmt.Errorf("record unmatched reply: %w", err)
	}
	defer u.unlock()
	if u.j == nil {
		return errors.New("record unmatched reply: the tracker has not started")
	}
	key := inboxKey{ref.Provider, ref.EventID}
	if _, ok := u.done[key]; ok {
		return nil // recorded and acknowledged by an earlier commit
	}
	var unit actor.Unit
	kws := make([]group.Classification, len(events))
	for i, ev := range events {
		kws[i] = group.ClassifyReply(ev.Text)
		data, err := json.Marshal(unmatchedReply{Provider: ev.Provider, EventID: ev.EventID, Keyword: kws[i].Keyword, Ambiguous: listing != ""})
		if err != nil {
			return err
		}
		unit.Events = append(unit.Events, actor.Event{Type: "reply.unmatched", Data: data, Time: now})
	}
	// Confirmations are claimed in the commit that records their reply.
	claims, confirms, err := u.confirmClaims(events, kws)
	if err != nil {
		return err
	}
	if listing != "" && len(events) > 0 {
		c, job, err := u.listingClaim(events[0], listing)
		if err != nil {
			return err
		}
		claims, confirms = append(claims, c), append(confirms, job)
	}
	unit.Events = append(unit.Events, claims...)
	// The outbox rows carry each event's sequence as journaled.
	unit = u.j.Stamp(unit)
	var eff store.Effects
	for i, ev := range events {
		eff.Replies = append(eff.Replies, store.Reply{Provider: ev.Provider, EventID: ev.EventID, Number: ev.From, To: ev.To, Text: ev.Text,
			Media: ev.Media, ReceivedAt: now, PossibleOptOut: kws[i].PossibleOptOut, Ambiguous: listing != ""})
		if d.webhooks != nil && d.webhooks.Enabled() {
			// Committed with the reply it reports (docs/design.md §13).
			eff.Outbox = append(eff.Outbox, webhookout.Unmatched(unmatchedKey, unit.Events[i].Seq,
				eff.Replies[len(eff.Replies)-1], now))
		}
		switch kws[i].Keyword {
		case group.KeywordStop:
			eff.Suppress = append(eff.Suppress, store.Suppression{Number: ev.From, Reason: "stop", CreatedAt: now})
		case group.KeywordStart:
			eff.Unsuppress = append(eff.Unsuppress, ev.From)
		}
	}
	eff.InboxDone = []store.InboxRef{{Provider: ref.Provider, EventID: ref.EventID, Target: unmatchedKey}}
	unit.Effects = []any{withConsent(eff, now)}
	defer d.gate.write(suppressedNumbers(eff.Suppress))() // see suppress.go
	if err := u.j.Persist(ctx, unit); err != nil {
		if errors.Is(err, actor.ErrConflict) {
			// Someone else appended (another node): catch up, let the sweep retry.
			if lerr := u.readHead(ctx); lerr != nil {
				err = errors.Join(err, lerr)
			}
		}
		return fmt.Errorf("record unmatched reply: %w", err)
	}
	u.remember(key)
	if len(confirms) > 0 {
		d.submit(confirms)
	}
	if len(eff.Outbox) > 0 {
		d.webhooks.Kick()
	}
	d.hub.Publish(Change{GroupID: unmatchedKey, Seq: u.j.Seq()})
	// The snapshot is only a start-up shortcut: failing to save it costs a
	// longer read at the next start, nothing else.
	if err := u.j.MaybeSnapshot(ctx, func() ([]byte, error) { return unmatchedSnapshot, nil }); err != nil {
		d.log.Warn("snapshot unmatched journal", "err", err)
	}
	return nil
}

// trim deletes the journal events recorded before t that the latest
// snapshot covers (the snapshot's own event stays, so the head is always
// there for the next commit's sequence check). Retention calls it.
func (u *unmatchedJournal) trim(ctx context.Context, before time.Time) (int, error) {
	snap, err := u.deps.st.LoadSnapshot(ctx, unmatchedKey)
	if errors.Is(err, actor.ErrNotFound) || errors.Is(err, actor.ErrCorruptSnapshot) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("trim unmatched journal: %w", err)
	}
	n, err := u.deps.st.TrimJournal(ctx, unmatchedKey, snap.Seq, before)
	if err != nil {
		return 0, fmt.Errorf("trim unmatched journal: %w", err)
	}
	return n, nil
}

func (u *unmatchedJournal) remember(key inboxKey) {
	if u.done == nil {
		u.done = make(map[inboxKey]struct{})
	}
	if len(u.ring) < unmatchedDone {
		u.ring = append(u.ring, key)
	} else {
		delete(u.done, u.ring[u.next])
		u.ring[u.next] = key
		u.next = (u.next + 1) % unmatchedDone
	}
	u.done[key] = struct{}{}
}
