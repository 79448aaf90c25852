package actor

import "time"

// Metrics receives the runtime's counters so a service can export them (for
// example with Prometheus) without this package importing an exporter.
// Calls happen on hot paths (once per processed batch, not per message),
// so implementations must be cheap and safe for concurrent use. Embed
// NopMetrics to implement only some methods.
//
// The kind label is the virtual-actor kind's name, or "" for actors created
// with Spawn or SpawnChild; per-actor labels would be unbounded.
type Metrics interface {
	// ActorActivated counts an actor that came into memory (spawned or
	// activated).
	ActorActivated(kind string)
	// ActorPassivated counts a virtual actor that left memory after its
	// Passivate hook succeeded.
	ActorPassivated(kind string)
	// ActorStopped counts an actor that terminated for any other reason.
	// Each ActorPassivated or ActorStopped pairs with an earlier
	// ActorActivated: an actor that never started successfully reports
	// neither.
	ActorStopped(kind string)
	// ActorRestarted counts a supervisor restart.
	ActorRestarted(kind string)
	// MessagesProcessed counts n messages handled in one batch.
	MessagesProcessed(kind string, n int)
	// MailboxDepth samples an actor's queue length at the start of a batch.
	MailboxDepth(kind string, depth int)
	// DeadLetter counts a message that could not be delivered.
	DeadLetter(reason string)
	// TimerFired counts a scheduler callback that ran.
	TimerFired()
	// TimerPanicked counts a scheduler callback that panicked (recovered).
	TimerPanicked()
	// TimersPending samples the scheduler's heap size.
	TimersPending(n int)
	// CommitBatch records one Journal.Commit call: units in it, its
	// duration and its batch-level error.
	CommitBatch(units int, latency time.Duration, err error)
	// StoreError counts a store call that failed outside a commit (op names
	// it, e.g. "due_reminders", "passivate").
	StoreError(op string, err error)
}

// NopMetrics discards everything; it is the default and a base to embed.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

// ActorActivated does nothing.
func (NopMetrics) ActorActivated(string) {}

// ActorPassivated does nothing.
func (NopMetrics) ActorPassivated(string) {}

// ActorStopped does nothing.
func (NopMetrics) ActorStopped(string) {}

// ActorRestarted does nothing.
func (NopMetrics) ActorRestarted(string) {}

// MessagesProcessed does nothing.
func (NopMetrics) MessagesProcessed(string, int) {}

// MailboxDepth does nothing.
func (NopMetrics) MailboxDepth(string, int) {}

// DeadLetter does nothing.
func (NopMetrics) DeadLetter(string) {}

// TimerFired does nothing.
func (NopMetrics) TimerFired() {}

// TimerPanicked does nothing.
func (NopMetrics) TimerPanicked() {}

// TimersPending does nothing.
func (NopMetrics) TimersPending(int) {}

// CommitBatch does nothing.
func (NopMetrics) CommitBatch(int, time.Duration, error) {}

// StoreError does nothing.
func (NopMetrics) StoreError(string, error) {}
