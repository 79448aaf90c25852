package actor

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// RecoveryResult is an actor's state rebuilt from its snapshot and journal.
type RecoveryResult[S any] struct {
	State S
	// Seq is the sequence of the last event applied (0 for a new actor);
	// the next Unit's ExpectSeq.
	Seq uint64
	// FromSnapshot reports that recovery started from a snapshot, taken at
	// SnapshotSeq.
	FromSnapshot bool
	SnapshotSeq  uint64
	// Replayed counts the journal events applied after the snapshot.
	Replayed int
	// SnapshotErr is set when a snapshot existed but could not be used
	// (ErrCorruptSnapshot, or a decode error wrapped with it); recovery then
	// replayed the whole journal. Callers should report it.
	SnapshotErr error
}

// Recover rebuilds key's state: the latest snapshot (if snaps is non-nil
// and has one) decoded with decode, then every later journal event applied
// with apply, in order. A corrupt or undecodable snapshot is reported in
// SnapshotErr and recovery falls back to the whole journal from a zero S;
// any other store error, an apply error or a gap in the journal's sequence
// is returned.
func Recover[S any](ctx context.Context, j Journal, snaps SnapshotStore, key string,
	decode func([]byte) (S, error), apply func(*S, Event) error) (RecoveryResult[S], error) {
	var res RecoveryResult[S]
	if snaps != nil {
		snap, err := snaps.LoadSnapshot(ctx, key)
		switch {
		case err == nil:
			st, derr := decode(snap.State)
			if derr != nil {
				res.SnapshotErr = fmt.Errorf("decode snapshot %q at seq %d: %w: %w", key, snap.Seq, ErrCorruptSnapshot, derr)
				break
			}
			res.State, res.Seq, res.FromSnapshot, res.SnapshotSeq = st, snap.Seq, true, snap.Seq
		case errors.Is(err, ErrNotFound):
		case errors.Is(err, ErrCorruptSnapshot):
			res.SnapshotErr = err
		default:
			return res, fmt.Errorf("recover %q: load snapshot: %w", key, err)
		}
	}
	err := j.Load(ctx, key, res.Seq, func(ev Event) error {
		if ev.Seq != res.Seq+1 {
			return fmt.Errorf("journal %q: expected seq %d, got %d", key, res.Seq+1, ev.Seq)
		}
		if err := apply(&res.State, ev); err != nil {
			return fmt.Errorf("apply event %d: %w", ev.Seq, err)
		}
		res.Seq = ev.Seq
		res.Replayed++
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("recover %q: %w", key, err)
	}
	return res, nil
}

// JournaledConfig configures a Journaled.
type JournaledConfig struct {
	Key       string
	Committer *Committer
	// Snapshots receives snapshots; nil disables them.
	Snapshots SnapshotStore
	// Seq and SnapshotSeq are where the actor's journal and latest snapshot
	// stand (from RecoveryResult).
	Seq         uint64
	SnapshotSeq uint64
	// SnapshotEvery makes MaybeSnapshot save once this many events were
	// persisted since the last snapshot; 0 disables it.
	SnapshotEvery int
	// SnapshotInterval, when set, replaces SnapshotEvery: it is asked at
	// each SnapshotDue, so an actor whose snapshot grows with its state
	// (a roster, say) can space its snapshots out as it grows, keeping the
	// snapshot bytes written per event bounded. 0 disables snapshots for
	// that call.
	SnapshotInterval func() uint64
	Clock            Clock // stamps events (default RealClock)
}

// Journaled tracks one persistent actor's position in its journal and
// commits its units through a shared Committer. It is owned by its actor
// and not safe for concurrent use.
type Journaled struct {
	cfg         JournaledConfig
	seq         uint64
	snapshotSeq uint64
}

// NewJournaled returns a Journaled positioned at cfg.Seq.
func NewJournaled(cfg JournaledConfig) *Journaled {
	if cfg.Clock == nil {
		cfg.Clock = RealClock()
	}
	return &Journaled{cfg: cfg, seq: cfg.Seq, snapshotSeq: cfg.SnapshotSeq}
}

// Key returns the actor key.
func (j *Journaled) Key() string { return j.cfg.Key }

// Seq returns the sequence of the last committed event.
func (j *Journaled) Seq() uint64 { return j.seq }

// SinceSnapshot returns the number of events committed after the latest
// snapshot.
func (j *Journaled) SinceSnapshot() uint64 { return j.seq - j.snapshotSeq }

// Stamp returns u as Persist will commit it now: Key, ExpectSeq and each
// event's Seq (and Time, when zero) filled in; u's own Events are not
// modified. An actor that commits, in the same unit, effects derived from
// its events as journaled (a projection row carrying the sequence, outbox
// rows, views published after the commit) builds them from Stamp's events;
// Persist of the stamped unit then stamps it identically, as long as
// nothing was persisted in between.
func (j *Journaled) Stamp(u Unit) Unit {
	u.Key = j.cfg.Key
	u.ExpectSeq = j.seq
	u.Events = slices.Clone(u.Events)
	now := j.cfg.Clock.Now()
	for i := range u.Events {
		u.Events[i].Seq = j.seq + uint64(i) + 1
		if u.Events[i].Time.IsZero() {
			u.Events[i].Time = now
		}
	}
	return u
}

// Persist commits u through the Committer after filling in Key, ExpectSeq
// and each event's Seq (and Time when zero), as Stamp does. u's Reminders
// and Effects commit with the events, in the same transaction, or not at
// all. On success Seq advances; on
// any error nothing advances and the error is returned as is, so a
// *ConflictError or ErrFenced reaches the actor (which should stop or
// recover again). An error wrapping ErrOutcomeUnknown (ctx ended, or the
// commit passed its time limit, after u reached the journal) means u may
// have been committed: the actor must recover from the journal, never
// assume either way.
func (j *Journaled) Persist(ctx context.Context, u Unit) error {
	if j.cfg.Committer == nil {
		return errNoCommitter
	}
	u = j.Stamp(u)
	if err := j.cfg.Committer.Commit(ctx, u); err != nil {
		return fmt.Errorf("persist %q: %w", j.cfg.Key, err)
	}
	j.seq += uint64(len(u.Events))
	return nil
}

// PersistEvents persists events as one unit.
func (j *Journaled) PersistEvents(ctx context.Context, events ...Event) error {
	return j.Persist(ctx, Unit{Events: events})
}

// SnapshotDue reports whether SnapshotEvery events (or SnapshotInterval's
// answer) have been committed since the last snapshot.
func (j *Journaled) SnapshotDue() bool {
	if j.cfg.Snapshots == nil {
		return false
	}
	every := uint64(max(j.cfg.SnapshotEvery, 0))
	if j.cfg.SnapshotInterval != nil {
		every = j.cfg.SnapshotInterval()
	}
	return every > 0 && j.SinceSnapshot() >= every
}

// MaybeSnapshot saves a snapshot when SnapshotDue; otherwise it does
// nothing and encode is not called.
func (j *Journaled) MaybeSnapshot(ctx context.Context, encode func() ([]byte, error)) error {
	if !j.SnapshotDue() {
		return nil
	}
	return j.Snapshot(ctx, encode)
}

// Snapshot saves the state encode returns as of Seq.
func (j *Journaled) Snapshot(ctx context.Context, encode func() ([]byte, error)) error {
	if j.cfg.Snapshots == nil {
		return errors.New("actor: Journaled has no SnapshotStore")
	}
	data, err := encode()
	if err != nil {
		return fmt.Errorf("snapshot %q: encode: %w", j.cfg.Key, err)
	}
	s := Snapshot{Key: j.cfg.Key, Seq: j.seq, State: data, Time: j.cfg.Clock.Now()}
	if err := j.cfg.Snapshots.SaveSnapshot(ctx, s); err != nil {
		return fmt.Errorf("snapshot %q: %w", j.cfg.Key, err)
	}
	j.snapshotSeq = j.seq
	return nil
}
