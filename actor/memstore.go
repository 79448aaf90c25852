package actor

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"time"
)

// MemoryFaults injects store failures into a MemoryStore for tests. A nil
// field injects nothing.
type MemoryFaults struct {
	// Commit fails a whole Commit call (nothing is written).
	Commit func(units []Unit) error
	// Unit fails one unit of a Commit (the others still commit).
	Unit func(u Unit) error
	// Load fails Journal.Load for a key.
	Load func(key string) error
	// LoadSnapshot and SaveSnapshot fail snapshot reads and writes.
	LoadSnapshot func(key string) error
	SaveSnapshot func(s Snapshot) error
	// DueReminders fails a reminder poll.
	DueReminders func() error
}

type memSnapshot struct {
	snap Snapshot
	sum  uint32
}

// MemoryStore is an in-memory Journal, SnapshotStore and ReminderStore for
// tests and examples. It keeps the contracts of the real engines: Commit
// checks ExpectSeq per unit and fails only the conflicting unit, snapshots
// are checksummed (CorruptSnapshot simulates bit rot, which LoadSnapshot
// then reports as ErrCorruptSnapshot), and Effects are accepted and recorded
// rather than applied.
type MemoryStore struct {
	mu        sync.Mutex
	journals  map[string][]Event
	snaps     map[string]memSnapshot
	reminders map[string]map[string]time.Time
	units     []Unit
	commits   int
	faults    MemoryFaults
}

var (
	_ Journal       = (*MemoryStore)(nil)
	_ SnapshotStore = (*MemoryStore)(nil)
	_ ReminderStore = (*MemoryStore)(nil)
)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{
		journals:  map[string][]Event{},
		snaps:     map[string]memSnapshot{},
		reminders: map[string]map[string]time.Time{},
	}
}

// SetFaults replaces the injected faults.
func (m *MemoryStore) SetFaults(f MemoryFaults) {
	m.mu.Lock()
	m.faults = f
	m.mu.Unlock()
}

// Commit implements Journal. Units are applied in order, so a later unit of
// the same key sees an earlier one's events.
func (m *MemoryStore) Commit(ctx context.Context, units []Unit) ([]error, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	if m.faults.Commit != nil {
		if err := m.faults.Commit(units); err != nil {
			return nil, err
		}
	}
	results := make([]error, len(units))
	for i, u := range units {
		if m.faults.Unit != nil {
			if err := m.faults.Unit(u); err != nil {
				results[i] = err
				continue
			}
		}
		journal := m.journals[u.Key]
		last := uint64(len(journal))
		if u.ExpectSeq != last {
			results[i] = &ConflictError{Key: u.Key, Expected: u.ExpectSeq, Actual: last}
			continue
		}
		rec := Unit{Key: u.Key, ExpectSeq: u.ExpectSeq}
		for j, ev := range u.Events {
			ev.Seq = u.ExpectSeq + uint64(j) + 1
			ev.Data = slices.Clone(ev.Data)
			journal = append(journal, ev)
			rec.Events = append(rec.Events, ev)
		}
		m.journals[u.Key] = journal
		for _, op := range u.Reminders {
			m.applyReminderLocked(u.Key, op)
		}
		rec.Reminders = slices.Clone(u.Reminders)
		rec.Effects = slices.Clone(u.Effects)
		m.units = append(m.units, rec)
	}
	return results, nil
}

func (m *MemoryStore) applyReminderLocked(key string, op ReminderOp) {
	if op.Delete {
		if rs := m.reminders[key]; rs != nil {
			delete(rs, op.Name)
			if len(rs) == 0 {
				delete(m.reminders, key)
			}
		}
		return
	}
	rs := m.reminders[key]
	if rs == nil {
		rs = map[string]time.Time{}
		m.reminders[key] = rs
	}
	rs[op.Name] = op.Due
}

// Load implements Journal. fn runs without the store's lock held.
func (m *MemoryStore) Load(ctx context.Context, key string, afterSeq uint64, fn func(Event) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if m.faults.Load != nil {
		if err := m.faults.Load(key); err != nil {
			m.mu.Unlock()
			return err
		}
	}
	var evs []Event
	if j := m.journals[key]; uint64(len(j)) > afterSeq {
		evs = slices.Clone(j[afterSeq:])
	}
	m.mu.Unlock()
	for _, ev := range evs {
		if err := fn(ev); err != nil {
			return err
		}
	}
	return nil
}

