package storetest

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// testErasure: one person is erased from a group, the unmatched replies,
// the inbox, the routes and the suppression list; the other recipient of
// the group is untouched, the opt-out survives under the kept form, and a
// second erasure finds nothing left.
func testErasure(t *testing.T, o Options) {
	s, _, _ := open(t, o)
	ctx := context.Background()
	const who, other, keep, repl = "+15550500001", "+15550500002", "h:kept", "h:erased"
	seedGroup(t, s, "g1", t0)
	commitOK(t, s, actor.Unit{Key: "u", Effects: []any{store.Effects{
		Routes:   []store.Route{{Key: "conv:+15550100000:" + who, Value: "g1"}, {Key: "conv:+15550100000:" + other, Value: "g1"}},
		Replies:  []store.Reply{{Provider: "telnyx", EventID: "unmatched-1", Number: who, To: "+15550100000", Text: "who is this", ReceivedAt: t0}},
		Suppress: []store.Suppression{{Number: who, Reason: store.ReasonStop, CreatedAt: t0}},
	}}})
	if _, err := s.InsertInbox(ctx, []store.InboxEntry{
		{Provider: "telnyx", EventID: "in-who", Payload: []byte(`[{"from":"` + who + `","text":"who is this"}]`), ReceivedAt: t0},
		{Provider: "telnyx", EventID: "in-other", Payload: []byte(`[{"from":"` + other + `","text":"hi"}]`), ReceivedAt: t0},
	}); err != nil {
		t.Fatal(err)
	}

	// g2 names the person only in its frozen policy: an escalation number
	// (docs/design.md §12), never a recipient.
	g2 := group("g2", 1)
	commitOK(t, s, actor.Unit{Key: "g2", Events: []actor.Event{{Type: "group.created",
		Data: []byte(`{"to":["` + other + `"],"policy":{"escalate":{"to":["` + who + `"]}}}`)}},
		Effects: []any{store.Effects{Group: g2, Deliveries: []store.DeliveryRow{fullDelivery("g2", other, 0)}}}})
	ids, err := s.GroupsWithNumber(ctx, who)
	if err != nil || !reflect.DeepEqual(ids, []string{"g1", "g2"}) {
		t.Fatalf("GroupsWithNumber = %v, %v", ids, err)
	}
	if _, err := s.EraseFromGroup(ctx, "g2", store.GroupErasure{Number: who, Replacement: repl, Event: func(_ string, data []byte) ([]byte, error) {
		return bytes.ReplaceAll(data, []byte(who), []byte(repl)), nil
	}}); err != nil {
		t.Fatal(err)
	}
	ids, err = s.GroupsWithNumber(ctx, who)
	if err != nil || !reflect.DeepEqual(ids, []string{"g1"}) {
		t.Fatalf("GroupsWithNumber = %v, %v", ids, err)
	}
	swap := func(_ string, data []byte) ([]byte, error) {
		return bytes.ReplaceAll(data, []byte(who), []byte(repl)), nil
	}
	gc, err := s.EraseFromGroup(ctx, "g1", store.GroupErasure{Number: who, Replacement: repl, RedactText: true, Event: swap})
	if err != nil {
		t.Fatal(err)
	}
	if gc["deliveries"] != 1 || gc["replies"] != 1 || gc["journal"] != 2 || gc["routes"] != 1 {
		t.Fatalf("EraseFromGroup counts = %v", gc)
	}
	nc, err := s.EraseNumber(ctx, who, repl, keep)
	if err != nil {
		t.Fatal(err)
	}
	if nc["replies"] != 1 || nc["inbox"] != 1 || nc["suppressions"] != 1 || nc["deliveries"] != 0 {
		t.Fatalf("EraseNumber counts = %v", nc)
	}

	// Nothing names the person any more.
	if ids, err := s.GroupsWithNumber(ctx, who); err != nil || len(ids) != 0 {
		t.Fatalf("after erasure GroupsWithNumber = %v, %v", ids, err)
	}
	if rows, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{Number: who}); err != nil || len(rows) != 0 {
		t.Fatalf("deliveries of the erased number: %+v, %v", rows, err)
	}
	if rows, _, err := s.ListReplies(ctx, store.ReplyQuery{Number: who}); err != nil || len(rows) != 0 {
		t.Fatalf("replies of the erased number: %+v, %v", rows, err)
	}
	rows, _, err := s.ListReplies(ctx, store.ReplyQuery{Number: repl})
	if err != nil || len(rows) != 2 {
		t.Fatalf("replies under the replacement: %+v, %v", rows, err)
	}
	for _, r := range rows {
		if r.Text != "" || len(r.Media) != 0 {
			t.Fatalf("erased reply kept its body: %+v", r)
		}
	}
	if err := s.Load(ctx, "g1", 0, func(e actor.Event) error {
		if bytes.Contains(e.Data, []byte(who)) {
			t.Errorf("journal event %s still names the person: %s", e.Type, e.Data)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadSnapshot(ctx, "g1"); err == nil {
		t.Fatal("the group's snapshot (which named the person) survived")
	}
	if g, err := s.GetGroup(ctx, "g1"); err != nil || g.Text != "" {
		t.Fatalf("group text not redacted: %+v, %v", g, err)
	}
	if _, err := s.GetRoute(ctx, "conv:+15550100000:"+who); err == nil {
		t.Fatal("the person's conversation route survived")
	}
	if _, err := s.GetRoute(ctx, "conv:+15550100000:"+other); err != nil {
		t.Fatalf("the other person's route is gone: %v", err)
	}
	pend, err := s.PendingInbox(ctx, store.InboxRef{}, 10)
	if err != nil || len(pend) != 1 || pend[0].EventID != "in-other" {
		t.Fatalf("pending inbox = %+v, %v (the erased entry must never be applied)", pend, err)
	}
	// Replays of the erased webhook are still recognized.
	if isNew, err := s.InsertInbox(ctx, []store.InboxEntry{{Provider: "telnyx", EventID: "in-who", Payload: []byte(`[]`), ReceivedAt: t0}}); err != nil || isNew[0] {
		t.Fatalf("replayed erased webhook: new=%v, %v", isNew, err)
	}

	// The opt-out stays in force under the kept form only.
	sup, err := s.Suppressed(ctx, []string{who, keep})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sup[who]; ok {
		t.Fatalf("the number in clear is still on the suppression list")
	}
	if sp, ok := sup[keep]; !ok || sp.Reason != store.ReasonStop || !sp.CreatedAt.Equal(t0) {
		t.Fatalf("kept suppression = %+v, %v", sp, ok)
	}

	// The other recipient is untouched.
	if rows, _, err := s.ListDeliveries(ctx, store.DeliveryQuery{GroupID: "g1", Number: other}); err != nil || len(rows) != 1 ||
		!reflect.DeepEqual(rows[0], fullDelivery("g1", other, 1)) {
		t.Fatalf("other recipient's delivery = %+v, %v", rows, err)
	}

	// Idempotent: nothing left to change.
	if gc, err := s.EraseFromGroup(ctx, "g1", store.GroupErasure{Number: who, Replacement: repl, RedactText: true, Event: swap}); err != nil || gc.Total() != 0 {
		t.Fatalf("second EraseFromGroup = %v, %v", gc, err)
	}
	if nc, err := s.EraseNumber(ctx, who, repl, keep); err != nil || nc.Total() != 0 {
		t.Fatalf("second EraseNumber = %v, %v", nc, err)
	}
	if gc, err := s.EraseFromGroup(ctx, "missing", store.GroupErasure{Number: who, Replacement: repl}); err != nil || gc.Total() != 0 {
		t.Fatalf("missing group = %v, %v", gc, err)
	}
}
