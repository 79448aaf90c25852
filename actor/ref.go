package actor

import (
	"context"
	"errors"
	"fmt"
)

// Ref addresses an actor. A Ref from Spawn names one actor for its whole
// life; a Ref from Kind.Get names a key of a kind and stays valid across
// passivation and reactivation. Refs are safe for concurrent use.
type Ref[M any] struct {
	p   *process[M] // nil for a virtual ref
	k   *Kind[M]    // set for a virtual ref
	key string
}

// Key returns the actor's key.
func (r *Ref[M]) Key() string { return r.key }

// Tell enqueues msg without blocking. It returns false when the message
// became a dead letter (mailbox full, actor stopped).
func (r *Ref[M]) Tell(msg M) bool {
	return r.send(envelope[M]{msg: msg}) == enqOK
}

// TellCtx is Tell carrying ctx's trace id.
func (r *Ref[M]) TellCtx(ctx context.Context, msg M) bool {
	return r.send(envelope[M]{msg: msg, trace: TraceID(ctx)}) == enqOK
}

func (r *Ref[M]) send(e envelope[M]) enqResult {
	if r.k != nil {
		return r.k.deliver(r.key, e)
	}
	res := r.p.enqueue(e)
	if res != enqOK {
		r.p.sys.deadLetter(r.key, res.reason(), any(e.msg), e.trace)
	}
	return res
}

// TellBlocking enqueues msg, waiting for mailbox room. It returns ctx's
// error if ctx ends first (the message was not enqueued), or ErrStopped if
// the actor stopped (the message is a dead letter).
func (r *Ref[M]) TellBlocking(ctx context.Context, msg M) error {
	e := envelope[M]{msg: msg, trace: TraceID(ctx)}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := r.p
		if r.k != nil {
			if p = r.k.activate(r.key); p == nil {
				r.k.sys.deadLetter(r.key, ReasonStopped, any(msg), e.trace)
				return ErrStopped
			}
		}
		res, room := p.offer(e, true)
		switch res {
		case enqOK:
			return nil
		case enqMoved:
			continue
		case enqStopped:
			p.sys.deadLetter(r.key, ReasonStopped, any(msg), e.trace)
			return ErrStopped
		}
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Stop stops the actor asynchronously (gracefully, per its drain option);
// Done tells when it has finished. For a virtual ref it passivates the
// current activation, if any.
func (r *Ref[M]) Stop() {
	if r.k != nil {
		if p := r.k.lookup(r.key); p != nil {
			p.requestPassivate(true)
		}
		return
	}
	r.p.requestStop(false)
}

// Done is closed when the actor has fully stopped (children stopped,
// Stopped hook run). A virtual ref's Done closes when its system has shut
// down.
func (r *Ref[M]) Done() <-chan struct{} {
	if r.k != nil {
		return r.k.done
	}
	return r.p.doneCh()
}

// Reply is the one-shot answer channel of an Ask. Send never blocks, so an
// actor can answer without caring whether the asker still waits.
type Reply[R any] struct {
	ch chan R
}

// Send delivers v to the asker; sends after the first, and sends on a zero
// Reply, are dropped.
func (r Reply[R]) Send(v R) {
	if r.ch == nil {
		return
	}
	select {
	case r.ch <- v:
	default:
	}
}

// Ask sends the message build makes around a fresh Reply and waits for
// the answer, as long as ctx lets it: the deadline comes with ctx
// (context.WithTimeout), as everywhere else in Go. It returns an error
// matching both ErrTimeout and context.DeadlineExceeded when ctx's
// deadline passes, ctx's error when ctx is canceled, ErrStopped if the
// actor stopped or was stopped, ErrMailboxFull if the message was refused.
// The message carries ctx's trace id.
func Ask[M, R any](ctx context.Context, r *Ref[M], build func(Reply[R]) M) (R, error) {
	var zero R
	ch := make(chan R, 1)
	msg := build(Reply[R]{ch: ch})
	if res := r.send(envelope[M]{msg: msg, trace: TraceID(ctx)}); res != enqOK {
		return zero, res.err()
	}
	var stopped <-chan struct{}
	if r.p != nil {
		stopped = r.p.doneCh()
	}
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return zero, fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
		}
		return zero, ctx.Err()
	case <-stopped:
		select {
		case v := <-ch:
			return v, nil
		default:
			return zero, ErrStopped
		}
	}
}
