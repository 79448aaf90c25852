package tracker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

func TestRetentionRedactsHashesAndDeletesWithInjectedClock(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	done := e.create(2, crewcast.ModeIndividual)
	_, rows := e.waitGroup(done, "sent", allStatus(crewcast.StatusSent))
	for i, d := range rows {
		if _, err := e.tr.Ingest(ctx, []crewcast.Event{statusEvent(fmt.Sprintf("evt-%d", i), d, crewcast.StatusDelivered)}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := e.tr.Ingest(ctx, []crewcast.Event{{Provider: "fake", EventID: "reply-1", Kind: crewcast.KindInbound, From: d.Number, To: from, Text: "secret yes"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.waitGroup(done, "complete with reply", func(g store.GroupRow, _ []store.DeliveryRow) bool {
		return g.Status == crewcast.GroupComplete && g.Counts["replied"] == 1
	})
	// A group still sending is left alone.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	e.prov.mu.Lock()
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		<-release
		return crewcast.SendResult{MessageID: id}, nil
	}
	e.prov.mu.Unlock()
	open := e.create(1, crewcast.ModeIndividual)
	e.waitGroup(open, "claimed", allStatus(crewcast.StatusSending))

	policy := RetentionPolicy{HashKey: []byte("k")}
	run := func() RetentionReport {
		t.Helper()
		rep, err := e.tr.RunRetention(ctx, policy)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(); rep != (RetentionReport{}) {
		t.Fatalf("nothing is old yet: %+v", rep)
	}
	e.clk.Advance(31 * 24 * time.Hour)
	if rep := run(); rep.Redacted != 1 || rep.Skipped != 1 {
		t.Fatalf("after 31 days: %+v", rep)
	}
	if rep := run(); rep.Redacted != 0 {
		t.Fatalf("second run redacted again: %+v", rep)
	}
	journal := func(id string) string {
		var b strings.Builder
		_ = e.st.Load(ctx, id, 0, func(ev actor.Event) error { b.Write(ev.Data); return nil })
		return b.String()
	}
	if j := journal(done); strings.Contains(j, "Crew call") || strings.Contains(j, "secret yes") {
		t.Fatalf("bodies survived redaction: %s", j)
	}
	if g, _ := e.st.GetGroup(ctx, done); g.Text != "" || g.Counts["delivered"] != 2 {
		t.Fatalf("group row after redaction: %+v", g)
	}
	e.clk.Advance(60 * 24 * time.Hour)
	if rep := run(); rep.Hashed != 1 {
		t.Fatalf("after 91 days: %+v", rep)
	}
	if j := journal(done); strings.Contains(j, "+1555") {
		t.Fatalf("numbers survived hashing: %s", j)
	}
	rows, _, err := e.st.ListDeliveries(ctx, store.DeliveryQuery{GroupID: done})
	if err != nil || len(rows) != 2 || !strings.HasPrefix(rows[0].Number, "h:") || rows[0].Number != HashNumber([]byte("k"), nums(2)[0]) && rows[1].Number != HashNumber([]byte("k"), nums(2)[0]) {
		t.Fatalf("deliveries after hashing: %+v %v", rows, err)
	}
	// The rewritten group still recovers.
	if err := e.tr.Cancel(ctx, done, "op"); !errors.Is(err, group.ErrState) {
		t.Fatalf("cancel a complete, hashed group: %v", err)
	}
	e.clk.Advance(300 * 24 * time.Hour)
	if rep := run(); rep.Deleted != 1 {
		t.Fatalf("after 391 days: %+v", rep)
	}
	if _, err := e.st.GetGroup(ctx, done); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("deleted group still there: %v", err)
	}
	if rep := run(); rep.Deleted != 0 || rep.Redacted != 0 || rep.Hashed != 0 {
		t.Fatalf("idempotent: %+v", rep)
	}
}

// Issue 27 item 5: the replay record is a retention policy of its own.
// A processed webhook's inbox row goes after InboxAfter, but the webhook
// stays refused (a replay) until ReplayAfter — by default DeleteAfter +
// InboxAfter — and only then may its event id be stored again.
func TestRetentionKeepsTheReplayRecordPastTheInboxWindow(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	in := crewcast.Event{Provider: "fake", EventID: "SMcaptured:received:", Kind: crewcast.KindInbound, From: "+15550109999", To: from, Text: "YES"}
	if isNew, err := e.tr.Ingest(ctx, []crewcast.Event{in}); err != nil || !isNew {
		t.Fatalf("first ingest: %v, %v", isNew, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := e.st.PendingInbox(ctx, store.InboxRef{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the inbound webhook was never processed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	policy := RetentionPolicy{}
	if got := policy.withDefaults().ReplayAfter; got != (365+7)*24*time.Hour {
		t.Fatalf("default ReplayAfter = %s, want delete-after + inbox window (372 days)", got)
	}
	e.clk.Advance(8 * 24 * time.Hour)
	rep, err := e.tr.RunRetention(ctx, policy)
	if err != nil || rep.InboxPurged != 1 || rep.ReplaysPurged != 0 {
		t.Fatalf("after the inbox window: %+v, %v; want the inbox row purged, the replay record kept", rep, err)
	}
	if isNew, err := e.tr.Ingest(ctx, []crewcast.Event{in}); err != nil || isNew {
		t.Fatalf("replay after the inbox purge: new %v, %v; want refused", isNew, err)
	}
	e.clk.Advance(365 * 24 * time.Hour)
	if rep, err = e.tr.RunRetention(ctx, policy); err != nil || rep.ReplaysPurged != 1 {
		t.Fatalf("after the replay window: %+v, %v; want the replay record purged", rep, err)
	}
	if p := (RetentionPolicy{DeleteAfter: -1}).withDefaults().ReplayAfter; p >= 0 {
		t.Fatalf("groups kept for ever: ReplayAfter = %s, want negative (records kept for ever)", p)
	}
}
