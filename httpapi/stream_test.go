package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// sseEvent is one parsed server-sent event, or a comment.
type sseEvent struct {
	ID, Event, Data string
	Comment         string
	Retry           string
}

type sseClient struct {
	t      *testing.T
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// openStream connects to an event stream; lastID, when set, is sent as
// Last-Event-ID. The connection is cut after 30 s at the latest so that a
// broken test fails instead of hanging.
func (e *env) openStream(path, lastID, key string) *sseClient {
	e.t.Helper()
	if k, ok := e.keys[key]; ok {
		key = k
	}
	return e.openStreamAs(path, lastID, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+key) })
}

// openStreamAs is openStream with the request's credential set by auth
// (a key, or a session cookie).
func (e *env) openStreamAs(path, lastID string, auth func(*http.Request)) *sseClient {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	auth(req)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		cancel()
		e.t.Fatalf("open stream: %v", err)
	}
	validateResponse(e.t, e.handler, req, resp, nil) // status and content type: the body never ends
	c := &sseClient{t: e.t, resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
	e.t.Cleanup(c.close)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("stream answered %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("Content-Type %q", ct)
	}
	return c
}

func (c *sseClient) close() {
	c.cancel()
	_ = c.resp.Body.Close()
}

// next returns the next event or comment; err is io.EOF when the server
// ended the stream.
func (c *sseClient) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		seen = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			ev.Comment = value
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			ev.Data = value
		case "retry":
			ev.Retry = value
		}
	}
}

// nextChange skips comments and returns the next change event.
func (c *sseClient) nextChange() (string, changeJSON) {
	c.t.Helper()
	for {
		ev, err := c.next()
		if err != nil {
			c.t.Fatalf("stream: %v", err)
		}
		if ev.Event == "" {
			continue
		}
		if ev.Event != "change" {
			c.t.Fatalf("event %q: %s", ev.Event, ev.Data)
		}
		var ch changeJSON
		if err := json.Unmarshal([]byte(ev.Data), &ch); err != nil {
			c.t.Fatalf("change data: %v: %s", err, ev.Data)
		}
		return ev.ID, ch
	}
}

// checks returns n Checked events for a group of size recipients.
func checks(e *env, n, recipients int) []group.Event {
	out := make([]group.Event, n)
	for i := range out {
		out[i] = group.Checked{At: e.clock.Now(), Index: i % recipients, NextCheckAt: e.clock.Now().Add(time.Minute)}
	}
	return out
}

// TestStreamGroupResume disconnects a client mid-stream while events keep
// coming, reconnects with Last-Event-ID while more are written
// concurrently, and checks that together the two connections saw every
// journal event exactly once, in order.
func TestStreamGroupResume(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001", "+15550100002", "+15550100003")
	const total = 60
	c1 := e.openStream("/v1/groups/"+id+"/stream", "", "read")
	var seen []uint64
	record := func(sid string, ch changeJSON) {
		t.Helper()
		if sid != strconv.FormatUint(ch.Seq, 10) || ch.GroupID != id || ch.Type == "" || ch.Time.IsZero() || len(ch.Data) == 0 {
			t.Fatalf("bad event id=%s %+v", sid, ch)
		}
		seen = append(seen, ch.Seq)
	}
	sid, ch := c1.nextChange()
	record(sid, ch) // the replayed group.created
	if ch.Type != group.TypeCreated {
		t.Fatalf("first event %s", ch.Type)
	}
	// Live events, one commit each, while the client reads some.
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, ev := range checks(e, 20, 3) {
			if err := e.mini.apply(context.Background(), id, ev); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for len(seen) < 8 {
		record(c1.nextChange())
	}
	c1.close() // disconnect mid-stream
	wg.Wait()
	// More events while nobody listens, then more during the reconnect.
	e.apply(id, checks(e, 10, 3)...)
	wg.Go(func() {
		for _, ev := range checks(e, total-31, 3) {
			if err := e.mini.apply(context.Background(), id, ev); err != nil {
				t.Error(err)
				return
			}
		}
	})
	c2 := e.openStream("/v1/groups/"+id+"/stream", strconv.FormatUint(seen[len(seen)-1], 10), "read")
	for seen[len(seen)-1] < total {
		record(c2.nextChange())
	}
	wg.Wait()
	want := make([]uint64, total)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("events seen %v, want 1..%d once each", seen, total)
	}
}

