package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

func testInboxConcurrentInsert(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	for round := range 3 {
		id := fmt.Sprintf("ev-%d", round)
		var fresh atomic.Int32
		errs := make([]error, 8)
		concurrently(8, func(i int) {
			isNew, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: id,
				MessageID: "m", Payload: fmt.Appendf(nil, `{"writer":%d}`, i)}})
			if err != nil {
				errs[i] = err
				return
			}
			if isNew[0] {
				fresh.Add(1)
			}
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := fresh.Load(); n != 1 {
			t.Fatalf("round %d: %d inserters saw isNew, want exactly 1", round, n)
		}
	}
	pending, err := s.PendingInbox(ctx, store.InboxRef{}, 100)
	if err != nil || len(pending) != 3 {
		t.Fatalf("pending = %d rows, %v; want one row per event", len(pending), err)
	}
}

func testInboxBatchMixed(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	entry := func(id, payload string) store.InboxEntry {
		return store.InboxEntry{Provider: "twilio", EventID: id, MessageID: "SM" + id, Payload: []byte(payload)}
	}
	isNew, err := s.InsertInbox(ctx, []store.InboxEntry{entry("a", "1"), entry("b", "1")})
	if err != nil || !reflect.DeepEqual(isNew, []bool{true, true}) {
		t.Fatalf("first insert = %v, %v", isNew, err)
	}
	clock.Advance(time.Second)
	isNew, err = s.InsertInbox(ctx, []store.InboxEntry{entry("b", "2"), entry("c", "2"), entry("c", "3"),
		{Provider: "telnyx", EventID: "a", Payload: []byte("other provider")}})
	if err != nil || !reflect.DeepEqual(isNew, []bool{false, true, false, true}) {
		t.Fatalf("mixed insert = %v, %v, want [false true false true]", isNew, err)
	}
	pending, err := s.PendingInbox(ctx, store.InboxRef{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range pending {
		got = append(got, fmt.Sprintf("%s/%s/%s", e.Provider, e.EventID, e.Payload))
	}
	want := []string{"twilio/a/1", "twilio/b/1", "twilio/c/2", "telnyx/a/other provider"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stored = %v, want %v (duplicates must leave the first row untouched)", got, want)
	}
	if !pending[0].ReceivedAt.Equal(t0) || !pending[2].ReceivedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("ReceivedAt = %v / %v, want the store clock at insert", pending[0].ReceivedAt, pending[2].ReceivedAt)
	}
	if isNew, err := s.InsertInbox(ctx, nil); err != nil || len(isNew) != 0 {
		t.Fatalf("empty insert = %v, %v", isNew, err)
	}
}

func testInboxPendingAckPurge(t *testing.T, o Options) {
	s, clock, db := open(t, o)
	ctx := context.Background()
	var entries []store.InboxEntry
	for i := range 6 {
		msg := "m-other"
		if i%2 == 0 {
			msg = "m-parked"
		}
		entries = append(entries, store.InboxEntry{Provider: "telnyx", EventID: fmt.Sprintf("e%d", i),
			MessageID: msg, Payload: fmt.Appendf(nil, `{"i":%d}`, i)})
	}
	entries[5].MessageID = "" // inbound: no message id
	if _, err := s.InsertInbox(ctx, entries); err != nil {
		t.Fatal(err)
	}
	ids := func(es []store.InboxEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.EventID)
		}
		return out
	}
	page, err := s.PendingInbox(ctx, store.InboxRef{}, 4)
	if err != nil || !reflect.DeepEqual(ids(page), []string{"e0", "e1", "e2", "e3"}) {
		t.Fatalf("first page = %v, %v", ids(page), err)
	}
	page, err = s.PendingInbox(ctx, store.InboxRef{Provider: "telnyx", EventID: "e3"}, 4)
	if err != nil || !reflect.DeepEqual(ids(page), []string{"e4", "e5"}) {
		t.Fatalf("second page = %v, %v", ids(page), err)
	}
	parked, err := s.InboxByMessageID(ctx, "telnyx", "m-parked")
	if err != nil || !reflect.DeepEqual(ids(parked), []string{"e0", "e2", "e4"}) {
		t.Fatalf("InboxByMessageID = %v, %v", ids(parked), err)
	}
	if got, err := s.InboxByMessageID(ctx, "twilio", "m-parked"); err != nil || len(got) != 0 {
		t.Fatalf("other provider's message id matched: %v %v", ids(got), err)
	}

	clock.Advance(time.Minute)
	ackTime := clock.Now()
	if err := s.AckInbox(ctx, []store.InboxRef{{Provider: "telnyx", EventID: "e0", Target: "g-1"},
		{Provider: "telnyx", EventID: "e1"}, {Provider: "telnyx", EventID: "unknown"}}); err != nil {
		t.Fatal(err)
	}
	// Through a unit as well.
	commitOK(t, s, actor.Unit{Key: "g-2", Effects: []any{store.Effects{InboxDone: []store.InboxRef{{Provider: "telnyx", EventID: "e2", Target: "g-2"}}}}})
	page, err = s.PendingInbox(ctx, store.InboxRef{}, 10)
	if err != nil || !reflect.DeepEqual(ids(page), []string{"e3", "e4", "e5"}) {
		t.Fatalf("pending after acks = %v, %v", ids(page), err)
	}
	parked, err = s.InboxByMessageID(ctx, "telnyx", "m-parked")
	if err != nil || !reflect.DeepEqual(ids(parked), []string{"e4"}) {
		t.Fatalf("parked after acks = %v, %v (processed entries are no longer parked)", ids(parked), err)
	}
	// An acknowledged entry keeps no payload (numbers, texts): nothing
	// reads it again, and retention would otherwise have to reach it.
	for _, id := range []string{"e0", "e1", "e2"} {
		if p := db.InboxPayload(t, "telnyx", id); len(p) != 0 {
			t.Fatalf("acknowledged %s keeps its payload %q", id, p)
		}
	}
	if p := db.InboxPayload(t, "telnyx", "e3"); string(p) != `{"i":3}` {
		t.Fatalf("pending e3 payload = %q", p)
	}
	// Paging after an entry that has since been processed still works.
	page, err = s.PendingInbox(ctx, store.InboxRef{Provider: "telnyx", EventID: "e2"}, 10)
	if err != nil || !reflect.DeepEqual(ids(page), []string{"e3", "e4", "e5"}) {
		t.Fatalf("pending after processed e2 = %v, %v", ids(page), err)
	}

	// A replayed ack later keeps the first processing time.
	clock.Advance(time.Hour)
	if err := s.AckInbox(ctx, []store.InboxRef{{Provider: "telnyx", EventID: "e0"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeInbox(ctx, ackTime); err != nil || n != 0 {
		t.Fatalf("purge before the acks = %d, %v, want 0", n, err)
	}
	if n, err := s.PurgeInbox(ctx, ackTime.Add(time.Nanosecond)); err != nil || n != 3 {
		t.Fatalf("purge after the acks = %d, %v, want 3 (pending entries are never purged)", n, err)
	}
	// A purged entry stays known by its replay record (testReplayRecord)
	// until the record is purged too.
	isNew, err := s.InsertInbox(ctx, []store.InboxEntry{entries[3], entries[0]})
	if err != nil || !reflect.DeepEqual(isNew, []bool{false, false}) {
		t.Fatalf("insert after purge = %v, %v; want a duplicate and a replay", isNew, err)
	}
	if _, err := s.PurgeReplays(ctx, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	isNew, err = s.InsertInbox(ctx, []store.InboxEntry{entries[3], entries[0]})
	if err != nil || !reflect.DeepEqual(isNew, []bool{false, true}) {
		t.Fatalf("insert after purging inbox and replay record = %v, %v", isNew, err)
	}
	page, err = s.PendingInbox(ctx, store.InboxRef{}, 10)
	if err != nil || !reflect.DeepEqual(ids(page), []string{"e3", "e4", "e5", "e0"}) {
		t.Fatalf("pending after purge = %v, %v", ids(page), err)
	}
	if page[3].Target != "" || !page[3].ProcessedAt.IsZero() {
		t.Fatalf("re-inserted entry = %+v", page[3])
	}
	// An entry inserted already routed keeps its target.
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: "routed", Target: "g-9", Payload: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	page, err = s.PendingInbox(ctx, store.InboxRef{Provider: "telnyx", EventID: "e0"}, 10)
	if err != nil || len(page) != 1 || page[0].Target != "g-9" {
		t.Fatalf("routed entry = %+v, %v", page, err)
	}
}

func testRoutes(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	if _, err := s.GetRoute(ctx, "nope"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("GetRoute(missing) = %v", err)
	}
	forever := store.Route{Key: "msg-1", Value: "g-1"}
	expiring := store.Route{Key: "conv-1", Value: "g-2", ExpiresAt: t0.Add(time.Hour)}
	for _, r := range []store.Route{forever, expiring} {
		if err := s.PutRoute(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []store.Route{forever, expiring} {
		if got, err := s.GetRoute(ctx, r.Key); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("GetRoute(%s) = %+v, %v", r.Key, got, err)
		}
	}
	br, ok := s.(store.RouteBatchReader)
	if !ok {
		t.Fatalf("%T reads no routes in batches (store.RouteBatchReader)", s)
	}
	batchKeys := []string{"msg-1", "conv-1", "nope"}
	for i := range 600 { // past one query's keys
		batchKeys = append(batchKeys, fmt.Sprintf("missing-%d", i))
	}
	batchKeys = append(batchKeys, "msg-1")
	if got, err := br.GetRoutes(ctx, batchKeys); err != nil || len(got) != 2 ||
		!reflect.DeepEqual(got["msg-1"], forever) || !reflect.DeepEqual(got["conv-1"], expiring) {
		t.Fatalf("GetRoutes = %+v, %v", got, err)
	}
	clock.Advance(time.Hour)
	if _, err := s.GetRoute(ctx, "conv-1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("expired route = %v, want ErrNotFound", err)
	}
	if got, err := br.GetRoutes(ctx, []string{"conv-1", "msg-1"}); err != nil || len(got) != 1 || !reflect.DeepEqual(got["msg-1"], forever) {
		t.Fatalf("GetRoutes after conv-1 expired = %+v, %v", got, err)
	}
	if _, err := s.GetRoute(ctx, "msg-1"); err != nil {
		t.Fatalf("route without expiry: %v", err)
	}
	// Put replaces (and may extend) a route.
	moved := store.Route{Key: "conv-1", Value: "g-3", ExpiresAt: t0.Add(3 * time.Hour)}
	if err := s.PutRoute(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetRoute(ctx, "conv-1"); err != nil || !reflect.DeepEqual(got, moved) {
		t.Fatalf("replaced route = %+v, %v", got, err)
	}
	if err := s.DeleteRoute(ctx, "msg-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRoute(ctx, "msg-1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("deleted route = %v", err)
	}
	if err := s.DeleteRoute(ctx, "msg-1"); err != nil {
		t.Fatalf("deleting a missing route: %v", err)
	}
	// Routes through a unit.
	viaUnit := store.Route{Key: "msg-2", Value: "g-4"}
	commitOK(t, s, actor.Unit{Key: "g-4", Events: events("1", 1), Effects: []any{store.Effects{Routes: []store.Route{viaUnit}}}})
	if got, err := s.GetRoute(ctx, "msg-2"); err != nil || !reflect.DeepEqual(got, viaUnit) {
		t.Fatalf("route via unit = %+v, %v", got, err)
	}
}
