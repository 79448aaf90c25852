package tracker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// stuckStore wedges chosen calls, ignoring their contexts, like a store
// waiting on a lock that is never released: a call blocks until release is
// closed. entered receives once per blocked call.
type stuckStore struct {
	store.Store
	commit, inbox, pending bool
	entered                chan string
	release                chan struct{}
}

func (s *stuckStore) block(what string, on bool) {
	if !on {
		return
	}
	select {
	case s.entered <- what:
	default:
	}
	<-s.release
}

func (s *stuckStore) Commit(ctx context.Context, units []actor.Unit) ([]error, error) {
	s.block("commit", s.commit)
	return s.Store.Commit(ctx, units)
}

func (s *stuckStore) InsertInbox(ctx context.Context, entries []store.InboxEntry) ([]bool, error) {
	s.block("inbox", s.inbox)
	return s.Store.InsertInbox(ctx, entries)
}

// IngestInbox is the path webhook ingest takes (InsertInbox with the
// replay record): wedged with the inbox.
func (s *stuckStore) IngestInbox(ctx context.Context, entries []store.InboxEntry) ([]store.InboxResult, error) {
	s.block("inbox", s.inbox)
	return s.Store.IngestInbox(ctx, entries)
}

func (s *stuckStore) PendingInbox(ctx context.Context, after store.InboxRef, limit int) ([]store.InboxEntry, error) {
	s.block("pending", s.pending)
	return s.Store.PendingInbox(ctx, after, limit)
}

// newStuckEnv starts a tracker over a store wedged as configured, with a
// short commit limit. The store is released when the test ends, before the
// tracker stops.
func newStuckEnv(t *testing.T, configure func(*stuckStore), mod func(*Config)) (*env, *stuckStore) {
	e := &env{t: t, path: filepath.Join(t.TempDir(), "crewcast.db"), prov: &fakeProvider{}}
	e.clk = actor.NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	base := openStore(t, e.path, e.clk.Now)
	t.Cleanup(func() { _ = base.Close() })
	ss := &stuckStore{Store: base, entered: make(chan string, 16), release: make(chan struct{})}
	configure(ss)
	e.st = ss
	e.tr = e.start(func(c *Config) {
		c.CommitTimeout = 50 * time.Millisecond
		if mod != nil {
			mod(c)
		}
	})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(ss.release) }) })
	return e, ss
}

// within runs fn and fails the test if it does not return in time: the
// calls under test used to hang.
func within[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10s", what)
	}
	panic("unreachable")
}

func TestIngestAgainstAStuckStoreFailsWithinTheCommitLimit(t *testing.T) {
	e, _ := newStuckEnv(t, func(s *stuckStore) { s.inbox = true }, nil)
	ev := crewcast.Event{Provider: "fake", EventID: "stuck-1", Kind: crewcast.KindStatus, MessageID: "m-1", From: from,
		To: nums(1)[0], Status: crewcast.StatusDelivered}
	err := within(t, "Ingest", func() error {
		_, err := e.tr.Ingest(context.Background(), []crewcast.Event{ev})
		return err
	})
	// An error — so the webhook is answered 503, never 2xx — and an
	// internal one: the store, not the client, failed.
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, actor.ErrFlushTimeout) {
		t.Fatalf("Ingest against a stuck store: %v, want ErrUnavailable wrapping actor.ErrFlushTimeout", err)
	}
}

func TestCreateAgainstAStuckStoreFailsWithinTheCommitLimit(t *testing.T) {
	e, _ := newStuckEnv(t, func(s *stuckStore) { s.commit = true }, nil)
	err := within(t, "Create", func() error {
		_, _, err := e.tr.Create(context.Background(), group.Request{From: from, To: nums(2), Text: "Crew call 7am",
			Mode: crewcast.ModeIndividual}, CreateOptions{})
		return err
	})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, actor.ErrFlushTimeout) {
		t.Fatalf("Create against a stuck store: %v, want ErrUnavailable wrapping actor.ErrFlushTimeout", err)
	}
}

