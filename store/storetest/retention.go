package storetest

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// seedGroup stores a group with everything that can be keyed to it.
func seedGroup(t *testing.T, s store.Store, id string, created time.Time) {
	t.Helper()
	ctx := context.Background()
	g := group(id, 2)
	g.CreatedAt = created
	d1, d2 := fullDelivery(id, "+15550500001", 0), fullDelivery(id, "+15550500002", 1)
	commitOK(t, s, actor.Unit{
		Key: id,
		Events: []actor.Event{
			{Type: "group.created", Data: []byte(`{"to":["+15550500001","+15550500002"],"text":"Crew call 7am"}`)},
			{Type: "recipient.replied", Data: []byte(`{"number":"+15550500001","text":"yes"}`)},
		},
		Reminders: []actor.ReminderOp{{Name: "check", Due: created.Add(time.Hour)}},
		Effects: []any{store.Effects{
			Group:       g,
			Deliveries:  []store.DeliveryRow{d1, d2},
			Routes:      []store.Route{{Key: "msg-" + id, Value: id}},
			Replies:     []store.Reply{{Provider: "telnyx", EventID: "in-" + id, GroupID: id, Number: "+15550500001", To: "+15550100000", Text: "yes", Media: []string{"https://example.com/x.jpg"}, ReceivedAt: created}},
			Idempotency: &store.IdempotencyKey{Key: "idem-" + id, RequestHash: "h", GroupID: id, CreatedAt: created},
		}},
	})
	if err := s.SaveSnapshot(ctx, actor.Snapshot{Key: id, Seq: 2, State: []byte(`{"to":["+15550500001"]}`)}); err != nil {
		t.Fatal(err)
	}
}

