package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// auditRecorder is the shared part of the tests below: the database
// refuses every audit entry of action refused, and want collects the
// entries the successful writes must have left, newest last.
type auditRecorder struct {
	t    *testing.T
	s    store.Store
	who  store.AuditActor
	want []string
}

const refusedAction = "test.refused"

func newAuditRecorder(t *testing.T, o Options) *auditRecorder {
	s, _, db := open(t, o)
	db.FailAudit(t, refusedAction)
	return &auditRecorder{t: t, s: s, who: store.AuditActor{Type: store.ActorKey, ID: "key_ops", Name: "ops", IP: "192.0.2.9"}}
}

// bad is an entry the database refuses.
func (r *auditRecorder) bad() store.AuditEntry {
	return store.AuditEntry{At: t0, Actor: r.who, Action: refusedAction, Target: "x"}
}

// ok is an entry the database takes; it is expected in the log.
func (r *auditRecorder) ok(action, target string) store.AuditEntry {
	r.want = append(r.want, action+" "+target)
	return store.AuditEntry{At: t0, Actor: r.who, Action: action, Target: target}
}

// refused checks that a write carrying a refused entry failed.
func (r *auditRecorder) refused(what string, err error) {
	r.t.Helper()
	if err == nil {
		r.t.Fatalf("%s with a refused audit entry succeeded", what)
	}
}

// check compares the log with the entries the writes carried: exactly
// one per successful write, none for a failed one.
func (r *auditRecorder) check() {
	r.t.Helper()
	all, _, err := r.s.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		r.t.Fatal(err)
	}
	var got []string
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Actor != r.who {
			r.t.Errorf("entry %+v: actor %+v, want %+v", all[i], all[i].Actor, r.who)
		}
		got = append(got, all[i].Action+" "+all[i].Target)
	}
	if !slices.Equal(got, r.want) {
		r.t.Fatalf("audit (oldest first) = %q\nwant %q", got, r.want)
	}
}