func TestIngestCancelledByTheClientIsNotAnInternalFailure(t *testing.T) {
	e, ss := newStuckEnv(t, func(s *stuckStore) { s.inbox = true }, func(c *Config) { c.CommitTimeout = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	ev := crewcast.Event{Provider: "fake", EventID: "gone-1", Kind: crewcast.KindStatus, MessageID: "m-1", From: from,
		To: nums(1)[0], Status: crewcast.StatusDelivered}
	errc := make(chan error, 1)
	go func() {
		_, err := e.tr.Ingest(ctx, []crewcast.Event{ev})
		errc <- err
	}()
	if got := <-ss.entered; got != "inbox" {
		t.Fatalf("blocked in %s", got)
	}
	cancel()
	err := within(t, "cancelled Ingest", func() error { return <-errc })
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ingest cancelled by its caller: %v, want ErrCanceled wrapping context.Canceled, not ErrUnavailable", err)
	}
}

func TestUnavailableTellsCancellationFromFailure(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	live := context.Background()
	cause := errors.New("disk I/O error")
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		canceled bool
	}{
		{"client went away", ended, fmt.Errorf("wrapped: %w", context.Canceled), true},
		{"request deadline", expired, fmt.Errorf("wrapped: %w", context.DeadlineExceeded), true},
		{"internal deadline of a live request", live, fmt.Errorf("wrapped: %w", context.DeadlineExceeded), false},
		{"store failure after the client left", ended, cause, false},
		{"store failure", live, cause, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := unavailable(tc.ctx, "store webhook", tc.err)
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v does not wrap its cause", err)
			}
			if errors.Is(err, ErrCanceled) != tc.canceled || errors.Is(err, ErrUnavailable) == tc.canceled {
				t.Fatalf("%v: ErrCanceled %v, ErrUnavailable %v; want canceled=%v", err,
					errors.Is(err, ErrCanceled), errors.Is(err, ErrUnavailable), tc.canceled)
			}
		})
	}
}

// slowAckStore blocks AckInbox until its context ends (a store that
// honours cancellation but never gets the lock), reporting how it ended.
type slowAckStore struct {
	store.Store
	ended chan error
}

func (s *slowAckStore) AckInbox(ctx context.Context, refs []store.InboxRef) error {
	<-ctx.Done()
	s.ended <- ctx.Err()
	return ctx.Err()
}

// A group actor's own store writes (here the acknowledgement of a webhook
// for a group that no longer exists) are bounded by CommitTimeout too:
// the actor is not stuck behind a store that never answers.
func TestGroupActorStoreWritesHaveTheCommitLimit(t *testing.T) {
	e := &env{t: t, path: filepath.Join(t.TempDir(), "crewcast.db"), prov: &fakeProvider{}}
	e.clk = actor.NewManualClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	base := openStore(t, e.path, e.clk.Now)
	t.Cleanup(func() { _ = base.Close() })
	ss := &slowAckStore{Store: base, ended: make(chan error, 4)}
	e.st = ss
	e.tr = e.start(func(c *Config) { c.CommitTimeout = 50 * time.Millisecond })
	ctx := context.Background()
	if err := base.PutRoute(ctx, store.Route{Key: msgKey("fake", "gone-msg"), Value: "grp_deleted"}); err != nil {
		t.Fatal(err)
	}
	ev := crewcast.Event{Provider: "fake", EventID: "late-1", Kind: crewcast.KindStatus, MessageID: "gone-msg", From: from,
		To: nums(1)[0], Status: crewcast.StatusDelivered}
	if _, err := e.tr.Ingest(ctx, []crewcast.Event{ev}); err != nil {
		t.Fatal(err)
	}
	err := within(t, "the missing group's acknowledgement", func() error { return <-ss.ended })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acknowledgement ended with %v, want its deadline", err)
	}
}
