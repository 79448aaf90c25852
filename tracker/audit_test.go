package tracker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// The audit trail of group changes is committed by the group actor with
// the change: one entry per accepted command, naming the actor the request
// context carried, and none for a refused command.
func TestAuditEntriesCommitWithGroupChanges(t *testing.T) {
	e := newEnv(t, nil)
	ada := store.AuditActor{Type: store.ActorUser, ID: "usr_ada", Name: "Ada", IP: "192.0.2.7"}
	ctx := store.WithAuditActor(context.Background(), ada)
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		return crewcast.SendResult{}, &crewcast.SendError{Provider: "fake", Class: crewcast.ClassCarrier, Code: "30008", Err: errors.New("bad number")}
	}
	id, _, err := e.tr.Create(ctx, group.Request{From: from, To: nums(2), Text: "Crew call 7am"}, CreateOptions{By: "usr_ada"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "failed", allStatus(crewcast.StatusFailed))
	if err := e.tr.Retry(ctx, id, nums(2)[1], "usr_ada"); err != nil {
		t.Fatal(err)
	}
	if err := e.tr.Resume(ctx, id, "usr_ada"); !errors.Is(err, group.ErrState) {
		t.Fatalf("resume of a group that is not paused: %v", err)
	}
	// No actor in the context: recorded as the system, by the event's By.
	id2, _, err := e.tr.Create(context.Background(), group.Request{From: from, To: nums(1), Text: "Crew call 8am"}, CreateOptions{By: "key_ops"})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ action, target string }{
		{AuditGroupSent, id2},
		{AuditRecipientRetried, id + " #1 …" + nums(2)[1][len(nums(2)[1])-4:]},
		{AuditGroupSent, id},
	}
	if len(got) != len(want) {
		t.Fatalf("audit = %+v, want %d entries (none for the refused resume)", got, len(want))
	}
	for i, w := range want {
		if got[i].Action != w.action || got[i].Target != w.target {
			t.Errorf("entry %d = %s %s, want %s %s", i, got[i].Action, got[i].Target, w.action, w.target)
		}
	}
	if got[1].Actor != ada || got[2].Actor != ada {
		t.Errorf("actor = %+v, want %+v", got[1].Actor, ada)
	}
	if sys := got[0].Actor; sys.Type != store.ActorSystem || sys.ID != "key_ops" {
		t.Errorf("context-free create recorded as %+v", sys)
	}
}

// The audit log has its own retention: entries older than AuditAfter go,
// younger ones stay, whatever the group stages do.
func TestRetentionPurgesOldAuditEntries(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	now := e.clk.Now()
	for _, age := range []time.Duration{100 * 24 * time.Hour, 40 * 24 * time.Hour, time.Hour} {
		if err := e.st.AppendAudit(ctx, store.AuditEntry{At: now.Add(-age), Actor: store.AuditActor{Type: store.ActorKey, ID: "key_x"},
			Action: "key.created", Target: age.String()}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := e.tr.RunRetention(ctx, RetentionPolicy{AuditAfter: 30 * 24 * time.Hour})
	if err != nil || rep.AuditPurged != 2 {
		t.Fatalf("RunRetention = %+v, %v, want 2 audit entries purged", rep, err)
	}
	left, _, _ := e.st.ListAudit(ctx, store.AuditQuery{})
	if len(left) != 1 || left[0].Target != time.Hour.String() {
		t.Fatalf("left %+v", left)
	}
	if rep, err := e.tr.RunRetention(ctx, RetentionPolicy{AuditAfter: -1}); err != nil || rep.AuditPurged != 0 {
		t.Fatalf("AuditAfter < 0 must keep everything: %+v, %v", rep, err)
	}
}
