package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// While Stop waits for the tracker to commit the outcomes of in-flight
// sends, a database that does not answer at all (the primary died and no
// standby is promoted yet, docs/deploy.md) makes every wait end only at the
// drain timeout. watchStore pings the store during Stop; once it has not
// answered for noDatabaseAfter, Stop's context is canceled so the process
// exits at once. Nothing is lost by that: a webhook is acknowledged only
// after its inbox row committed, and a send is claimed durably before the
// provider call, so an outcome that cannot be recorded leaves a claim that
// the next owner marks unconfirmed (docs/design.md, never twice).

// noDatabaseAfter is how long the store may fail every ping during Stop
// before Stop stops waiting for it; pingEvery spaces the pings.
var (
	noDatabaseAfter = 5 * time.Second
	pingEvery       = 500 * time.Millisecond
)

// errNoDatabase is Stop's report when it gave up on the store.
var errNoDatabase = errors.New("stopped without a database: no database answers; outcomes not yet recorded are lost and their recipients become unconfirmed on the next start")

// watchStore returns ctx canceled once the store has failed every ping for
// noDatabaseAfter, gaveUp reporting whether that happened, and end to stop
// watching.
func (s *Server) watchStore(parent context.Context) (ctx context.Context, gaveUp func() bool, end func()) {
	ctx, cancel := context.WithCancel(parent)
	var gave atomic.Bool
	if s.st == nil {
		return ctx, gave.Load, cancel
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var failingSince time.Time
		t := time.NewTicker(pingEvery)
		defer t.Stop()
		for {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			err := s.st.Ping(pctx)
			pcancel()
			switch {
			case ctx.Err() != nil:
				return
			case err == nil:
				failingSince = time.Time{}
			case failingSince.IsZero():
				failingSince = time.Now()
			case time.Since(failingSince) >= noDatabaseAfter:
				gave.Store(true)
				s.cfg.Logger.Error("no database answers: stopping without waiting for commits; sends claimed but not recorded become unconfirmed on the next start",
					"failing_for_ms", time.Since(failingSince).Milliseconds(), "err", err)
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return ctx, gave.Load, func() { once.Do(func() { cancel(); <-done }) }
}

// closeStore closes the store; after Stop gave up on the database it waits
// at most a second (closing a pool waits for connections still being
// dialled to a host that does not answer; the process is exiting).
func (s *Server) closeStore(gaveUp bool) error {
	if !gaveUp {
		return s.st.Close()
	}
	done := make(chan error, 1)
	go func() { done <- s.st.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		return nil
	}
}
