package tracker

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// refuseAudit makes the env's SQLite database refuse audit entries of
// action until the returned func lifts the refusal.
func refuseAudit(t *testing.T, e *env, action string) (lift func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER test_refuse_audit BEFORE INSERT ON audit_log WHEN NEW.action = '` + action + `'
		BEGIN SELECT RAISE(ABORT, 'audit insert refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		defer db.Close()
		if _, err := db.Exec(`DROP TRIGGER test_refuse_audit`); err != nil {
			t.Fatal(err)
		}
	}
}

// auditLines lists the log, newest first, as "action target".
func auditLines(t *testing.T, e *env) []store.AuditEntry {
	t.Helper()
	got, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An erasure's person.erased entry commits with its last step, the store's
// EraseNumber (issue 17): refused, the person's opt-out is still kept in
// clear and the erasure fails; taken, the log holds exactly that entry,
// naming the keyed hash and who asked. Failed before: the tracker wrote no
// entry (the API appended one afterwards), so the refusal changed nothing.
func TestErasureAuditCommitsWithErasure(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.HashKey = []byte("test key") })
	ada := store.AuditActor{Type: store.ActorUser, ID: "usr_ada", Name: "Ada", IP: "192.0.2.7"}
	ctx := store.WithAuditActor(context.Background(), ada)
	const who = "+15559870011"
	if err := e.st.AddSuppression(ctx, store.Suppression{Number: who, Reason: store.ReasonStop, CreatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	lift := refuseAudit(t, e, AuditPersonErased)
	if _, err := e.tr.Erase(ctx, who, "usr_ada"); err == nil {
		t.Fatal("erasure with its audit entry refused succeeded")
	}
	if sup, err := e.st.Suppressed(ctx, []string{who}); err != nil || len(sup) != 1 {
		t.Fatalf("opt-out in clear after the refused erasure = %+v, %v; want it still there", sup, err)
	}
	if got := auditLines(t, e); len(got) != 0 {
		t.Fatalf("audit after the refused erasure = %+v", got)
	}
	lift()
	rep, err := e.tr.Erase(ctx, who, "usr_ada")
	if err != nil || !rep.Erased || !rep.OptOutKept {
		t.Fatalf("erasure = %+v, %v", rep, err)
	}
	got := auditLines(t, e)
	if len(got) != 1 || got[0].Action != AuditPersonErased || got[0].Target != rep.Subject || got[0].Actor != ada {
		t.Fatalf("audit = %+v, want one %s of %s by %+v", got, AuditPersonErased, rep.Subject, ada)
	}
	// Asked with no actor in the context: recorded as the system, by who asked.
	if _, err := e.tr.Erase(context.Background(), who, "key_ops"); err != nil {
		t.Fatal(err)
	}
	if got := auditLines(t, e); len(got) != 2 || got[0].Actor != (store.AuditActor{Type: store.ActorSystem, ID: "key_ops"}) {
		t.Fatalf("audit = %+v", got)
	}
}

// An operator's retention pass writes its retention.run entry in the same
// transaction as the pass's purge of old audit entries (issue 17):
// refused, the old entries stay and the pass reports the error; taken, the
// old entries are gone and the log holds exactly the pass's entry. A
// scheduled pass (no actor) writes none. Failed before: the pass wrote no
// entry (the API appended one afterwards), so the refusal changed nothing.
func TestRetentionRunAuditCommitsWithPurge(t *testing.T) {
	e := newEnv(t, nil)
	ada := store.AuditActor{Type: store.ActorUser, ID: "usr_ada", Name: "Ada", IP: "192.0.2.7"}
	ctx := store.WithAuditActor(context.Background(), ada)
	if err := e.st.AppendAudit(ctx, store.AuditEntry{At: e.clk.Now().Add(-40 * 24 * time.Hour), Actor: ada,
		Action: "key.created", Target: "key_old"}); err != nil {
		t.Fatal(err)
	}
	ret := e.tr.NewRetainer(RetentionPolicy{AuditAfter: 30 * 24 * time.Hour}, 0)
	lift := refuseAudit(t, e, AuditRetentionRun)
	if run, err := ret.Run(ctx, "api"); err == nil || run.Error == "" {
		t.Fatalf("retention pass with its audit entry refused = %+v, %v; want an error", run, err)
	}
	if got := auditLines(t, e); len(got) != 1 || got[0].Target != "key_old" {
		t.Fatalf("audit after the refused pass = %+v; want the old entry kept", got)
	}
	lift()
	run, err := ret.Run(ctx, "api")
	if err != nil || run.Report.AuditPurged != 1 {
		t.Fatalf("retention pass = %+v, %v", run, err)
	}
	got := auditLines(t, e)
	if len(got) != 1 || got[0].Action != AuditRetentionRun || got[0].Target != "" || got[0].Actor != ada {
		t.Fatalf("audit = %+v, want exactly one %s by %+v", got, AuditRetentionRun, ada)
	}
	if _, err := ret.Run(context.Background(), "schedule"); err != nil {
		t.Fatal(err)
	}
	if got := auditLines(t, e); len(got) != 1 {
		t.Fatalf("a scheduled pass was audited: %+v", got)
	}
	// With the audit purge off the entry is the pass's own write.
	if _, err := e.tr.NewRetainer(RetentionPolicy{AuditAfter: -1}, 0).Run(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if got := auditLines(t, e); len(got) != 2 || got[0].Action != AuditRetentionRun {
		t.Fatalf("audit = %+v", got)
	}
}

// A pass that stops early never reaches the write its entry rides with,
// but it may have changed things: its entry is appended on its own once it
// stopped, even when it stopped because its context ended.
func TestRetentionRunStoppedEarlyIsAudited(t *testing.T) {
	e := newEnv(t, nil)
	ada := store.AuditActor{Type: store.ActorKey, ID: "key_ops", Name: "ops"}
	ctx, cancel := context.WithCancel(store.WithAuditActor(context.Background(), ada))
	cancel()
	run, err := e.tr.NewRetainer(RetentionPolicy{}, 0).Run(ctx, "api")
	if err == nil || run.Error == "" {
		t.Fatalf("pass with its context ended = %+v, %v; want an error", run, err)
	}
	if got := auditLines(t, e); len(got) != 1 || got[0].Action != AuditRetentionRun || got[0].Actor != ada {
		t.Fatalf("audit = %+v, want one %s by %+v", got, AuditRetentionRun, ada)
	}
}
