package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The webhooks the benchmarks post must be ones crewcast accepts: signed
// for the configured key and parsed into the status event they describe.
func TestStatusWebhookVerifiesAndParses(t *testing.T) {
	signer, err := NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	body, err := StatusBody(Status{EventID: "ev-1", MessageID: "msg-1", From: SenderNumber, To: "+15550000001",
		Text: GroupText, Status: "delivered", At: at})
	if err != nil {
		t.Fatal(err)
	}
	w := signer.Sign(body, at)
	c, err := telnyx.New(telnyx.Config{APIKey: "k", PublicKey: signer.PublicKeyBase64(), APIBase: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	w.SetHeaders(h)
	events, err := c.ParseWebhook(crewcast.WebhookRequest{Header: h, Body: w.Body})
	if err != nil {
		t.Fatalf("ParseWebhook: %v", err)
	}
	if len(events) != 1 {
		t.Fatalf("got %d events, want 1", len(events))
	}
	e := events[0]
	if e.EventID != "ev-1" || e.MessageID != "msg-1" || e.To != "+15550000001" || e.Kind != crewcast.KindStatus || e.Status != crewcast.StatusDelivered {
		t.Errorf("parsed %+v", e)
	}
	other, err := NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	if err := telnyx.Verify(other.PublicKey(), h, w.Body, at, 5*time.Minute); !errors.Is(err, crewcast.ErrBadSignature) {
		t.Errorf("another key verified the webhook: %v", err)
	}

	sent, err := StatusBody(Status{EventID: "ev-2", MessageID: "msg-1", From: SenderNumber, To: "+15550000001", Status: "sent", At: at})
	if err != nil {
		t.Fatal(err)
	}
	w = signer.Sign(sent, at)
	h = http.Header{}
	w.SetHeaders(h)
	if events, err = c.ParseWebhook(crewcast.WebhookRequest{Header: h, Body: w.Body}); err != nil || len(events) != 1 || events[0].Kind != crewcast.KindSent {
		t.Errorf("message.sent parsed as %+v, %v", events, err)
	}
}

func TestRunClosedMeasuresOnlyTheWindow(t *testing.T) {
	var calls atomic.Int64
	next := NewCounter(0)
	res := RunClosed(context.Background(), 4, 50*time.Millisecond, 100*time.Millisecond, next.Next, func(context.Context, int) error {
		calls.Add(1)
		time.Sleep(time.Millisecond) // the work being measured
		return nil
	})
	if res.OK == 0 || res.Errors != 0 || res.Exhausted {
		t.Fatalf("result %+v", res)
	}
	if int64(res.OK) >= calls.Load() {
		t.Errorf("OK = %d of %d calls: the warm-up was counted", res.OK, calls.Load())
	}
	if len(res.Latency) != res.OK {
		t.Errorf("%d latencies for %d OK requests", len(res.Latency), res.OK)
	}
	if res.Elapsed < 100*time.Millisecond || res.Elapsed > 2*time.Second {
		t.Errorf("Elapsed = %v, want about the 100ms window", res.Elapsed)
	}
}

func TestRunClosedCountsErrorsAndStopsWhenExhausted(t *testing.T) {
	next := NewCounter(10)
	boom := errors.New("boom")
	res := RunClosed(context.Background(), 3, 0, time.Minute, next.Next, func(_ context.Context, n int) error {
		if n%2 == 0 {
			return boom
		}
		return nil
	})
	if !res.Exhausted || res.OK != 5 || res.Errors != 5 || !errors.Is(res.FirstError, boom) {
		t.Errorf("result %+v", res)
	}
}

func TestPacedStartsEveryRequestOnSchedule(t *testing.T) {
	var mu sync.Mutex
	at := map[int]time.Time{}
	start := time.Now()
	errs, first := Paced(context.Background(), 20, 200, func(n int, t time.Time) {
		mu.Lock()
		at[n] = t
		mu.Unlock()
	}, func(_ context.Context, n int) error {
		if n == 3 {
			return errors.New("three")
		}
		return nil
	})
	if errs != 1 || first == nil || first.Error() != "three" {
		t.Errorf("errs = %d, first = %v", errs, first)
	}
	if len(at) != 20 {
		t.Fatalf("%d requests scheduled, want 20", len(at))
	}
	if gap := at[19].Sub(at[0]); gap != 19*5*time.Millisecond {
		t.Errorf("request 19 scheduled %v after request 0, want 95ms", gap)
	}
	if took := time.Since(start); took < 95*time.Millisecond {
		t.Errorf("20 requests at 200/s took %v", took)
	}
}

func TestStreamReadsEvents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+AdminKey {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 2000\n: connected\n\nid: 7\nevent: change\ndata: {\"a\":1}\n\nevent: error\ndata: x\ndata: y\n\n")
	}))
	defer srv.Close()
	s, err := OpenStream(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev != (StreamEvent{ID: "7", Event: "change", Data: `{"a":1}`}) {
		t.Errorf("first event %+v, %v", ev, err)
	}
	ev, err = s.Next()
	if err != nil || ev != (StreamEvent{Event: "error", Data: "x\ny"}) {
		t.Errorf("second event %+v, %v", ev, err)
	}
	if _, err = s.Next(); err == nil {
		t.Errorf("Next after the end: no error")
	}
}

func TestScrapeMetricsSumsLabelledSamples(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"x y\"} 2\na_total{k=\"z\"} 3\nb 1.5\n")
	}))
	defer srv.Close()
	m, err := ScrapeMetrics(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if m["a_total"] != 5 || m["b"] != 1.5 || len(m) != 2 {
		t.Errorf("metrics %v", m)
	}
}

func TestRSSBytes(t *testing.T) {
	rss, err := RSSBytes()
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 {
		t.Errorf("RSS = %d bytes, implausibly small for a Go test binary", rss)
	}
}

// A benchmark crewcast takes groups to sent and accepts the harness's
// webhooks, which reach the group.
func TestCrewcastSendsAndAcceptsWebhooks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	signer, err := NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := Start(ctx, Options{DB: filepath.Join(t.TempDir(), "h.db"), Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cc.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	targets, err := cc.SentGroups(ctx, 2, 3, 7_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) != 6 || targets[0].GroupID == targets[5].GroupID {
		t.Fatalf("targets %+v", targets)
	}
	hooks, err := SignStatuses(signer, targets, 7, "test", "delivered")
	if err != nil {
		t.Fatal(err)
	}
	if string(hooks[0].Body) == string(hooks[6].Body) {
		t.Errorf("webhooks 0 and 6 are the same; event ids must differ")
	}
	for _, h := range hooks[:3] {
		if err := PostWebhook(ctx, cc.Client, cc.WebhookURL(), h); err != nil {
			t.Fatal(err)
		}
	}
	row, err := cc.WaitGroup(ctx, targets[0].GroupID, func(r store.GroupRow) bool { return r.Counts["delivered"] == 3 })
	if err != nil {
		t.Fatal(err)
	}
	if !Settled(row) {
		t.Errorf("group not settled: %v", row.Counts)
	}
	bad := hooks[3]
	bad.Signature = hooks[4].Signature
	if err := PostWebhook(ctx, cc.Client, cc.WebhookURL(), bad); err == nil {
		t.Errorf("a webhook with another body's signature was accepted")
	}
}
