package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// changeJSON is the data of one SSE "change" event: one journal event.
type changeJSON struct {
	GroupID string          `json:"group_id"`
	Seq     uint64          `json:"seq"`
	Type    string          `json:"type"`
	Time    time.Time       `json:"time"`
	Data    json.RawMessage `json:"data"`
}

// resumePoint reads where a stream resumes: Last-Event-ID (sent by a
// reconnecting EventSource) wins over ?after=. ok is false when neither
// is given.
func resumePoint(r *http.Request) (v uint64, ok bool, err error) {
	s, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if s == "" {
		s, field = r.URL.Query().Get("after"), "after"
	}
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseUint(s, 10, 63)
	if err != nil {
		return 0, false, invalid(field, "must be a non-negative integer event id")
	}
	return v, true, nil
}

// sse writes one event stream.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

// startStream sends the stream's headers. Streams outlive the server's
// read and write timeouts, so those are cleared; each write gets its own
// deadline instead.
func (a *api) startStream(w http.ResponseWriter) (*sse, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return nil, err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // tell nginx-style proxies not to buffer
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: rc, timeout: a.cfg.StreamWriteTimeout}
	// The retry hint and a first comment reach the client at once, so it
	// knows the stream is open before any event happens.
	return s, s.write("retry: 2000\n: connected\n\n")
}

func (s *sse) write(text string) error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := fmt.Fprint(s.w, text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// event writes one "change" event with the given id.
func (s *sse) event(id uint64, c changeJSON) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.write("id: " + strconv.FormatUint(id, 10) + "\nevent: change\ndata: " + string(data) + "\n\n")
}

// fail tells the client the stream ended on a server error; it reconnects
// with Last-Event-ID and loses nothing.
func (s *sse) fail() {
	_ = s.write("event: error\ndata: {\"code\":\"unavailable\",\"message\":\"temporarily unavailable, reconnect\"}\n\n")
}

// streamGroup streams one group's journal: replay after the resume point,
// then live changes from the hub, without gap or duplicate.
func (a *api) streamGroup(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := r.PathValue("id")
	last, _, err := resumePoint(r)
	if err != nil {
		return err
	}
	if _, err := a.store.GetGroup(ctx, id); err != nil {
		return err
	}
	release, err := a.streams.acquire(by(r))
	if err != nil {
		return err
	}
	defer release()
	// Subscribe before reading the journal: a change committed during the
	// replay is then in the subscription, and the replay's last sequence
	// tells which of the subscription's changes were already sent.
	sub := a.svc.Hub().Subscribe(id)
	defer sub.Close()
	a.metrics.SSEClientOpened()
	defer a.metrics.SSEClientClosed()
	s, err := a.startStream(w)
	if err != nil {
		return nil // the client is gone
	}
	watch := a.watchStream(r, apikey.ScopeRead)
	defer watch.stop()

	send := func(e actor.Event) error {
		if err := watch.halted(); err != nil {
			return err
		}
		if err := s.event(e.Seq, changeJSON{GroupID: id, Seq: e.Seq, Type: e.Type, Time: e.Time.UTC(), Data: rawJSON(e.Data)}); err != nil {
			return errClientGone{err}
		}
		last = e.Seq
		return nil
	}
	replay := func() error { return a.store.Load(ctx, id, last, send) }
	return a.streamLoop(r, s, watch, sub, replay, func(c tracker.Change) (bool, error) {
		if len(c.Events) == 0 {
			return c.Seq > last, nil // committed on another node: only its seq is known, read the journal
		}
		for _, ev := range c.Events {
			if ev.Seq <= last {
				continue // already sent by the replay
			}
			if ev.Seq != last+1 {
				return true, nil // a gap: only the journal can fill it
			}
			if err := send(actor.Event{Seq: ev.Seq, Type: ev.Type, Data: ev.Data, Time: ev.Time}); err != nil {
				return false, err
			}
		}
		return false, nil
	})
}

// streamAll streams every group's journal in commit order, with store
// positions as event ids. Its live events come from the shared feed (one
// journal read per commit for all streams); it reads the journal itself
// only to catch up: from the resume point at the start, and when it fell
// behind the feed. Without a resume point it starts at the current end.
func (a *api) streamAll(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	after, ok, err := resumePoint(r)
	if err != nil {
		return err
	}
	release, err := a.streams.acquire(by(r))
	if err != nil {
		return err
	}
	defer release()
	sub := a.feed.subscribe()
	defer sub.close()
	last := int64(after)
	if !ok {
		if last, err = tailPosition(ctx, a.store); err != nil {
			return err
		}
	}
	a.metrics.SSEClientOpened()
	defer a.metrics.SSEClientClosed()
	s, err := a.startStream(w)
	if err != nil {
		return nil
	}
	watch := a.watchStream(r, apikey.ScopeRead)
	defer watch.stop()

	send := func(e store.PositionedEvent) error {
		if err := watch.halted(); err != nil {
			return err
		}
		if err := s.event(uint64(e.Pos), changeJSON{GroupID: e.Key, Seq: e.Seq, Type: e.Type, Time: e.Time.UTC(), Data: rawJSON(e.Data)}); err != nil {
			return errClientGone{err}
		}
		last = e.Pos
		return nil
	}
	catchUp := func() error {
		for {
			evs, err := a.store.LoadAllEvents(ctx, last, feedPage)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if err := send(e); err != nil {
					return err
				}
			}
			if len(evs) < feedPage {
				return nil
			}
		}
	}
	if err := catchUp(); err != nil {
		return a.endStream(r, s, err)
	}
	return a.allLoop(r, s, watch, sub, &last, send, catchUp)
}

