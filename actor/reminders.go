package actor

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// ReminderOptions configures a kind's durable-reminder poller.
type ReminderOptions struct {
	// PollInterval is the longest time between polls (default 1 s). Use
	// Kind.WakeRemindersAt to be woken earlier for a reminder due sooner.
	PollInterval time.Duration
	// Limit caps the reminders read per poll (default 256); a full page
	// that delivered something is followed by another poll at once.
	Limit int
	// RefireAfter keeps a delivered (key, name, due) from being delivered
	// again for this long (default 30 s), giving the actor time to delete
	// or move it in its next commit.
	RefireAfter time.Duration
	// MaxBackoff caps the retry delay after a store error (default 1 min);
	// retries start at PollInterval and double.
	MaxBackoff time.Duration
}

// ReminderStats counts a kind's reminder polls.
type ReminderStats struct {
	Polls     uint64 // DueReminders calls
	Errors    uint64 // failed DueReminders calls
	Delivered uint64 // reminders delivered to actors
}

type firedKey struct {
	key, name string
	due       int64
}

// reminderPoller reads due reminders and delivers them as messages. Polls
// are triggered by the central scheduler and run on a short-lived goroutine
// (store I/O must not block the scheduler); at most one poll runs at a
// time.
type reminderPoller[M any] struct {
	k      *Kind[M]
	store  ReminderStore
	msgFor func(Reminder) M
	opts   ReminderOptions

	mu        sync.Mutex
	stopped   bool
	polling   bool
	again     bool
	wantAt    time.Time // earliest wake requested during a poll
	pending   CancelFunc
	pendingAt time.Time
	failures  int

	fired map[firedKey]time.Time // owned by the polling goroutine

	polls, errors, delivered atomic.Uint64
}

// EnableReminders starts delivering durable reminders of this kind:
// msgFor(r) is sent to actor r.Key (activating it if passivated) once r is
// due. The actor is expected to delete or move the reminder, typically
// through Unit.Reminders in its next commit; the same (key, name, due) is
// not delivered again within RefireAfter. A DueReminders error is logged,
// counted (Metrics.StoreError "due_reminders") and retried with backoff.
// Calling it again replaces the previous poller.
func (k *Kind[M]) EnableReminders(store ReminderStore, msgFor func(Reminder) M, opts ReminderOptions) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Limit <= 0 {
		opts.Limit = 256
	}
	if opts.RefireAfter <= 0 {
		opts.RefireAfter = 30 * time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = time.Minute
	}
	r := &reminderPoller[M]{k: k, store: store, msgFor: msgFor, opts: opts, fired: map[firedKey]time.Time{}}
	k.remMu.Lock()
	if k.rem != nil {
		k.rem.stop()
	}
	if k.closed.Load() {
		k.remMu.Unlock()
		return
	}
	k.rem = r
	k.remMu.Unlock()
	r.wakeAt(k.sys.clock.Now())
}

// NudgeReminders polls for due reminders now instead of at the next
// interval.
func (k *Kind[M]) NudgeReminders() { k.WakeRemindersAt(k.sys.clock.Now()) }

// WakeRemindersAt makes the poller run no later than t; call it after
// setting a reminder due before the next regular poll.
func (k *Kind[M]) WakeRemindersAt(t time.Time) {
	k.remMu.Lock()
	r := k.rem
	k.remMu.Unlock()
	if r != nil {
		r.wakeAt(t)
	}
}

// ReminderStats returns the poller's counters.
func (k *Kind[M]) ReminderStats() ReminderStats {
	k.remMu.Lock()
	r := k.rem
	k.remMu.Unlock()
	if r == nil {
		return ReminderStats{}
	}
	return ReminderStats{Polls: r.polls.Load(), Errors: r.errors.Load(), Delivered: r.delivered.Load()}
}

func (r *reminderPoller[M]) wakeAt(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if r.polling {
		if !t.After(r.k.sys.clock.Now()) {
			r.again = true
		} else if r.wantAt.IsZero() || t.Before(r.wantAt) {
			r.wantAt = t
		}
		return
	}
	r.scheduleLocked(t)
}

func (r *reminderPoller[M]) scheduleLocked(t time.Time) {
	if r.stopped {
		return
	}
	if r.pending != nil {
		if !t.Before(r.pendingAt) {
			return
		}
		r.pending()
	}
	r.pendingAt = t
	r.pending = r.k.sys.sched.add(t, 0, nil, 0, r.trigger)
}

// trigger runs on the scheduler goroutine.
func (r *reminderPoller[M]) trigger() {
	r.mu.Lock()
	if r.stopped || r.polling {
		r.mu.Unlock()
		return
	}
	r.pending = nil
	r.polling = true
	r.mu.Unlock()
	if !r.k.sys.startBackground(r.poll) {
		r.mu.Lock()
		r.polling = false
		r.mu.Unlock()
	}
}

func (r *reminderPoller[M]) poll() {
	ctx := r.k.sys.bgCtx
	for {
		now := r.k.sys.clock.Now()
		rs, err := r.store.DueReminders(ctx, now, r.opts.Limit)
		r.polls.Add(1)
		if err != nil {
			r.mu.Lock()
			r.polling = false
			r.again = false
			if ctx.Err() != nil || r.stopped {
				r.mu.Unlock()
				return // shutting down
			}
			r.failures++
			delay := Backoff{Base: r.opts.PollInterval, Max: r.opts.MaxBackoff}.Delay(r.failures-1, 0)
			r.scheduleLocked(now.Add(delay))
			r.mu.Unlock()
			r.errors.Add(1)
			r.k.sys.metrics.StoreError("due_reminders", err)
			r.k.sys.logger.Error("actor: reminder poll failed", "kind", r.k.name, "error", err, "retry_in", delay)
			return
		}
		delivered := r.deliver(rs, now)
		r.mu.Lock()
		r.failures = 0
		if !r.stopped && (r.again || (len(rs) == r.opts.Limit && delivered > 0)) {
			r.again = false
			r.mu.Unlock()
			continue
		}
		r.polling = false
		next := now.Add(r.opts.PollInterval)
		if !r.wantAt.IsZero() && r.wantAt.Before(next) {
			next = r.wantAt
		}
		r.wantAt = time.Time{}
		r.scheduleLocked(next)
		r.mu.Unlock()
		return
	}
}

func (r *reminderPoller[M]) deliver(rs []Reminder, now time.Time) int {
	n := 0
	for _, rem := range rs {
		fk := firedKey{key: rem.Key, name: rem.Name, due: rem.Due.UnixNano()}
		if at, ok := r.fired[fk]; ok && now.Sub(at) < r.opts.RefireAfter {
			continue
		}
		msg, err := r.message(rem)
		if err != nil {
			r.k.sys.logger.Error("actor: reminder message builder panicked", "kind", r.k.name, "actor", rem.Key, "reminder", rem.Name, "error", err)
			continue
		}
		if r.k.Tell(rem.Key, msg) {
			r.fired[fk] = now
			r.delivered.Add(1)
			n++
		}
	}
	for fk, at := range r.fired {
		if now.Sub(at) >= r.opts.RefireAfter {
			delete(r.fired, fk)
		}
	}
	return n
}

func (r *reminderPoller[M]) message(rem Reminder) (msg M, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return r.msgFor(rem), nil
}

func (r *reminderPoller[M]) stop() {
	r.mu.Lock()
	r.stopped = true
	if r.pending != nil {
		r.pending()
		r.pending = nil
	}
	r.mu.Unlock()
}
