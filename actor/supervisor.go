package actor

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Directive is what a Supervisor decides to do with a failed actor.
type Directive uint8

// Directives. The message being processed when the actor failed is not
// retried under any of them.
const (
	// Restart replaces the instance with a fresh one from the producer
	// (after Decision.Delay); queued messages wait and are kept.
	Restart Directive = iota
	// Resume keeps the instance and its state and goes on with the next
	// message.
	Resume
	// Stop terminates the actor without draining; queued messages become
	// dead letters (a virtual actor's queued messages go to its next
	// activation instead).
	Stop
	// Escalate stops the actor and fails its parent with an
	// *EscalatedError, which the parent's own supervisor then decides on.
	// A root actor's escalation is a Stop.
	Escalate
)

// String names the directive.
func (d Directive) String() string {
	switch d {
	case Restart:
		return "restart"
	case Resume:
		return "resume"
	case Stop:
		return "stop"
	case Escalate:
		return "escalate"
	}
	return fmt.Sprintf("directive(%d)", d)
}

// Scope says which actors a Restart or Stop decision applies to.
type Scope uint8

const (
	// OneForOne applies the decision to the failed actor only.
	OneForOneScope Scope = iota
	// AllForOne applies it to the failed actor and all its siblings (the
	// other children of its parent); root actors have no siblings.
	AllForOneScope
)

// Failure describes one failure for a Supervisor to judge.
type Failure struct {
	Key  string
	Kind string // "" for actors made with Spawn or SpawnChild
	Err  error  // a *PanicError for a panic, the hook's error otherwise
	// Restarts counts the restarts this actor has had so far.
	Restarts int
	// Failures holds the actor's recent failure times, oldest first,
	// including this one (at most 64 are kept).
	Failures []time.Time
	Now      time.Time
}

// Decision is a Supervisor's verdict.
type Decision struct {
	Directive Directive
	// Delay postpones a Restart; messages queue meanwhile.
	Delay time.Duration
	Scope Scope
}

// Supervisor decides what happens to an actor whose Receive panicked or
// whose Started hook returned an error. Decide runs on the failed actor's
// goroutine and must not block; a panic in Decide is treated as Stop.
type Supervisor interface {
	Decide(f Failure) Decision
}

// SupervisorFunc adapts a function to Supervisor.
type SupervisorFunc func(f Failure) Decision

// Decide calls f.
func (f SupervisorFunc) Decide(x Failure) Decision { return f(x) }

// Backoff computes exponential restart delays: Base, 2·Base, 4·Base, …
// capped at Max, then spread by ±Jitter (a fraction, e.g. 0.2) so that
// actors failing together do not restart together.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration // 0 = no cap
	Jitter float64       // in [0, 1)
}

// Delay returns the delay before restart number attempt (0-based); rnd is a
// uniform sample in [0, 1) that places the result within the jitter band
// [d·(1−Jitter), d·(1+Jitter)), where d = min(Base·2^attempt, Max).
func (b Backoff) Delay(attempt int, rnd float64) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	d := b.Base
	for i := 0; i < attempt; i++ {
		if b.Max > 0 && d >= b.Max {
			break
		}
		if d > time.Duration(1<<62)/2 { // avoid overflow on absurd attempts
			break
		}
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if b.Jitter > 0 {
		factor := 1 - b.Jitter + 2*b.Jitter*rnd
		d = time.Duration(float64(d) * factor)
	}
	return d
}

// RestartPolicy is the standard Supervisor: restart with exponential
// backoff, and stop the actor once it has restarted MaxRestarts times or
// failed more than MaxFailures times within Window.
type RestartPolicy struct {
	Backoff Backoff
	// MaxRestarts stops the actor when it has already been restarted this
	// many times; 0 means no limit.
	MaxRestarts int
	// Window and MaxFailures form the failure-rate limit: more than
	// MaxFailures failures within Window stops the actor. When Window is
	// set, the backoff attempt is the number of earlier failures within
	// Window, so the delay falls back to Base once the actor has been
	// healthy for a Window; otherwise it is the total restart count.
	Window      time.Duration
	MaxFailures int
	// Classify, when set, picks the directive for an error; the limits and
	// backoff above apply only when it returns Restart.
	Classify func(err error) Directive
	// Rand returns uniform samples in [0, 1) for jitter; nil uses
	// math/rand/v2. It must be safe for concurrent use if the policy is
	// shared by actors.
	Rand func() float64
}

// DefaultSupervisor is used when none is configured: restart after 10 ms,
// doubling to at most 5 s with 20 % jitter, and stop after more than 20
// failures within a minute.
var DefaultSupervisor Supervisor = RestartPolicy{
	Backoff:     Backoff{Base: 10 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2},
	Window:      time.Minute,
	MaxFailures: 20,
}

// Decide implements Supervisor.
func (p RestartPolicy) Decide(f Failure) Decision {
	if p.Classify != nil {
		if d := p.Classify(f.Err); d != Restart {
			return Decision{Directive: d}
		}
	}
	if p.MaxRestarts > 0 && f.Restarts >= p.MaxRestarts {
		return Decision{Directive: Stop}
	}
	attempt := f.Restarts
	if p.Window > 0 {
		recent := 0
		cutoff := f.Now.Add(-p.Window)
		for _, t := range f.Failures {
			if t.After(cutoff) {
				recent++
			}
		}
		if p.MaxFailures > 0 && recent > p.MaxFailures {
			return Decision{Directive: Stop}
		}
		attempt = recent - 1
		if attempt < 0 {
			attempt = 0
		}
	}
	rnd := 0.5
	if p.Backoff.Jitter > 0 {
		if p.Rand != nil {
			rnd = p.Rand()
		} else {
			rnd = rand.Float64()
		}
	}
	return Decision{Directive: Restart, Delay: p.Backoff.Delay(attempt, rnd)}
}

// AllForOne decorates s so that its Restart and Stop decisions apply to the
// failed actor's siblings too (Erlang's all_for_one), for children whose
// states only make sense together.
func AllForOne(s Supervisor) Supervisor {
	return SupervisorFunc(func(f Failure) Decision {
		d := s.Decide(f)
		if d.Directive == Restart || d.Directive == Stop {
			d.Scope = AllForOneScope
		}
		return d
	})
}

// PanicError is the failure recorded when Receive or a hook panics.
type PanicError struct {
	Value any
	Stack []byte
}

// Error reports the panic value.
func (e *PanicError) Error() string { return fmt.Sprintf("actor panicked: %v", e.Value) }

// EscalatedError is the failure a parent receives when a child's supervisor
// escalates.
type EscalatedError struct {
	Child string
	Err   error
}

// Error names the child and its failure.
func (e *EscalatedError) Error() string {
	return fmt.Sprintf("child %s escalated: %v", e.Child, e.Err)
}

// Unwrap returns the child's failure.
func (e *EscalatedError) Unwrap() error { return e.Err }