// TestStreamGroupLagged overwhelms a slow client: the hub drops changes
// for it, and the stream must catch up from the journal without a gap or
// a duplicate.
func TestStreamGroupLagged(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001")
	c := e.openStream("/v1/groups/"+id+"/stream", "", "read")
	if _, ch := c.nextChange(); ch.Seq != 1 {
		t.Fatalf("first seq %d", ch.Seq)
	}
	// 300 events in one commit, published one change each and at once,
	// while this client reads nothing: 300 × 32 KiB is more than the
	// loopback socket buffers hold, so the handler blocks writing and the
	// hub's buffer (256) overflows — it falls behind whatever the
	// scheduling (with 512-byte events the socket absorbed them all and
	// the test depended on the handler being slow).
	const n = 300
	blob := `{"pad":"` + strings.Repeat("x", 32<<10) + `"}`
	unit := actor.Unit{Key: id, ExpectSeq: 1}
	for i := range n {
		unit.Events = append(unit.Events, actor.Event{Seq: uint64(i + 2), Type: "test.padding", Data: []byte(blob), Time: e.clock.Now()})
	}
	if res, err := e.st.Commit(context.Background(), []actor.Unit{unit}); err != nil || res[0] != nil {
		t.Fatalf("commit: %v %v", err, res)
	}
	for _, ev := range unit.Events {
		e.svc.hub.Publish(tracker.Change{GroupID: id, Seq: ev.Seq, Events: []tracker.EventView{{Seq: ev.Seq, Type: ev.Type, Time: ev.Time, Data: ev.Data}}})
	}
	for want := uint64(2); want <= n+1; want++ {
		sid, ch := c.nextChange()
		if ch.Seq != want || sid != strconv.FormatUint(want, 10) {
			t.Fatalf("got seq %d (id %s), want %d", ch.Seq, sid, want)
		}
	}
	// Nothing more may follow: a duplicate would show up before a new
	// event does.
	next := actor.Event{Seq: n + 2, Type: "test.padding", Data: []byte(`{}`), Time: e.clock.Now()}
	if res, err := e.st.Commit(context.Background(), []actor.Unit{{Key: id, ExpectSeq: n + 1, Events: []actor.Event{next}}}); err != nil || res[0] != nil {
		t.Fatalf("commit: %v %v", err, res)
	}
	e.svc.hub.Publish(tracker.Change{GroupID: id, Seq: next.Seq, Events: []tracker.EventView{{Seq: next.Seq, Type: next.Type, Time: next.Time, Data: next.Data}}})
	if _, ch := c.nextChange(); ch.Seq != n+2 {
		t.Fatalf("after catching up got seq %d, want %d", ch.Seq, n+2)
	}
	if v := metricValue(t, e.reg, "crewcast_sse_resyncs_total", nil); v < 1 {
		t.Errorf("the stream never resynchronised from the journal (resyncs %v)", v)
	}
}

// TestStreamAllResume streams every group by journal position.
func TestStreamAllResume(t *testing.T) {
	e := newEnv(t, nil)
	g1 := e.createGroup("+15550100001")
	g2 := e.createGroup("+15550100002")
	c1 := e.openStream("/v1/stream?after=0", "", "read")
	type key struct {
		group string
		seq   uint64
	}
	var seen []key
	var lastID string
	read := func(c *sseClient) {
		t.Helper()
		sid, ch := c.nextChange()
		seen = append(seen, key{ch.GroupID, ch.Seq})
		lastID = sid
	}
	read(c1)
	read(c1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 10 {
			gid := []string{g1, g2}[i%2]
			if err := e.mini.apply(context.Background(), gid, checks(e, 1, 1)...); err != nil {
				t.Error(err)
				return
			}
		}
	})
	read(c1)
	read(c1)
	c1.close()
	wg.Wait()
	e.apply(g1, checks(e, 3, 1)...)
	c2 := e.openStream("/v1/stream", lastID, "read")
	for len(seen) < 15 {
		read(c2)
	}
	all, err := e.st.LoadAllEvents(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var want []key
	for _, ev := range all {
		want = append(want, key{ev.Key, ev.Seq})
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("seen %v\nwant %v", seen, want)
	}
	if lastID != strconv.FormatInt(all[len(all)-1].Pos, 10) {
		t.Errorf("last id %s, want position %d", lastID, all[len(all)-1].Pos)
	}
}

// Without a resume point the all-groups stream starts at the current end.
func TestStreamAllStartsAtTail(t *testing.T) {
	e := newEnv(t, nil)
	for range 5 {
		e.createGroup("+15550100001")
	}
	g := e.createGroup("+15550100002")
	e.apply(g, checks(e, 40, 1)...)
	c := e.openStream("/v1/stream", "", "read")
	e.apply(g, checks(e, 1, 1)...)
	if _, ch := c.nextChange(); ch.GroupID != g || ch.Seq != 42 {
		t.Fatalf("first event %+v, want %s seq 42", ch, g)
	}
}

// positions is a journal of events at the given store positions (with
// gaps, as after deletions), for tailPosition.
type positions struct {
	store.Projections
	pos   []int64
	reads int
}

func (p *positions) LoadAllEvents(_ context.Context, after int64, limit int) ([]store.PositionedEvent, error) {
	p.reads++
	var out []store.PositionedEvent
	for _, q := range p.pos {
		if q > after && len(out) < limit {
			out = append(out, store.PositionedEvent{Pos: q})
		}
	}
	return out, nil
}