func testRetention(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	seedGroup(t, s, "old-1", t0.Add(-10*24*time.Hour))
	seedGroup(t, s, "old-2", t0.Add(-9*24*time.Hour))
	seedGroup(t, s, "new", t0)
	horizon := t0.Add(-24 * time.Hour)
	cands := func(stage store.RetentionStage, limit int) []string {
		t.Helper()
		ids, err := s.RetentionCandidates(ctx, stage, horizon, limit)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := cands(store.StageRedact, 10); !reflect.DeepEqual(got, []string{"old-1", "old-2"}) {
		t.Fatalf("redact candidates = %v", got)
	}
	if got := cands(store.StageRedact, 1); !reflect.DeepEqual(got, []string{"old-1"}) {
		t.Fatalf("limit 1 = %v", got)
	}

	redacted := 0
	redact := store.Rewriter{
		Event: func(typ string, data []byte) ([]byte, error) {
			redacted++
			return []byte(strings.ReplaceAll(string(data), "Crew call 7am", "")), nil
		},
		RedactText: true,
	}
	if err := s.RewriteGroup(ctx, "old-1", store.StageRedact, redact); err != nil {
		t.Fatal(err)
	}
	if redacted != 2 {
		t.Fatalf("Event rewriter called %d times, want once per event", redacted)
	}
	evs := wantSeqs(t, s, "old-1", 2)
	if strings.Contains(string(evs[0].Data), "Crew call") || evs[0].Type != "group.created" {
		t.Fatalf("journal not rewritten: %s", evs[0].Data)
	}
	g, err := s.GetGroup(ctx, "old-1")
	if err != nil || g.Text != "" || g.From != "+15550100000" {
		t.Fatalf("redacted group = %+v, %v", g, err)
	}
	ds, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "old-1"})
	if err != nil || len(ds) != 2 || ds[0].LastReply != "" || ds[0].Number != "+15550500001" {
		t.Fatalf("redacted deliveries = %+v, %v", ds, err)
	}
	rs, _, err := s.ListReplies(ctx, store.ReplyQuery{GroupID: "old-1"})
	if err != nil || len(rs) != 1 || rs[0].Text != "" || len(rs[0].Media) != 0 {
		t.Fatalf("redacted replies = %+v, %v", rs, err)
	}
	if _, err := s.LoadSnapshot(ctx, "old-1"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("snapshot kept after rewrite: %v", err)
	}
	// Applied stages are not candidates again, and a second rewrite is a
	// no-op.
	if got := cands(store.StageRedact, 10); !reflect.DeepEqual(got, []string{"old-2"}) {
		t.Fatalf("redact candidates after rewrite = %v", got)
	}
	if got := cands(store.StageHash, 10); !reflect.DeepEqual(got, []string{"old-1", "old-2"}) {
		t.Fatalf("hash candidates = %v", got)
	}
	if err := s.RewriteGroup(ctx, "old-1", store.StageRedact, redact); err != nil || redacted != 2 {
		t.Fatalf("second rewrite: %v, rewriter calls %d", err, redacted)
	}

	hash := func(n string) string { return "h:" + n }
	for range 2 {
		if err := s.RewriteGroup(ctx, "old-1", store.StageHash, store.Rewriter{Number: hash}); err != nil {
			t.Fatal(err)
		}
	}
	ds, _, err = s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "old-1"})
	if err != nil || len(ds) != 2 || ds[0].Number != "h:+15550500001" || ds[1].Number != "h:+15550500002" {
		t.Fatalf("hashed deliveries = %v, %v (numbers are hashed exactly once)", numbers(ds), err)
	}
	if ds[0].Status != fullDelivery("", "", 0).Status || ds[0].ProviderMessageID != "pm-+15550500001" {
		t.Fatalf("hashing changed other fields: %+v", ds[0])
	}
	if got, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{Number: "h:+15550500002"}); err != nil || len(got) != 1 {
		t.Fatalf("delivery by hashed number = %v, %v", numbers(got), err)
	}
	rs, _, err = s.ListReplies(ctx, store.ReplyQuery{GroupID: "old-1"})
	if err != nil || len(rs) != 1 || rs[0].Number != "h:+15550500001" || rs[0].To != "h:+15550100000" {
		t.Fatalf("hashed replies = %+v, %v", rs, err)
	}
	if g, err := s.GetGroup(ctx, "old-1"); err != nil || g.From != "h:+15550100000" {
		t.Fatalf("hashed group = %+v, %v", g, err)
	}
	// The other groups are untouched.
	if ds, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "old-2"}); err != nil || ds[0].Number != "+15550500001" || ds[0].LastReply == "" {
		t.Fatalf("old-2 changed: %+v, %v", ds, err)
	}
	if _, err := s.LoadSnapshot(ctx, "old-2"); err != nil {
		t.Fatalf("old-2 snapshot: %v", err)
	}
	if err := s.RewriteGroup(ctx, "missing", store.StageHash, store.Rewriter{Number: hash}); err != nil {
		t.Fatalf("rewriting a missing group: %v", err)
	}

	// Deletion removes everything keyed to the group.
	if got := cands("", 10); !reflect.DeepEqual(got, []string{"old-1", "old-2"}) {
		t.Fatalf("delete candidates = %v", got)
	}
	for range 2 {
		if err := s.DeleteGroup(ctx, "old-2"); err != nil {
			t.Fatal(err)
		}
	}
	wantSeqs(t, s, "old-2", 0)
	wantNoGroup(t, s, "old-2")
	if ds, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "old-2"}); err != nil || len(ds) != 0 {
		t.Fatalf("deliveries after delete: %v %v", ds, err)
	}
	if rs, _, err := s.ListReplies(ctx, store.ReplyQuery{GroupID: "old-2"}); err != nil || len(rs) != 0 {
		t.Fatalf("replies after delete: %v %v", rs, err)
	}
	if _, err := s.LoadSnapshot(ctx, "old-2"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("snapshot after delete: %v", err)
	}
	if _, err := s.GetRoute(ctx, "msg-old-2"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("route after delete: %v", err)
	}
	if _, err := s.GetIdempotency(ctx, "idem-old-2"); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("idempotency key after delete: %v", err)
	}
	due, err := s.DueReminders(ctx, t0.Add(48*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	var dueKeys []string
	for _, r := range due {
		dueKeys = append(dueKeys, r.Key)
	}
	if !reflect.DeepEqual(dueKeys, []string{"old-1", "new"}) {
		t.Fatalf("reminders after delete = %v", dueKeys)
	}
	if got := cands("", 10); !reflect.DeepEqual(got, []string{"old-1"}) {
		t.Fatalf("delete candidates after delete = %v", got)
	}
	// The new group is whole.
	wantSeqs(t, s, "new", 2)
	if _, err := s.GetRoute(ctx, "msg-new"); err != nil {
		t.Fatalf("other group's route: %v", err)
	}
	if _, err := s.GetIdempotency(ctx, "idem-new"); err != nil {
		t.Fatalf("other group's idempotency key: %v", err)
	}
	// A deleted group id can be used again from scratch.
	commitOK(t, s, actor.Unit{Key: "old-2", Events: events("again", 1)})
}

func testRedactUnmatched(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	replies := []store.Reply{
		{Provider: "telnyx", EventID: "u-old", Number: "+15550600001", To: "+15550100000", Text: "who is this", Media: []string{"https://example.com/m.jpg"}, ReceivedAt: t0.Add(-48 * time.Hour)},
		{Provider: "telnyx", EventID: "u-new", Number: "+15550600002", To: "+15550100000", Text: "hello", ReceivedAt: t0},
		{Provider: "telnyx", EventID: "m-old", GroupID: "g", Number: "+15550600003", To: "+15550100000", Text: "yes", ReceivedAt: t0.Add(-48 * time.Hour)},
	}
	commitOK(t, s, actor.Unit{Key: "r", Effects: []any{store.Effects{Replies: replies}}})
	hash := func(n string) string { return "h:" + n }
	n, err := s.RedactUnmatchedReplies(ctx, t0.Add(-24*time.Hour), hash)
	if err != nil || n != 1 {
		t.Fatalf("RedactUnmatchedReplies = %d, %v, want 1", n, err)
	}
	if n, err := s.RedactUnmatchedReplies(ctx, t0.Add(-24*time.Hour), hash); err != nil || n != 0 {
		t.Fatalf("second run = %d, %v, want 0 (idempotent)", n, err)
	}
	got, _, err := s.ListReplies(ctx, store.ReplyQuery{})
	if err != nil || len(got) != 3 {
		t.Fatalf("replies = %+v, %v", got, err)
	}
	byID := map[string]store.Reply{}
	for _, r := range got {
		byID[r.EventID] = r
	}
	old := byID["u-old"]
	if old.Text != "" || len(old.Media) != 0 || old.Number != "h:+15550600001" || old.To != "h:+15550100000" {
		t.Fatalf("redacted reply = %+v", old)
	}
	if r := byID["u-new"]; !reflect.DeepEqual(r, replies[1]) {
		t.Fatalf("recent unmatched reply changed: %+v", r)
	}
	if r := byID["m-old"]; !reflect.DeepEqual(r, replies[2]) {
		t.Fatalf("matched reply changed: %+v", r)
	}
	// Without a number mapping only text goes.
	if n, err := s.RedactUnmatchedReplies(ctx, t0.Add(time.Hour), nil); err != nil || n != 1 {
		t.Fatalf("redact without mapping = %d, %v", n, err)
	}
	got, _, _ = s.ListReplies(ctx, store.ReplyQuery{Unmatched: true})
	if len(got) != 2 || got[0].EventID != "u-new" || got[0].Text != "" || got[0].Number != "+15550600002" {
		t.Fatalf("after second redaction = %+v", got)
	}
}

// testTrimJournal: TrimJournal deletes only the key's events below the
// given sequence that are older than the given time, and appending goes on
// from the head.
func testTrimJournal(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	for _, key := range []string{"unmatched", "other"} {
		for seq := uint64(1); seq <= 5; seq++ {
			at := t0.Add(time.Duration(seq) * time.Minute)
			commitOK(t, s, actor.Unit{Key: key, ExpectSeq: seq - 1,
				Events: []actor.Event{{Seq: seq, Type: "t", Data: []byte(`{}`), Time: at}}})
		}
	}
	seqs := func(key string) []uint64 {
		var out []uint64
		if err := s.Load(ctx, key, 0, func(e actor.Event) error { out = append(out, e.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Below seq 4 and before minute 2.5: seqs 1 and 2.
	n, err := s.TrimJournal(ctx, "unmatched", 4, t0.Add(150*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("TrimJournal = %d, %v; want 2", n, err)
	}
	if got := seqs("unmatched"); !reflect.DeepEqual(got, []uint64{3, 4, 5}) {
		t.Fatalf("after trim: %v", got)
	}
	if got := seqs("other"); len(got) != 5 {
		t.Fatalf("another key lost events: %v", got)
	}
	// Never at or past beforeSeq, however old.
	clock.Advance(time.Hour)
	if n, err := s.TrimJournal(ctx, "unmatched", 5, t0.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("second TrimJournal = %d, %v; want 2", n, err)
	}
	if got := seqs("unmatched"); !reflect.DeepEqual(got, []uint64{5}) {
		t.Fatalf("after second trim: %v", got)
	}
	commitOK(t, s, actor.Unit{Key: "unmatched", ExpectSeq: 5, Events: []actor.Event{{Seq: 6, Type: "t", Data: []byte(`{}`)}}})
	if got := seqs("unmatched"); !reflect.DeepEqual(got, []uint64{5, 6}) {
		t.Fatalf("after appending: %v", got)
	}
}

// testDeleteUnmatchedReplies: only unmatched replies older than the
// horizon go; replies of groups stay (they go with their group).
func testDeleteUnmatchedReplies(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	commitOK(t, s, actor.Unit{Key: "r", Effects: []any{store.Effects{Replies: []store.Reply{
		{Provider: "telnyx", EventID: "u-old", Number: "+15550600001", To: "+15550100000", Text: "who", ReceivedAt: t0.Add(-48 * time.Hour)},
		{Provider: "telnyx", EventID: "u-new", Number: "+15550600002", To: "+15550100000", Text: "hello", ReceivedAt: t0},
		{Provider: "telnyx", EventID: "m-old", GroupID: "g", Number: "+15550600003", To: "+15550100000", Text: "yes", ReceivedAt: t0.Add(-48 * time.Hour)},
	}}}})
	if n, err := s.DeleteUnmatchedReplies(ctx, t0.Add(-24*time.Hour)); err != nil || n != 1 {
		t.Fatalf("DeleteUnmatchedReplies = %d, %v; want 1", n, err)
	}
	if n, err := s.DeleteUnmatchedReplies(ctx, t0.Add(-24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("second run = %d, %v; want 0", n, err)
	}
	got, _, err := s.ListReplies(ctx, store.ReplyQuery{})
	if err != nil || len(got) != 2 {
		t.Fatalf("replies left = %+v, %v", got, err)
	}
	for _, r := range got {
		if r.EventID == "u-old" {
			t.Fatalf("old unmatched reply kept: %+v", r)
		}
	}
}

// testRetentionDropsOutbox: an outbound webhook event holds the group's
// numbers and texts as they were. When retention rewrites or deletes the
// group, its events still in the outbox (undelivered, or kept for
// recovery) go too, so no payload outlives the group's own redaction.
func testRetentionDropsOutbox(t *testing.T, o Options) {
	s, clock, _ := open(t, o)
	ctx := context.Background()
	seedGroup(t, s, "old-1", t0.Add(-10*24*time.Hour))
	seedGroup(t, s, "old-2", t0.Add(-9*24*time.Hour))
	if err := s.CreateWebhookEndpoint(ctx, endpoint("a", "*")); err != nil {
		t.Fatal(err)
	}
	commitOK(t, s, actor.Unit{Key: "outbox", Events: events("o", 1), Effects: []any{store.Effects{Outbox: []store.OutboxRow{
		outboxRow("msg_1a", "recipient.replied", "old-1"),
		outboxRow("msg_2a", "recipient.replied", "old-2"),
	}}}})
	// One of each dispatched (a delivery row exists), one of each not.
	if _, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil {
		t.Fatal(err)
	}
	commitOK(t, s, actor.Unit{Key: "outbox", ExpectSeq: 1, Events: events("p", 1), Effects: []any{store.Effects{Outbox: []store.OutboxRow{
		outboxRow("msg_1b", "recipient.replied", "old-1"),
		outboxRow("msg_2b", "recipient.replied", "old-2"),
	}}}})
	queued := func() []string {
		t.Helper()
		if _, err := s.DispatchOutbox(ctx, clock.Now(), 100); err != nil {
			t.Fatal(err)
		}
		ds, err := s.ClaimWebhookDeliveries(ctx, store.WebhookClaim{Now: clock.Now(), Lease: time.Millisecond, Limit: 100, Owner: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second) // let the lease lapse for the next look
		got := claimed(ds)
		sort.Strings(got)
		return got
	}
	if got := queued(); !reflect.DeepEqual(got, []string{"a msg_1a", "a msg_1b", "a msg_2a", "a msg_2b"}) {
		t.Fatalf("queued before retention: %v", got)
	}
	if err := s.RewriteGroup(ctx, "old-1", store.StageRedact, store.Rewriter{RedactText: true}); err != nil {
		t.Fatal(err)
	}
	if got := queued(); !reflect.DeepEqual(got, []string{"a msg_2a", "a msg_2b"}) {
		t.Fatalf("after redacting old-1 the outbox still holds %v, want only old-2's events", got)
	}
	if err := s.DeleteGroup(ctx, "old-2"); err != nil {
		t.Fatal(err)
	}
	if got := queued(); len(got) != 0 {
		t.Fatalf("after deleting old-2 the outbox still holds %v", got)
	}
	if n, _, err := s.WebhookQueue(ctx); err != nil || n != 0 {
		t.Fatalf("queue = %d %v, want empty", n, err)
	}
}
