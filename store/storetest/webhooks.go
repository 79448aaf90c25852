package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

func outboxRow(id, typ, groupID string) store.OutboxRow {
	return store.OutboxRow{MsgID: id, Type: typ, GroupID: groupID, Seq: 1, Payload: []byte(`{"type":"` + typ + `"}`)}
}

func endpoint(id string, events ...string) store.WebhookEndpoint {
	return store.WebhookEndpoint{ID: id, URL: "https://hooks.example.com/" + id, Events: events,
		Signing: store.SigningHMAC, Secret: []byte("sealed-" + id), CreatedAt: t0, UpdatedAt: t0}
}

func claimed(ds []store.WebhookDelivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.EndpointID+" "+d.Row.MsgID)
	}
	sort.Strings(out)
	return out
}

// testWebhookEndpoints: endpoint rows round-trip, update and delete.
func testWebhookEndpoints(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	e := endpoint("ep1", "recipient.updated", "group.completed")
	e.Description = "ops"
	e.PrevSecret, e.PrevUntil = []byte("old"), t0.Add(time.Hour)
	if err := s.CreateWebhookEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetWebhookEndpoint(ctx, "ep1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Fatalf("endpoint round trip:\n got %+v\nwant %+v", got, e)
	}
	e.URL, e.DisabledAt, e.DisabledReason = "https://other.example.com/", t0.Add(time.Minute), "operator"
	if err := s.UpdateWebhookEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListWebhookEndpoints(ctx)
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], e) {
		t.Fatalf("list after update = %+v, %v", list, err)
	}
	if err := s.UpdateWebhookEndpoint(ctx, endpoint("nope")); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("update unknown: %v, want ErrNotFound", err)
	}
	if err := s.DeleteWebhookEndpoint(ctx, "ep1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetWebhookEndpoint(ctx, "ep1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
	if err := s.DeleteWebhookEndpoint(ctx, "ep1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
}

// testWebhookOutbox: outbox rows commit with their unit or not at all, are
// fanned out to the endpoints that want them, claimed under a lease,
// retried, recovered, and an endpoint is disabled once with its event.
func testWebhookOutbox(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	a := endpoint("a", "recipient.updated")
	b := endpoint("b", "*")
	c := endpoint("c", "*")
	c.DisabledAt = t0
	for _, e := range []store.WebhookEndpoint{a, b, c} {
		if err := s.CreateWebhookEndpoint(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	commitOK(t, s, actor.Unit{Key: "g2", Events: events("x", 1)})
	res := commit(t, s,
		actor.Unit{Key: "g1", Events: events("a", 1), Effects: []any{store.Effects{Group: group("g1", 1),
			Outbox: []store.OutboxRow{outboxRow("msg_1", "recipient.updated", "g1")}}}},
		// A stale sequence: the unit fails and its outbox row must not exist.
		actor.Unit{Key: "g2", ExpectSeq: 0, Events: events("b", 1), Effects: []any{store.Effects{
			Outbox: []store.OutboxRow{outboxRow("msg_lost", "recipient.updated", "g2")}}}},
		actor.Unit{Key: "g3", Events: events("c", 1), Effects: []any{store.Effects{
			Outbox: []store.OutboxRow{outboxRow("msg_3", "group.completed", "g3")}}}},
	)
	if res[0] != nil || !errors.Is(res[1], actor.ErrConflict) || res[2] != nil {
		t.Fatalf("commit results %v, want ok, conflict, ok", res)
	}
	if n, oldest, err := s.WebhookQueue(ctx); err != nil || n != 2 || !oldest.Equal(t0) {
		t.Fatalf("queue = %d %v %v, want 2 undispatched rows from t0", n, oldest, err)
	}
	if n, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil || n != 2 {
		t.Fatalf("dispatch = %d %v, want 2", n, err)
	}
	if n, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil || n != 0 {
		t.Fatalf("second dispatch = %d %v, want 0", n, err)
	}
	ds, err := s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	// c is disabled; a wants only recipient.updated; msg_lost never committed.
	if got, want := claimed(ds), []string{"a msg_1", "b msg_1", "b msg_3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claimed %v, want %v", got, want)
	}
	for _, d := range ds {
		if d.EndpointID == "a" && (d.Row.Type != "recipient.updated" || d.Row.GroupID != "g1" ||
			string(d.Row.Payload) != `{"type":"recipient.updated"}` || d.Row.ID == 0 || d.Attempts != 0) {
			t.Fatalf("delivery row = %+v", d)
		}
	}
	if again, err := s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"}); err != nil || len(again) != 0 {
		t.Fatalf("claim under lease = %v %v, want nothing", claimed(again), err)
	}
	// Another owner's restart takes back nothing; n1's takes back its 3.
	if n, err := s.ReleaseWebhookClaims(ctx, "n2", clock.Now()); err != nil || n != 0 {
		t.Fatalf("release by n2 = %d %v, want 0", n, err)
	}
	if n, err := s.ReleaseWebhookClaims(ctx, "n1", clock.Now()); err != nil || n != 3 {
		t.Fatalf("release by n1 = %d %v, want 3", n, err)
	}
	if ds, err = s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"}); err != nil || len(ds) != 3 {
		t.Fatalf("claim after release = %v %v, want all 3 again", claimed(ds), err)
	}
	var da, db store.WebhookDelivery
	for _, d := range ds {
		if d.EndpointID == "a" {
			da = d
		} else if d.Row.MsgID == "msg_1" {
			db = d
		}
	}
	// a fails once, retried in 5 s.
	now := clock.Now()
	fail := store.WebhookOutcome{Attempt: store.WebhookAttempt{EndpointID: "a", OutboxID: da.Row.ID, MsgID: "msg_1",
		Type: da.Row.Type, At: now, StatusCode: 503, Result: store.AttemptHTTP, Latency: 12 * time.Millisecond,
		Response: "busy"}, NextAt: now.Add(5 * time.Second)}
	if _, err := s.RecordWebhookAttempt(ctx, fail); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.GetWebhookEndpoint(ctx, "a"); !e.FailingSince.Equal(now) {
		t.Fatalf("failing_since = %v, want %v", e.FailingSince, now)
	}
	// a skipped: only b's leftover is due (after its lease).
	clock.Advance(5 * time.Second)
	ds, err = s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Room: map[string]int{"a": 100, "c": 100}})
	if err != nil || len(ds) != 1 || ds[0].EndpointID != "a" || ds[0].Attempts != 1 {
		t.Fatalf("retry claim = %+v %v, want a's msg_1 after 1 attempt", ds, err)
	}
	ok := fail
	ok.Attempt.At, ok.Attempt.StatusCode, ok.Attempt.Result, ok.NextAt, ok.Delivered = clock.Now(), 200, store.AttemptOK, time.Time{}, true
	if _, err := s.RecordWebhookAttempt(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.GetWebhookEndpoint(ctx, "a"); !e.FailingSince.IsZero() {
		t.Fatalf("failing_since after success = %v, want zero", e.FailingSince)
	}
	as, err := s.ListWebhookAttempts(ctx, "a", 10)
	if err != nil || len(as) != 2 || as[0].Result != store.AttemptOK || as[1].StatusCode != 503 ||
		as[1].Response != "busy" || as[1].Latency != 12*time.Millisecond {
		t.Fatalf("attempts = %+v %v", as, err)
	}
	// b answers 410: disabled once, with its event in the same transaction.
	disabled := outboxRow("msg_disabled_b", "endpoint.disabled", "")
	gone := store.WebhookOutcome{Attempt: store.WebhookAttempt{EndpointID: "b", OutboxID: db.Row.ID, MsgID: "msg_1",
		Type: db.Row.Type, At: clock.Now(), StatusCode: 410, Result: store.AttemptHTTP},
		NextAt: clock.Now().Add(time.Hour), Disable: "gone", Disabled: &disabled}
	// Two 410s recorded in one batch: the first disables, the second finds
	// the endpoint disabled already and writes no second event.
	again := gone
	again.Disabled = &store.OutboxRow{MsgID: "msg_disabled_again", Type: "endpoint.disabled", Payload: []byte("{}")}
	if d, err := s.RecordWebhookAttempts(ctx, []store.WebhookOutcome{gone, again}); err != nil || !reflect.DeepEqual(d, []bool{true, false}) {
		t.Fatalf("two 410s: disabled %v %v, want [true false]", d, err)
	}
	if d, err := s.RecordWebhookAttempt(ctx, again); err != nil || d {
		t.Fatalf("a later 410: disabled %v %v, want false (already disabled)", d, err)
	}
	if e, _ := s.GetWebhookEndpoint(ctx, "b"); e.DisabledAt.IsZero() || e.DisabledReason != "gone" {
		t.Fatalf("b after 410 = %+v", e)
	}
	if n, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil || n != 1 {
		t.Fatalf("dispatch of the disabled event = %d %v, want exactly 1 row", n, err)
	}
	clock.Advance(2 * time.Hour)
	if ds, err := s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"}); err != nil || len(ds) != 0 {
		t.Fatalf("claim with b disabled = %v %v, want nothing", claimed(ds), err)
	}
	// Recover: a received msg_1 already; b gets its two events again.
	if n, err := s.RecoverWebhookDeliveries(ctx, "a", t0, clock.Now()); err != nil || n != 0 {
		t.Fatalf("recover a = %d %v, want 0", n, err)
	}
	if n, err := s.RecoverWebhookDeliveries(ctx, "b", t0, clock.Now()); err != nil || n != 3 {
		t.Fatalf("recover b = %d %v, want 3 (msg_1, msg_3, its own disabled event)", n, err)
	}
	b.DisabledAt = time.Time{}
	if err := s.UpdateWebhookEndpoint(ctx, b); err != nil {
		t.Fatal(err)
	}
	ds, err = s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"})
	if got, want := claimed(ds), []string{"b msg_1", "b msg_3", "b msg_disabled_b"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("claim after recover = %v %v, want %v", got, err, want)
	}
	// A test event goes to its endpoint only; a duplicate msg id is ignored.
	commitOK(t, s, actor.Unit{Key: "g4", Events: events("d", 1), Effects: []any{store.Effects{
		Outbox: []store.OutboxRow{outboxRow("msg_1", "recipient.updated", "g4")}}}})
	test := outboxRow("msg_test", "endpoint.test", "")
	test.Endpoint = "a"
	if err := s.AppendOutbox(ctx, []store.OutboxRow{test}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil || n != 1 {
		t.Fatalf("dispatch test event = %d %v, want 1", n, err)
	}
	ds, err = s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute, Limit: 100, Owner: "n1"})
	if got, want := claimed(ds), []string{"a msg_test"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("claim test event = %v %v, want %v", got, err, want)
	}
	if err := s.DeleteWebhookEndpoint(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if as, err := s.ListWebhookAttempts(ctx, "a", 10); err != nil || len(as) != 0 {
		t.Fatalf("attempts of a deleted endpoint = %v %v", as, err)
	}
	// Purge: b's three deliveries are still pending (claimed), so their
	// rows stay; the rest goes once old enough.
	pendingBefore, _, err := s.WebhookQueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeWebhooks(ctx, t0, t0); err != nil || n != 0 {
		t.Fatalf("purge before anything existed = %d %v", n, err)
	}
	n, err := s.PurgeWebhooks(ctx, clock.Now().Add(time.Hour), t0)
	if err != nil || n == 0 {
		t.Fatalf("purge = %d %v, want rows deleted", n, err)
	}
	if after, _, err := s.WebhookQueue(ctx); err != nil || after != pendingBefore {
		t.Fatalf("pending after purge %d, before %d (%v): purge removed pending work", after, pendingBefore, err)
	}
	if n, err := s.RecoverWebhookDeliveries(ctx, "b", t0, clock.Now()); err != nil || n != 3 {
		t.Fatalf("recover after purge = %d %v, want b's 3 pending rows kept", n, err)
	}
	if as, err := s.ListWebhookAttempts(ctx, "b", 10); err != nil || len(as) != 0 {
		t.Fatalf("b's attempts after purge: %d %v", len(as), err)
	}
	// Past dropPending, pending work goes too.
	if n, err := s.PurgeWebhooks(ctx, clock.Now().Add(time.Hour), clock.Now().Add(time.Hour)); err != nil || n == 0 {
		t.Fatalf("purge with dropPending = %d %v", n, err)
	}
	if after, _, err := s.WebhookQueue(ctx); err != nil || after != 0 {
		t.Fatalf("pending after dropping old rows: %d %v", after, err)
	}
}

