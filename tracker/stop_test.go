package tracker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

func TestStopReturnsByItsDeadlineWithABlockedSweep(t *testing.T) {
	e, ss := newStuckEnv(t, func(s *stuckStore) { s.pending = true }, nil)
	if got := <-ss.entered; got != "pending" {
		t.Fatalf("blocked in %s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := within(t, "Stop", func() error { return e.tr.Stop(ctx) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with a sweep stuck in the store: %v, want a deadline error", err)
	}
}

func TestStopReturnsByItsDeadlineWithABlockedProviderCall(t *testing.T) {
	e := newEnv(t, nil)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() { close(release) })
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		entered <- struct{}{}
		<-release // a provider call that ignores its context
		return crewcast.SendResult{MessageID: id}, nil
	}
	e.create(1, crewcast.ModeIndividual)
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := within(t, "Stop", func() error { return e.tr.Stop(ctx) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop with a provider call that never returns: %v, want a deadline error", err)
	}
}
