// Package actor is a small, typed, in-process actor runtime with virtual
// actors, supervision, a central timer scheduler and event-sourced
// persistence through store interfaces. It imports only the standard
// library.
//
// # Actors
//
// An actor is a value with one method, Receive(c *Context[M], msg M),
// created by a Producer so that a restart can build a fresh instance.
// Spawn starts one and returns a *Ref[M]:
//
//	sys := actor.NewSystem(actor.WithLogger(logger))
//	defer sys.Shutdown(ctx)
//	ref, err := actor.Spawn(sys, "counter", func() actor.Actor[Msg] { return &Counter{} })
//	ref.Tell(Msg{Add: 1})
//	ctx, cancel := context.WithTimeout(ctx, time.Second) // the deadline comes with ctx
//	defer cancel()
//	n, err := actor.Ask(ctx, ref, func(r actor.Reply[int]) Msg { return Msg{Get: r} })
//
// Optional interfaces add lifecycle hooks run in the actor's own turn:
// Starter, Stopper, and for virtual actors Activator and Passivator.
//
// Tell never blocks. A message that cannot be delivered (mailbox full,
// actor stopped) becomes a dead letter: System.DeadLetters counts it and
// keeps a bounded ring of recent samples (target, reason, message type,
// trace id, time) and Metrics.DeadLetter is called. TellBlocking waits for
// mailbox room instead; Ask waits for a typed Reply.
//
// Every envelope carries a trace id: TellCtx and Ask take it from the
// context (WithTraceID), the package-level Tell propagates the sender's,
// and a message sent without one gets a fresh id when the receiver first
// asks (Context.TraceID, Context.Logger, Context.Context).
//
// # Scheduling
//
// A mailbox is put on a goroutine only while it has work, so an idle actor
// costs memory (a few hundred bytes) but no goroutine. A goroutine handles
// at most the actor's throughput (WithThroughput) messages before yielding
// the processor. All in-memory timers of a System (Context.Schedule,
// ScheduleRepeat, restart backoff, idle sweeps, reminder polls,
// System.AfterFunc) live in one min-heap served by one goroutine and one
// timer; cancellation is lazy. An actor's timers die with the instance that
// set them: after a stop, restart or passivation no tick from the old
// instance is delivered.
//
// # Supervision
//
// A panic in Receive or an error from Started is a failure. The actor's
// Supervisor (WithSupervisor, default DefaultSupervisor) decides: Resume,
// Restart (after a delay; RestartPolicy gives exponential backoff with
// jitter, a failure-rate window and a restart limit), Stop, or Escalate to
// the parent. AllForOne applies a decision to all siblings. Failures,
// restarts and stops are observable through WithLifecycleHook and Metrics.
//
// # Virtual actors
//
// A Kind addresses actors by key. Get or Tell activates the key's actor on
// demand, exactly once per key per System; it passivates after IdleTimeout
// without messages (never during a message) after its Passivate hook
// persisted it. Messages that arrive while it passivates go to the next
// activation, in order. EnableReminders delivers durable reminders from a
// ReminderStore, activating passivated actors.
//
// # Persistence
//
// Journal, SnapshotStore and ReminderStore (persist.go) are implemented by
// the store engines and by MemoryStore for tests. Every method takes a
// context and returns an error; the runtime returns or reports each store
// error and never drops one. Recover rebuilds state from the latest
// snapshot plus later events, falling back to the whole journal when the
// snapshot is corrupt. A Committer group-commits units of many actors in
// one Journal.Commit; Journaled fills in sequence numbers per actor
// (Stamp shows them before the commit, for effects that carry them) and
// snapshots every N events, or at a cadence the actor's state decides
// (SnapshotInterval).
//
// # Concurrency properties
//
//   - Ordering: messages from one sender to one receiver are processed in
//     the order sent, where "one sender" means one goroutine (or one actor
//     turn) calling Tell, TellCtx, TellBlocking or Ask on refs of the same
//     actor (or, for virtual actors, of the same kind and key). This holds
//     across passivation: messages queued when a virtual actor passivates
//     are handed to its next activation ahead of any later message.
//     Messages from different senders interleave in arbitrary order. Timer
//     messages are ordered by due time, then by scheduling order, relative
//     to each other only.
//   - Processing: an actor handles one message at a time; Receive and the
//     hooks of one actor never run concurrently, and each turn
//     happens-before the next, so actor state needs no locks.
//   - Delivery in memory is at most once. A successful Tell means the
//     message was enqueued; it is processed unless the actor stops first
//     without draining (WithDrainOnStop), the process dies, or its Receive
//     panics on it (the failing message is not retried). A refused message
//     is a dead letter, never a silent drop; a timer that fires for an
//     instance that is gone is discarded, not dead-lettered.
//   - Persistence adds durability of state, not exactly-once processing.
//     An event is durable once Journaled.Persist (Committer.Commit) has
//     returned nil, and Recover rebuilds exactly the committed events in
//     sequence order. In-memory messages are not durable: a message whose
//     effects were not committed is lost with the process, so an input that
//     must survive a crash has to be stored (for example in an inbox) before
//     it is acknowledged, and be re-delivered at start-up. A side effect
//     performed after a commit may be repeated after a crash unless it is
//     idempotent or fenced. ExpectSeq makes two writers of one key conflict
//     (*ConflictError) instead of interleaving, and ErrFenced tells a stale
//     owner to stop. Durable reminders are delivered at least once: again
//     after RefireAfter until the actor deletes or moves them, and again
//     after a process restart.
package actor