// testWebhookClaimsConcurrent: two workers (two store instances, as two
// nodes) claiming at once never take the same delivery.
func testWebhookClaimsConcurrent(t *testing.T, o Options) {
	db := o.NewDB(t)
	clock := NewClock(t0)
	s1 := db.Open(t, Config{Now: clock.Now})
	s2 := db.Open(t, Config{Owner: "node-2", Now: clock.Now})
	ctx := context.Background()
	for _, id := range []string{"a", "b"} {
		if err := s1.CreateWebhookEndpoint(ctx, endpoint(id, "*")); err != nil {
			t.Fatal(err)
		}
	}
	var rows []store.OutboxRow
	for i := range 200 {
		rows = append(rows, outboxRow(fmt.Sprintf("msg_%03d", i), "group.created", "g"))
	}
	if err := s1.AppendOutbox(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if n, err := s1.DispatchOutbox(ctx, clock.Now(), 1000); err != nil || n != 200 {
		t.Fatalf("dispatch %d %v", n, err)
	}
	var wg sync.WaitGroup
	got := make([][]store.WebhookDelivery, 2)
	errs := make([]error, 2)
	for i, s := range []store.Store{s1, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Minute,
					Room: map[string]int{"a": 17, "b": 23}, Owner: fmt.Sprint("w", i)})
				if err != nil {
					errs[i] = err
					return
				}
				if len(ds) == 0 {
					return
				}
				got[i] = append(got[i], ds...)
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("claim errors %v %v", errs[0], errs[1])
	}
	seen := map[string]int{}
	for _, ds := range got {
		for _, d := range ds {
			seen[d.EndpointID+" "+d.Row.MsgID]++
		}
	}
	if len(seen) != 400 {
		t.Fatalf("%d distinct deliveries claimed, want 400", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s claimed %d times", k, n)
		}
	}
}
