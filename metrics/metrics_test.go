package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/tracker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape serves the registry over HTTP and parses the text format, as
// Prometheus would.
func scrape(t *testing.T, r *Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return mfs
}

// value returns the value of the sample with exactly these labels.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, lp := range m.GetLabel() {
			if labels[lp.GetName()] != lp.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("%s%v not found", name, labels)
	return 0
}

func TestEveryHookIsExported(t *testing.T) {
	r := New()
	rt, svc := r.Runtime(), r.Service()
	rt.ActorActivated("group")
	rt.ActorActivated("group")
	rt.ActorPassivated("group")
	rt.ActorActivated("")
	rt.ActorStopped("")
	rt.ActorRestarted("group")
	rt.MessagesProcessed("group", 5)
	rt.MailboxDepth("group", 3)
	rt.DeadLetter("stopped")
	rt.TimerFired()
	rt.TimerPanicked()
	rt.TimersPending(7)
	rt.CommitBatch(12, 3*time.Millisecond, nil)
	rt.CommitBatch(1, time.Millisecond, errors.New("disk full"))
	rt.StoreError("due_reminders", errors.New("x"))
	svc.WebhookIngested("telnyx", "new")
	svc.SendOutcome("telnyx", "accepted", crewcast.ClassNone)
	svc.StatusChanged(crewcast.StatusDelivered)
	svc.TimeToDelivered(4 * time.Second)
	svc.ParkedExpired("telnyx")
	svc.LeaseLost(tracker.LeaseLostFenced, 5)
	svc.LeaseLost(tracker.LeaseLostTakenOver, 1)
	r.WebhookReceived("twilio", "status", "duplicate")
	r.SignatureFailure("telnyx")
	r.SSEClientOpened()
	r.SSEClientOpened()
	r.SSEClientClosed()
	r.SSEResync()
	r.ObserveRequest("/v1/groups/{id}", "GET", 200, 2*time.Millisecond)
	r.AuthFailure("forbidden")
	r.KeyTouchFailed()

	mfs := scrape(t, r)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"crewcast_actor_activations_total", map[string]string{"kind": "group"}, 2},
		{"crewcast_actors_active", map[string]string{"kind": "group"}, 1},
		{"crewcast_actors_active", map[string]string{"kind": ""}, 0},
		{"crewcast_actor_passivations_total", map[string]string{"kind": "group"}, 1},
		{"crewcast_actor_stops_total", map[string]string{"kind": ""}, 1},
		{"crewcast_actor_restarts_total", map[string]string{"kind": "group"}, 1},
		{"crewcast_actor_messages_processed_total", map[string]string{"kind": "group"}, 5},
		{"crewcast_actor_mailbox_depth", map[string]string{"kind": "group"}, 1},
		{"crewcast_actor_dead_letters_total", map[string]string{"reason": "stopped"}, 1},
		{"crewcast_actor_timers_fired_total", nil, 1},
		{"crewcast_actor_timer_panics_total", nil, 1},
		{"crewcast_actor_timers_pending", nil, 7},
		{"crewcast_store_commit_batch_units", nil, 2},
		{"crewcast_store_commit_duration_seconds", nil, 2},
		{"crewcast_store_commit_errors_total", nil, 1},
		{"crewcast_store_errors_total", map[string]string{"op": "due_reminders"}, 1},
		{"crewcast_webhook_events_ingested_total", map[string]string{"provider": "telnyx", "result": "new"}, 1},
		{"crewcast_sends_total", map[string]string{"provider": "telnyx", "result": "accepted", "class": ""}, 1},
		{"crewcast_recipient_transitions_total", map[string]string{"status": "delivered"}, 1},
		{"crewcast_time_to_delivered_seconds", nil, 1},
		{"crewcast_webhooks_parked_expired_total", map[string]string{"provider": "telnyx"}, 1},
		{"crewcast_webhooks_received_total", map[string]string{"provider": "twilio", "type": "status", "result": "duplicate"}, 1},
		{"crewcast_webhook_signature_failures_total", map[string]string{"provider": "telnyx"}, 1},
		{"crewcast_sse_clients", nil, 1},
		{"crewcast_sse_resyncs_total", nil, 1},
		{"crewcast_http_request_duration_seconds", map[string]string{"route": "/v1/groups/{id}", "method": "GET", "code": "200"}, 1},
		{"crewcast_http_auth_failures_total", map[string]string{"reason": "forbidden"}, 1},
		{"crewcast_apikey_touch_failures_total", nil, 1},
		{"crewcast_cluster_lease_lost_total", map[string]string{"reason": "fenced"}, 5},
		{"crewcast_cluster_lease_lost_total", map[string]string{"reason": "taken_over"}, 1},
	} {
		if got := value(t, mfs, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("Go runtime collector missing")
	}
	// The histogram buckets observe real units: 3 ms lands under 5 ms.
	h := mfs["crewcast_store_commit_duration_seconds"].GetMetric()[0].GetHistogram()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 0.005 && b.GetCumulativeCount() != 2 {
			t.Errorf("commits under 5 ms: %d, want 2", b.GetCumulativeCount())
		}
	}
}