// testDirectoryAuditWithChange: every contact, crew and template write
// commits with the audit entry that records it (issue 17): a refused entry
// rolls the change back, a taken one leaves exactly that entry, and a
// write that fails on its own (a missing row) leaves none.
func testDirectoryAuditWithChange(t *testing.T, o Options) {
	r := newAuditRecorder(t, o)
	s := r.s
	ctx := context.Background()
	ada := store.Contact{ID: "ct_ada", Number: "+15550170001", Name: "Ada", Tags: []string{"night"}}
	name := func(id string) string {
		t.Helper()
		c, err := s.GetContact(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return c.Name
	}

	// Contacts.
	r.refused("CreateContact", s.CreateContact(ctx, ada, r.bad()))
	if _, err := s.GetContact(ctx, ada.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("contact after a refused create: %v, want not found", err)
	}
	if err := s.CreateContact(ctx, ada, r.ok("contact.created", "")); err != nil {
		t.Fatal(err)
	}
	renamed := ada
	renamed.Name = "Ada L"
	r.refused("UpdateContact", s.UpdateContact(ctx, renamed, r.bad()))
	if n := name(ada.ID); n != "Ada" {
		t.Fatalf("name after a refused update = %q", n)
	}
	if err := s.UpdateContact(ctx, renamed, r.ok("contact.updated", ada.ID)); err != nil {
		t.Fatal(err)
	}
	missing := store.Contact{ID: "ct_none", Number: "+15550170009"}
	if err := s.UpdateContact(ctx, missing, store.AuditEntry{At: t0, Actor: r.who, Action: "contact.updated", Target: "ct_none"}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("update of a missing contact: %v", err)
	}

	// Import: one entry for the whole import, none for a dry run.
	grace := store.Contact{ID: "ct_grace", Number: "+15550170002", Name: "Grace"}
	again := renamed
	again.Name = "Ada Lovelace"
	r.refused("ImportContacts", func() error {
		_, err := s.ImportContacts(ctx, []store.Contact{grace, again}, false, r.bad())
		return err
	}())
	if _, err := s.GetContact(ctx, grace.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("imported contact after a refused import: %v, want not found", err)
	}
	if n := name(ada.ID); n != "Ada L" {
		t.Fatalf("name after a refused import = %q", n)
	}
	if counts, err := s.ImportContacts(ctx, []store.Contact{grace, again}, true, r.bad()); err != nil || counts.Created != 1 || counts.Updated != 1 {
		t.Fatalf("dry run = %+v, %v (it writes nothing, its entries neither)", counts, err)
	}
	if counts, err := s.ImportContacts(ctx, []store.Contact{grace, again}, false, r.ok("contacts.imported", "")); err != nil || counts.Created != 1 || counts.Updated != 1 {
		t.Fatalf("import = %+v, %v", counts, err)
	}
	if n := name(ada.ID); n != "Ada Lovelace" {
		t.Fatalf("name after the import = %q", n)
	}

	// Crews and their members.
	crew := store.Crew{ID: "crw_night", Name: "Night", Members: []string{ada.ID}}
	r.refused("CreateCrew", s.CreateCrew(ctx, crew, r.bad()))
	if _, err := s.GetCrew(ctx, crew.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("crew after a refused create: %v, want not found", err)
	}
	if err := s.CreateCrew(ctx, crew, r.ok("crew.created", "")); err != nil {
		t.Fatal(err)
	}
	bigger := crew
	bigger.Description, bigger.Members = "the night shift", []string{ada.ID, grace.ID}
	r.refused("UpdateCrew", s.UpdateCrew(ctx, bigger, r.bad()))
	if k, err := s.GetCrew(ctx, crew.ID); err != nil || k.Description != "" || !slices.Equal(k.Members, []string{ada.ID}) {
		t.Fatalf("crew after a refused update = %+v, %v", k, err)
	}
	if err := s.UpdateCrew(ctx, bigger, r.ok("crew.updated", crew.ID)); err != nil {
		t.Fatal(err)
	}
	if k, err := s.GetCrew(ctx, crew.ID); err != nil || !slices.Equal(k.Members, []string{ada.ID, grace.ID}) {
		t.Fatalf("crew after the update = %+v, %v", k, err)
	}

	// Templates.
	tpl := store.Template{ID: "tpl_call", Name: "Call", Text: "Hi {{name}}"}
	r.refused("CreateTemplate", s.CreateTemplate(ctx, tpl, r.bad()))
	if _, err := s.GetTemplate(ctx, tpl.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("template after a refused create: %v, want not found", err)
	}
	if err := s.CreateTemplate(ctx, tpl, r.ok("template.created", "")); err != nil {
		t.Fatal(err)
	}
	edited := tpl
	edited.Text = "Call at 7, {{name}}"
	r.refused("UpdateTemplate", s.UpdateTemplate(ctx, edited, r.bad()))
	if got, err := s.GetTemplate(ctx, tpl.ID); err != nil || got.Text != tpl.Text {
		t.Fatalf("template after a refused update = %+v, %v", got, err)
	}
	if err := s.UpdateTemplate(ctx, edited, r.ok("template.updated", tpl.ID)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteTemplate(ctx, "tpl_none", store.AuditEntry{At: t0, Actor: r.who, Action: "template.deleted", Target: "tpl_none"}); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("delete of a missing template: %v", err)
	}

	// Deletes.
	r.refused("DeleteTemplate", s.DeleteTemplate(ctx, tpl.ID, r.bad()))
	if _, err := s.GetTemplate(ctx, tpl.ID); err != nil {
		t.Fatalf("template after a refused delete: %v", err)
	}
	if err := s.DeleteTemplate(ctx, tpl.ID, r.ok("template.deleted", tpl.ID)); err != nil {
		t.Fatal(err)
	}
	r.refused("DeleteCrew", s.DeleteCrew(ctx, crew.ID, r.bad()))
	if k, err := s.GetCrew(ctx, crew.ID); err != nil || len(k.Members) != 2 {
		t.Fatalf("crew after a refused delete = %+v, %v", k, err)
	}
	if err := s.DeleteCrew(ctx, crew.ID, r.ok("crew.deleted", crew.ID)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCrew(ctx, store.Crew{ID: "crw_day", Name: "Day", Members: []string{grace.ID}}, r.ok("crew.created", "")); err != nil {
		t.Fatal(err)
	}
	r.refused("DeleteContact", s.DeleteContact(ctx, grace.ID, r.bad()))
	if k, err := s.GetCrew(ctx, "crw_day"); err != nil || !slices.Equal(k.Members, []string{grace.ID}) {
		t.Fatalf("membership after a refused contact delete = %+v, %v", k, err)
	}
	if err := s.DeleteContact(ctx, grace.ID, r.ok("contact.deleted", grace.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetContact(ctx, grace.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("contact after its delete: %v", err)
	}

	// Without entries the writes work as before and log nothing.
	if err := s.CreateContact(ctx, store.Contact{ID: "ct_bob", Number: "+15550170003", Name: "Bob"}); err != nil {
		t.Fatal(err)
	}
	r.check()
}

// testErasureAuditWithChange: an erasure's last step (EraseNumber) commits
// with the person.erased entry: a refused entry leaves the person where
// they were, a taken one leaves them erased and exactly that entry.
func testErasureAuditWithChange(t *testing.T, o Options) {
	r := newAuditRecorder(t, o)
	s := r.s
	ctx := context.Background()
	const who, keep, repl = "+15550180001", "h:kept", "h:erased"
	commitOK(t, s, actor.Unit{Key: "u", Effects: []any{store.Effects{
		Replies:  []store.Reply{{Provider: "telnyx", EventID: "unmatched-e", Number: who, To: "+15550100000", Text: "who is this", ReceivedAt: t0}},
		Suppress: []store.Suppression{{Number: who, Reason: store.ReasonStop, CreatedAt: t0}},
	}}})
	still := func(want int) {
		t.Helper()
		rows, _, err := s.ListReplies(ctx, store.ReplyQuery{Number: who})
		if err != nil {
			t.Fatal(err)
		}
		sup, err := s.Suppressed(ctx, []string{who})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != want || len(sup) != want {
			t.Fatalf("replies %d, suppressions %d of the person; want %d of each", len(rows), len(sup), want)
		}
	}
	_, err := s.EraseNumber(ctx, who, repl, keep, r.bad())
	r.refused("EraseNumber", err)
	still(1)
	counts, err := s.EraseNumber(ctx, who, repl, keep, r.ok("person.erased", keep))
	if err != nil || counts["replies"] != 1 || counts["suppressions"] != 1 {
		t.Fatalf("EraseNumber = %v, %v", counts, err)
	}
	still(0)
	if sup, err := s.Suppressed(ctx, []string{keep}); err != nil || len(sup) != 1 {
		t.Fatalf("kept opt-out = %+v, %v", sup, err)
	}
	r.check()
}

// testRetentionAuditWithChange: a retention pass's purge of the audit log
// commits with the retention.run entry, so the log never loses entries
// without a line saying who ran the pass: a refused entry leaves the old
// entries, a taken one purges them and stays.
func testRetentionAuditWithChange(t *testing.T, o Options) {
	r := newAuditRecorder(t, o)
	s := r.s
	ctx := context.Background()
	old := store.AuditEntry{At: t0.Add(-48 * time.Hour), Actor: r.who, Action: "key.created", Target: "key_old"}
	if err := s.AppendAudit(ctx, old); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeAudit(ctx, t0.Add(-time.Hour), r.bad())
	r.refused("PurgeAudit", err)
	if n != 0 {
		t.Fatalf("PurgeAudit refused but reports %d purged", n)
	}
	r.want = append(r.want, "key.created key_old")
	r.check()
	r.want = nil
	if n, err := s.PurgeAudit(ctx, t0.Add(-time.Hour), r.ok("retention.run", "")); err != nil || n != 1 {
		t.Fatalf("PurgeAudit = %d, %v, want 1", n, err)
	}
	// Without entries the purge works as before.
	if n, err := s.PurgeAudit(ctx, t0.Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("second PurgeAudit = %d, %v, want 0", n, err)
	}
	r.check()
}

// testCrewNewContactsWithCrew: a crew write naming numbers nobody has yet
// creates their contacts (Crew.NewContacts) in the crew write's own
// transaction, with both audit entries: a refused entry leaves neither
// the crew nor the contacts, and a number that already has a contact
// keeps it, the crew naming the stored contact.
func testCrewNewContactsWithCrew(t *testing.T, o Options) {
	r := newAuditRecorder(t, o)
	s := r.s
	ctx := context.Background()
	kept := store.Contact{ID: "ct_kept", Number: "+15550170101", Name: "Kept"}
	if err := s.CreateContact(ctx, kept); err != nil {
		t.Fatal(err)
	}
	fresh := store.Contact{ID: "ct_fresh", Number: "+15550170102", CreatedAt: t0, UpdatedAt: t0}
	again := store.Contact{ID: "ct_again", Number: kept.Number, CreatedAt: t0, UpdatedAt: t0} // raced: the number has a contact by now
	crew := store.Crew{ID: "crw_new", Name: "New", Members: []string{fresh.ID, again.ID},
		NewContacts: []store.Contact{fresh, again}}
	numberOf := func(n string) []store.Contact {
		t.Helper()
		got, err := s.ContactsByNumbers(ctx, []string{n})
		if err != nil {
			t.Fatal(err)
		}
		var out []store.Contact
		for _, c := range got {
			out = append(out, c)
		}
		return out
	}

	r.refused("CreateCrew with new contacts", s.CreateCrew(ctx, crew, store.AuditEntry{At: t0, Actor: r.who, Action: "contacts.imported"}, r.bad()))
	if _, err := s.GetCrew(ctx, crew.ID); !errors.Is(err, actor.ErrNotFound) {
		t.Fatalf("crew after a refused write: %v, want not found", err)
	}
	if got := numberOf(fresh.Number); len(got) != 0 {
		t.Fatalf("contact of a refused crew write = %+v, want none", got)
	}
	if err := s.CreateCrew(ctx, crew, r.ok("contacts.imported", ""), r.ok("crew.created", "")); err != nil {
		t.Fatal(err)
	}
	k, err := s.GetCrew(ctx, crew.ID)
	if err != nil || !slices.Equal(k.Members, []string{fresh.ID, kept.ID}) || len(k.NewContacts) != 0 {
		t.Fatalf("crew = %+v, %v; want members %q", k, err, []string{fresh.ID, kept.ID})
	}
	if c, err := s.GetContact(ctx, kept.ID); err != nil || c.Name != "Kept" {
		t.Fatalf("the existing contact = %+v, %v; want it unchanged", c, err)
	}

	// An update does the same.
	later := store.Contact{ID: "ct_later", Number: "+15550170103", CreatedAt: t0, UpdatedAt: t0}
	k.Members, k.NewContacts = append(k.Members, later.ID), []store.Contact{later}
	r.refused("UpdateCrew with new contacts", s.UpdateCrew(ctx, k, store.AuditEntry{At: t0, Actor: r.who, Action: "contacts.imported"}, r.bad()))
	if got := numberOf(later.Number); len(got) != 0 {
		t.Fatalf("contact of a refused crew update = %+v, want none", got)
	}
	if err := s.UpdateCrew(ctx, k, r.ok("contacts.imported", ""), r.ok("crew.updated", crew.ID)); err != nil {
		t.Fatal(err)
	}
	if k, err := s.GetCrew(ctx, crew.ID); err != nil || !slices.Equal(k.Members, []string{fresh.ID, kept.ID, later.ID}) {
		t.Fatalf("crew after the update = %+v, %v", k, err)
	}
	r.check()
}