// allLoop serves the all-groups stream's live batches from the feed until
// the client leaves, the watcher ends the stream or the server shuts
// down; it reads the journal (catchUp) when it fell behind the feed.
func (a *api) allLoop(r *http.Request, s *sse, watch *streamWatch, sub *feedSub, last *int64,
	send func(store.PositionedEvent) error, catchUp func() error) error {
	heartbeat := time.NewTicker(a.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-a.done:
			return nil
		case <-watch.ended:
			return a.endStream(r, s, watch.reason)
		case <-heartbeat.C:
			if err := s.write(": ping\n\n"); err != nil {
				return nil
			}
		case b := <-sub.C:
			if lagged := sub.Lagged(); lagged || b.resync || b.from > *last {
				// A batch was dropped, the feed started after this
				// stream's catch-up, or it could not read: the journal has
				// everything after last.
				if lagged {
					a.metrics.SSEResync()
				}
				drainFeed(sub)
				if err := catchUp(); err != nil {
					return a.endStream(r, s, err)
				}
				continue
			}
			for _, e := range b.events {
				if e.Pos <= *last {
					continue // already sent by a catch-up
				}
				if err := send(e); err != nil {
					return a.endStream(r, s, err)
				}
			}
		}
	}
}

// drainFeed discards queued batches before a journal catch-up, which
// covers them.
func drainFeed(sub *feedSub) {
	for {
		select {
		case <-sub.C:
		default:
			return
		}
	}
}

// errClientGone marks a failed write to the stream: the client left.
type errClientGone struct{ err error }

func (e errClientGone) Error() string { return "stream write: " + e.err.Error() }

// streamLoop replays, then serves a group's live changes until the client
// leaves or the server shuts down. apply handles one change and reports
// whether the journal must be re-read instead (a gap).
func (a *api) streamLoop(r *http.Request, s *sse, watch *streamWatch, sub *tracker.Subscription, replay func() error, apply func(tracker.Change) (bool, error)) error {
	ctx := r.Context()
	ended := func(err error) error { return a.endStream(r, s, err) }
	if err := replay(); err != nil {
		return ended(err)
	}
	heartbeat := time.NewTicker(a.cfg.Heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.done:
			return nil
		case <-watch.ended:
			return ended(watch.reason)
		case <-heartbeat.C:
			if err := s.write(": ping\n\n"); err != nil {
				return nil
			}
		case c := <-sub.C:
			reread := sub.Lagged() // changes were dropped: the journal has them
			if !reread {
				var err error
				if reread, err = apply(c); err != nil {
					return ended(err)
				}
			}
			if reread {
				a.metrics.SSEResync()
				drain(sub)
				if err := replay(); err != nil {
					return ended(err)
				}
			}
		}
	}
}

// endStream ends a stream after err: silently when the client left, with
// the watcher's word when it ended the stream (streamguard.go), otherwise
// logged and told to the client, which reconnects with Last-Event-ID and
// loses nothing.
func (a *api) endStream(r *http.Request, s *sse, err error) error {
	var gone errClientGone
	if errors.As(err, &gone) || r.Context().Err() != nil || s.endWatched(err) {
		return nil
	}
	a.log.ErrorContext(r.Context(), "event stream failed", "route", r.Pattern, "err", err.Error())
	s.fail()
	return nil
}

// drain discards queued changes before a journal re-read, which covers
// them; it stops at the first empty moment.
func drain(sub *tracker.Subscription) {
	for {
		select {
		case <-sub.C:
		default:
			return
		}
	}
}

// tailPosition finds the position of the newest journal event (0 for an
// empty journal) with O(log n) single-row reads: LoadAllEvents(p, 1) is
// non-empty exactly when p is below the tail.
func tailPosition(ctx context.Context, st store.Projections) (int64, error) {
	beyond := func(p int64) (bool, error) {
		evs, err := st.LoadAllEvents(ctx, p, 1)
		return len(evs) == 0, err
	}
	lo, hi := int64(0), int64(1) // invariant: !beyond(lo) unless lo is the tail; find hi with beyond(hi)
	if b, err := beyond(0); err != nil || b {
		return 0, err
	}
	for {
		b, err := beyond(hi)
		if err != nil {
			return 0, err
		}
		if b {
			break
		}
		lo, hi = hi, hi*2
		if hi <= 0 {
			return 0, errors.New("journal position overflow")
		}
	}
	// !beyond(lo), beyond(hi): the tail is in (lo, hi].
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		b, err := beyond(mid)
		if err != nil {
			return 0, err
		}
		if b {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