func TestTailPosition(t *testing.T) {
	ctx := context.Background()
	for _, pos := range [][]int64{nil, {1}, {1, 2}, {3}, {1, 2, 3, 4}, {5, 9, 17}, {1 << 20}, {2, 1000, 1001, 123456789}} {
		p := &positions{pos: pos}
		got, err := tailPosition(ctx, p)
		want := int64(0)
		if len(pos) > 0 {
			want = pos[len(pos)-1]
		}
		if err != nil || got != want {
			t.Errorf("positions %v: tail %d (%v), want %d", pos, got, err, want)
		}
		if p.reads > 2*64+2 {
			t.Errorf("positions %v: %d reads", pos, p.reads)
		}
	}
	// And on the real store.
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001")
	e.apply(id, checks(e, 4, 1)...)
	all, err := e.st.LoadAllEvents(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tailPosition(ctx, e.st); err != nil || got != all[len(all)-1].Pos {
		t.Errorf("sqlite tail %d (%v), want %d", got, err, all[len(all)-1].Pos)
	}
}

func TestStreamHeartbeatAndShutdown(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Heartbeat = 10 * time.Millisecond })
	id := e.createGroup("+15550100001")
	c := e.openStream("/v1/groups/"+id+"/stream", "1", "read")
	if got := metricValue(t, e.reg, "crewcast_sse_clients", nil); got != 1 {
		t.Errorf("sse clients %v, want 1", got)
	}
	pings := 0
	for pings < 3 {
		ev, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Event != "" {
			t.Fatalf("unexpected event after Last-Event-ID 1: %+v", ev)
		}
		if ev.Comment == "ping" {
			pings++
		}
	}
	close(e.done) // server shutdown ends the stream
	for {
		_, err := c.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stream ended with %v, want EOF", err)
		}
	}
	if got := metricValue(t, e.reg, "crewcast_sse_clients", nil); got != 0 {
		t.Errorf("sse clients %v after shutdown, want 0", got)
	}
}

// A stream outlives the server's read timeout (it clears the deadline).
func TestStreamSurvivesServerReadTimeout(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Heartbeat = 20 * time.Millisecond })
	srv := httptest.NewUnstartedServer(e.handler)
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Start()
	orig := e.srv
	orig.Close()
	e.srv = srv // closed by the env's cleanup, after the stream's
	id := e.createGroup("+15550100001")
	c := e.openStream("/v1/groups/"+id+"/stream", "1", "read")
	start := time.Now()
	for time.Since(start) < 300*time.Millisecond {
		if _, err := c.next(); err != nil {
			t.Fatalf("stream died after %v: %v", time.Since(start), err)
		}
	}
	e.apply(id, checks(e, 1, 1)...)
	if _, ch := c.nextChange(); ch.Seq != 2 {
		t.Fatalf("got %+v", ch)
	}
}

func TestStreamErrors(t *testing.T) {
	id := func(e *env) map[string]string { return map[string]string{"id": e.createGroup("+15550100001")} }
	runShared(t, id, []scenario{
		{name: "unknown group", method: "GET", path: "/v1/groups/nope/stream", key: "read", status: 404},
		{name: "needs a key", method: "GET", path: "/v1/groups/{id}/stream", status: 401},
		{name: "bad Last-Event-ID", method: "GET", path: "/v1/groups/{id}/stream", key: "read",
			header: map[string]string{"Last-Event-ID": "abc"}, status: 400, fields: []string{"Last-Event-ID"}},
		{name: "bad after", method: "GET", path: "/v1/stream?after=-3", key: "read", status: 400, fields: []string{"after"}},
	})
}

// failingJournal makes Load fail after the stream started.
type failingJournal struct {
	Store
	failLoad chan struct{}
}

func (f failingJournal) Load(ctx context.Context, key string, after uint64, fn func(actor.Event) error) error {
	select {
	case <-f.failLoad:
		return fmt.Errorf("load: %w", errDiskFull)
	default:
		return f.Store.Load(ctx, key, after, fn)
	}
}

// A store failure mid-stream ends it with an error event (the client
// reconnects with Last-Event-ID) and leaks no internal text.
func TestStreamStoreFailure(t *testing.T) {
	fail := make(chan struct{})
	e := newEnv(t, func(c *Config) { c.Store = failingJournal{Store: c.Store, failLoad: fail} })
	id := e.createGroup("+15550100001")
	c := e.openStream("/v1/groups/"+id+"/stream", "", "read")
	c.nextChange()
	close(fail)
	// A gap forces a journal read, which fails.
	e.svc.hub.Publish(tracker.Change{GroupID: id, Seq: 5, Events: []tracker.EventView{{Seq: 5, Type: "x"}}})
	for {
		ev, err := c.next()
		if err != nil {
			t.Fatalf("stream ended without an error event: %v", err)
		}
		if ev.Event == "error" {
			if strings.Contains(ev.Data, "disk") || !strings.Contains(ev.Data, "unavailable") {
				t.Errorf("error event %q", ev.Data)
			}
			break
		}
	}
	if _, err := c.next(); err != io.EOF {
		t.Errorf("after the error event: %v, want EOF", err)
	}
}