// The series that alert rules watch for a first event (dead letters, lost
// leases) exist at 0 before it happens: an absent series would make an
// alert on increase() blind and a dashboard panel empty.
func TestAlertedSeriesStartAtZero(t *testing.T) {
	mfs := scrape(t, New())
	for _, c := range []struct{ name, reason string }{
		{"crewcast_actor_dead_letters_total", actor.ReasonMailboxFull},
		{"crewcast_actor_dead_letters_total", actor.ReasonStopped},
		{"crewcast_actor_dead_letters_total", actor.ReasonActivationFailed},
		{"crewcast_cluster_lease_lost_total", tracker.LeaseLostTakenOver},
		{"crewcast_cluster_lease_lost_total", tracker.LeaseLostFenced},
	} {
		if got := value(t, mfs, c.name, map[string]string{"reason": c.reason}); got != 0 {
			t.Errorf("%s{reason=%q} = %v on a new registry", c.name, c.reason, got)
		}
	}
}

// Two registries in one process do not collide (no global registry).
func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.SignatureFailure("telnyx")
	if _, ok := scrape(t, b)["crewcast_webhook_signature_failures_total"]; ok {
		t.Error("a metric of one registry shows in another")
	}
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestWatchRecipientsCaches(t *testing.T) {
	r := New()
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	calls := 0
	var fail error
	count := func(context.Context) (map[crewcast.Status]int, error) {
		calls++
		if fail != nil {
			return nil, fail
		}
		return map[crewcast.Status]int{crewcast.StatusDelivered: calls, crewcast.StatusFailed: 2}, nil
	}
	if err := r.WatchRecipients(count, 2*time.Second, clock.now); err != nil {
		t.Fatal(err)
	}
	mfs := scrape(t, r)
	if v := value(t, mfs, "crewcast_recipients", map[string]string{"status": "delivered"}); v != 1 {
		t.Errorf("delivered %v", v)
	}
	if v := value(t, mfs, "crewcast_recipients", map[string]string{"status": "pending"}); v != 0 {
		t.Errorf("pending %v (every status must be present)", v)
	}
	clock.add(time.Second)
	scrape(t, r)
	if calls != 1 {
		t.Errorf("count called %d times within the TTL, want 1", calls)
	}
	clock.add(time.Second)
	if v := value(t, scrape(t, r), "crewcast_recipients", map[string]string{"status": "delivered"}); v != 2 || calls != 2 {
		t.Errorf("after the TTL: delivered %v, calls %d", v, calls)
	}
	// A failing summary drops only its own family.
	fail = errors.New("store down")
	clock.add(3 * time.Second)
	mfs = scrape(t, r)
	if _, ok := mfs["crewcast_recipients"]; ok {
		t.Error("a failed summary still exported figures")
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("a failed summary hid the other metrics")
	}
}

// Methods are arbitrary tokens: only the standard ones become labels.
func TestMethodLabelIsBounded(t *testing.T) {
	for m, want := range map[string]string{"GET": "GET", "DELETE": "DELETE", "OPTIONS": "OPTIONS", "get": "other", "BREW": "other", "": "other"} {
		if got := MethodLabel(m); got != want {
			t.Errorf("MethodLabel(%q) = %q, want %q", m, got, want)
		}
	}
}