func snapshotSum(s Snapshot) uint32 {
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], s.Seq)
	h := crc32.NewIEEE()
	h.Write(seq[:])
	h.Write(s.State)
	return h.Sum32()
}

// SaveSnapshot implements SnapshotStore.
func (m *MemoryStore) SaveSnapshot(ctx context.Context, s Snapshot) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.faults.SaveSnapshot != nil {
		if err := m.faults.SaveSnapshot(s); err != nil {
			return err
		}
	}
	s.State = slices.Clone(s.State)
	m.snaps[s.Key] = memSnapshot{snap: s, sum: snapshotSum(s)}
	return nil
}

// LoadSnapshot implements SnapshotStore.
func (m *MemoryStore) LoadSnapshot(ctx context.Context, key string) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.faults.LoadSnapshot != nil {
		if err := m.faults.LoadSnapshot(key); err != nil {
			return Snapshot{}, err
		}
	}
	ms, ok := m.snaps[key]
	if !ok {
		return Snapshot{}, ErrNotFound
	}
	if snapshotSum(ms.snap) != ms.sum {
		return Snapshot{}, fmt.Errorf("snapshot %q: %w", key, ErrCorruptSnapshot)
	}
	s := ms.snap
	s.State = slices.Clone(s.State)
	return s, nil
}

// DeleteSnapshot implements SnapshotStore.
func (m *MemoryStore) DeleteSnapshot(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.snaps, key)
	m.mu.Unlock()
	return nil
}

// CorruptSnapshot flips one bit of key's stored snapshot without updating
// its checksum; it reports whether there was a snapshot to corrupt.
func (m *MemoryStore) CorruptSnapshot(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms, ok := m.snaps[key]
	if !ok {
		return false
	}
	if len(ms.snap.State) == 0 {
		ms.snap.Seq ^= 1
	} else {
		ms.snap.State[len(ms.snap.State)/2] ^= 0x01
	}
	m.snaps[key] = ms
	return true
}

// SetReminder implements ReminderStore.
func (m *MemoryStore) SetReminder(ctx context.Context, r Reminder) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	m.applyReminderLocked(r.Key, ReminderOp{Name: r.Name, Due: r.Due})
	m.mu.Unlock()
	return nil
}

// DeleteReminder implements ReminderStore.
func (m *MemoryStore) DeleteReminder(ctx context.Context, key, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	m.applyReminderLocked(key, ReminderOp{Name: name, Delete: true})
	m.mu.Unlock()
	return nil
}

// DueReminders implements ReminderStore: earliest first, ties by key and
// name.
func (m *MemoryStore) DueReminders(ctx context.Context, before time.Time, limit int) ([]Reminder, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.faults.DueReminders != nil {
		if err := m.faults.DueReminders(); err != nil {
			return nil, err
		}
	}
	var out []Reminder
	for key, rs := range m.reminders {
		for name, due := range rs {
			if !due.After(before) {
				out = append(out, Reminder{Key: key, Name: name, Due: due})
			}
		}
	}
	slices.SortFunc(out, func(a, b Reminder) int {
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
		if a.Key != b.Key {
			if a.Key < b.Key {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		} else if a.Name > b.Name {
			return 1
		}
		return 0
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Reminders returns key's reminders, earliest first.
func (m *MemoryStore) Reminders(key string) []Reminder {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Reminder
	for name, due := range m.reminders[key] {
		out = append(out, Reminder{Key: key, Name: name, Due: due})
	}
	slices.SortFunc(out, func(a, b Reminder) int { return a.Due.Compare(b.Due) })
	return out
}

// CommittedUnits returns every unit committed so far, in commit order, with
// the sequence numbers the store assigned and the Effects it recorded.
func (m *MemoryStore) CommittedUnits() []Unit {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.units)
}

// Effects returns the effects committed for key, in commit order.
func (m *MemoryStore) Effects(key string) []any {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []any
	for _, u := range m.units {
		if u.Key == key {
			out = append(out, u.Effects...)
		}
	}
	return out
}

// CommitCalls returns how many times Commit was called.
func (m *MemoryStore) CommitCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.commits
}

// LastSeq returns the sequence of key's last event (0 for none).
func (m *MemoryStore) LastSeq(key string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return uint64(len(m.journals[key]))
}
