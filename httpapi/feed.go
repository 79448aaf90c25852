package httpapi

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// feedPage is how many journal events one read of the feed (or of a
// stream catching up on its own) returns at most.
const feedPage = 500

// feedBuffer is how many batches a stream may fall behind before it is
// marked lagged and catches up from the journal on its own.
const feedBuffer = 64

// feed serves every all-groups stream (GET /v1/stream) from one reader:
// on each commit the hub announces, the feed reads the new journal events
// once and hands the same batch to every stream, so the cost of a commit
// does not grow with the number of open streams. It runs while at least
// one stream is subscribed.
//
// Gap-free resume: a stream subscribes first, then reads the journal from
// its resume point to the end (its catch-up). The feed, subscribed to the
// hub before the stream's catch-up, starts at the journal's end as it
// finds it. Every batch says where it starts (from) and holds every event
// after from in order; a stream sends the events after its own last
// position and, when a batch starts beyond it (it missed one, or the feed
// started after the stream's catch-up ended), re-reads the journal itself.
type feed struct {
	hub *tracker.Hub
	st  store.Projections
	log *slog.Logger

	mu   sync.Mutex
	subs map[*feedSub]struct{}
	run  *feedRun // nil while nobody is subscribed
}

// feedRun is one life of the feed's reader goroutine.
type feedRun struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// feedBatch is every journal event after position from, up to the last
// event's position (none in the batch announcing where the feed starts);
// resync tells a stream to re-read the journal itself because the feed
// could not read it.
type feedBatch struct {
	from   int64
	events []store.PositionedEvent
	resync bool
}

// feedSub is one stream's subscription.
type feedSub struct {
	C      <-chan feedBatch
	c      chan feedBatch
	lagged atomic.Bool
	f      *feed
	once   sync.Once
}

func newFeed(hub *tracker.Hub, st store.Projections, log *slog.Logger) *feed {
	return &feed{hub: hub, st: st, log: log, subs: map[*feedSub]struct{}{}}
}

// subscribe adds a stream, starting the reader if it is the first. The
// reader's hub subscription exists before subscribe returns, so every
// commit after the caller's catch-up is announced to it.
func (f *feed) subscribe() *feedSub {
	c := make(chan feedBatch, feedBuffer)
	s := &feedSub{C: c, c: c, f: f}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.run = &feedRun{ctx: ctx, cancel: cancel}
		go f.read(f.run, f.hub.Subscribe(""))
	}
	f.subs[s] = struct{}{}
	return s
}

// Lagged reports (and clears) whether batches were dropped for this
// stream since the last call.
func (s *feedSub) Lagged() bool { return s.lagged.Swap(false) }

// close ends the subscription; the last one stops the reader.
func (s *feedSub) close() {
	s.once.Do(func() {
		f := s.f
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, s)
		if len(f.subs) == 0 && f.run != nil {
			f.run.cancel()
			f.run = nil
		}
	})
}

// read is the reader goroutine of one run.
func (f *feed) read(run *feedRun, hub *tracker.Subscription) {
	defer hub.Close()
	// The hub subscription came first, so every commit after this read
	// of the end is announced.
	pos, err := tailPosition(run.ctx, f.st)
	for err != nil {
		if run.ctx.Err() != nil {
			return
		}
		f.log.Error("event feed: finding the journal's end failed; streams re-read it themselves", "err", err.Error())
		f.broadcast(run, feedBatch{resync: true})
		select {
		case <-run.ctx.Done():
			return
		case <-hub.C: // try again at the next commit
		}
		pos, err = tailPosition(run.ctx, f.st)
	}
	// Announce where the feed starts: a stream whose catch-up ended
	// before pos (a commit came in between) sees the gap and fills it
	// now rather than at the next commit.
	f.broadcast(run, feedBatch{from: pos})
	for {
		select {
		case <-run.ctx.Done():
			return
		case <-hub.C:
		}
		// Changes that queued up meanwhile (or were dropped: the hub's
		// lag flag) are all covered by reading to the end now.
		drain(hub)
		hub.Lagged()
		for {
			evs, err := f.st.LoadAllEvents(run.ctx, pos, feedPage)
			if err != nil {
				if run.ctx.Err() != nil {
					return
				}
				f.log.Error("event feed: reading the journal failed; streams re-read it themselves", "err", err.Error())
				f.broadcast(run, feedBatch{from: pos, resync: true})
				break
			}
			if len(evs) == 0 {
				break
			}
			f.broadcast(run, feedBatch{from: pos, events: evs})
			pos = evs[len(evs)-1].Pos
			if len(evs) < feedPage {
				break
			}
		}
	}
}

// broadcast hands b to every stream of this run without blocking: a
// stream whose buffer is full is marked lagged.
func (f *feed) broadcast(run *feedRun, b feedBatch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run != run {
		return // this run was stopped; its batches go nowhere
	}
	for s := range f.subs {
		select {
		case s.c <- b:
		default:
			s.lagged.Store(true)
		}
	}
}
