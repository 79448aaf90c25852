package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// countingLoads counts reads of the all-groups journal.
type countingLoads struct {
	Store
	n atomic.Int64
}

func (c *countingLoads) LoadAllEvents(ctx context.Context, after int64, limit int) ([]store.PositionedEvent, error) {
	c.n.Add(1)
	return c.Store.LoadAllEvents(ctx, after, limit)
}

// Finding 8 of issue 12: with many all-groups streams open, each commit
// was read from the journal once per stream. Now it is read once, however
// many streams there are, and every stream still gets every event.
func TestStreamAllReadsEachCommitOnce(t *testing.T) {
	var loads *countingLoads
	e := newEnv(t, func(c *Config) {
		loads = &countingLoads{Store: c.Store}
		c.Store = loads
	})
	id := e.createGroup("+15550100001")
	const streams, commits = 20, 5
	var cs []*sseClient
	for range streams {
		cs = append(cs, e.openStream("/v1/stream", "", "read"))
	}
	// One commit seen by every stream: all of them have caught up.
	seq := uint64(1)
	commitAndRead := func() {
		t.Helper()
		e.apply(id, checks(e, 1, 1)...)
		seq++
		for i, c := range cs {
			if _, ch := c.nextChange(); ch.GroupID != id || ch.Seq != seq {
				t.Fatalf("stream %d got %s/%d, want %s/%d", i, ch.GroupID, ch.Seq, id, seq)
			}
		}
	}
	commitAndRead()
	loads.n.Store(0)
	for range commits {
		commitAndRead()
	}
	if n := loads.n.Load(); n > commits {
		t.Fatalf("%d journal reads for %d commits with %d streams open, want at most one per commit", n, commits, streams)
	}
}

// Event streams are capped per API key (429) and in all (503), each with
// Retry-After and a JSON error; a closed stream frees its place.
func TestStreamCaps(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxStreams, c.MaxStreamsPerKey = 3, 2 })
	id := e.createGroup("+15550100001")
	open := func(path, key string) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+e.keys[key])
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
		return resp, cancel
	}
	refused := func(resp *http.Response, status int) {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		validateResponse(t, e.handler, resp.Request, resp, b)
		if resp.StatusCode != status {
			t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, b)
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
		if e := decode[errorBody](t, b); e.Error.Code != codeTooManyStreams {
			t.Errorf("error %+v", e)
		}
	}
	r1, cancel1 := open("/v1/stream", "read")
	r2, _ := open("/v1/groups/"+id+"/stream", "read")
	if r1.StatusCode != 200 || r2.StatusCode != 200 {
		t.Fatalf("first two streams: %d %d", r1.StatusCode, r2.StatusCode)
	}
	r3, _ := open("/v1/stream", "read")
	refused(r3, http.StatusTooManyRequests)
	if r, _ := open("/v1/stream", "admin"); r.StatusCode != 200 {
		t.Fatalf("another key's stream: %d", r.StatusCode)
	}
	r4, _ := open("/v1/groups/"+id+"/stream", "send")
	refused(r4, http.StatusServiceUnavailable)
	// Closing a stream frees its place once its handler has ended.
	cancel1()
	_ = r1.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, cancel := open("/v1/stream", "read")
		if r.StatusCode == 200 {
			break
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was never freed (still %d)", r.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The feed hands every stream contiguous batches (each starts where the
// previous ended), and marks a stream that stops reading as lagged
// instead of blocking the others.
func TestFeedBatchesAreContiguousAndSlowReadersLag(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001")
	f := newFeed(e.svc.hub, e.st, slog.New(slog.DiscardHandler))
	slow, fast := f.subscribe(), f.subscribe()
	defer slow.close()
	defer fast.close()
	// The feed announces where it starts (the journal's end), then sends
	// one contiguous batch per commit.
	next := func() feedBatch {
		t.Helper()
		select {
		case b := <-fast.C:
			return b
		case <-time.After(10 * time.Second):
			t.Fatal("no batch")
			return feedBatch{}
		}
	}
	tail, err := tailPosition(context.Background(), e.st)
	if err != nil {
		t.Fatal(err)
	}
	if b := next(); b.from != tail || len(b.events) != 0 || b.resync {
		t.Fatalf("first batch from %d with %d events, want the start at %d", b.from, len(b.events), tail)
	}
	last := tail
	for range feedBuffer + 5 {
		e.apply(id, checks(e, 1, 1)...)
		if b := next(); b.resync || b.from != last || len(b.events) != 1 || b.events[0].Pos <= last {
			t.Fatalf("batch from %d with %d events after position %d (resync %v)", b.from, len(b.events), last, b.resync)
		} else {
			last = b.events[0].Pos
		}
	}
	if fast.Lagged() {
		t.Error("a stream that kept up was marked lagged")
	}
	if !slow.Lagged() {
		t.Error("a stream that never read was not marked lagged")
	}
}
