package httpapi

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// noAppendStore refuses every AppendAudit: an entry reaches the log only
// if it was handed to the store with the change it records.
type noAppendStore struct{ Store }

func (noAppendStore) AppendAudit(context.Context, ...store.AuditEntry) error {
	return errors.New("AppendAudit is not how key and suppression changes are audited")
}

// Key and suppression changes hand their audit entry to the store call
// that makes the change (one transaction, issue 17), not to a separate
// AppendAudit afterwards. Failed before the change: no entry was written.
func TestKeyAndSuppressionAuditCommitsWithChange(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Store = noAppendStore{c.Store} })
	r, b := e.do("POST", "/v1/keys", `{"scopes":["read"],"name":"ci"}`, "admin", nil)
	if r.StatusCode != 201 {
		t.Fatalf("create key: %d %s", r.StatusCode, b)
	}
	id := decode[newKeyJSON](t, b).ID
	if r, b := e.do("DELETE", "/v1/keys/"+id, "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("revoke key: %d %s", r.StatusCode, b)
	}
	if r, b := e.do("POST", "/v1/suppressions", `{"number":"+15550100009"}`, "admin", nil); r.StatusCode != 201 {
		t.Fatalf("suppress: %d %s", r.StatusCode, b)
	}
	if r, b := e.do("DELETE", "/v1/suppressions/+15550100009", "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("unsuppress: %d %s", r.StatusCode, b)
	}
	entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if en.Actor.ID != e.keyIDs["admin"] {
			t.Errorf("entry %+v: actor is not the admin key", en)
		}
		got = append(got, en.Action+" "+en.Target)
	}
	want := []string{auditSuppressRemov + " …0009", auditSuppressAdd + " …0009 manual", auditKeyRevoked + " " + id,
		auditKeyCreated + " " + id + " ci read"}
	if !slices.Equal(got, want) {
		t.Fatalf("audit = %q, want %q", got, want)
	}
}

// refuseAudit makes the env's database refuse every audit entry whose
// action is among actions (a trigger), as a full disk or a broken log
// table would refuse it.
func refuseAudit(t *testing.T, e *env, actions ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	quoted := make([]string, len(actions))
	for i, a := range actions {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", "''") + "'"
	}
	if _, err := db.Exec(`CREATE TRIGGER test_refuse_audit BEFORE INSERT ON audit_log
		WHEN NEW.action IN (` + strings.Join(quoted, ",") + `)
		BEGIN SELECT RAISE(ABORT, 'audit insert refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
}

// Contact, crew and template changes hand their audit entry to the store
// call that makes the change (one transaction, issue 17), not to an
// AppendAudit after the handler: with AppendAudit refused every change is
// still in the log, once. Failed before the change: the entries were
// written by wrapAs through AppendAudit, so none reached this log.
func TestDirectoryAuditCommitsWithChange(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Store = noAppendStore{c.Store} })
	ok := func(want int, method, path, body string, header map[string]string) []byte {
		t.Helper()
		r, b := e.do(method, path, body, "send", header)
		if r.StatusCode != want {
			t.Fatalf("%s %s: %d %s", method, path, r.StatusCode, b)
		}
		return b
	}
	id := func(b []byte) string { return decode[struct{ ID string }](t, b).ID }
	csvHeader := map[string]string{"Content-Type": "text/csv"}
	contact := id(ok(201, "POST", "/v1/contacts", `{"number":"+15550100041","name":"Ana"}`, nil))
	ok(200, "PATCH", "/v1/contacts/"+contact, `{"name":"Ana B"}`, nil)
	ok(200, "POST", "/v1/contacts/import?dry_run=1", "number,name\n+15550100042,Ben\n", csvHeader)
	ok(200, "POST", "/v1/contacts/import", "number,name\n+15550100042,Ben\n", csvHeader)
	// A member given by a number nobody has yet becomes a contact first:
	// that creation is recorded as an import of contacts.
	crew := id(ok(201, "POST", "/v1/crews", `{"name":"Night","members":["`+contact+`","+15550100043"]}`, nil))
	ok(200, "PATCH", "/v1/crews/"+crew, `{"description":"the night shift"}`, nil)
	tpl := id(ok(201, "POST", "/v1/templates", `{"name":"Call","text":"Hi {{name}}"}`, nil))
	ok(200, "PATCH", "/v1/templates/"+tpl, `{"text":"Call at 7, {{name}}"}`, nil)
	ok(204, "DELETE", "/v1/templates/"+tpl, "", nil)
	ok(204, "DELETE", "/v1/crews/"+crew, "", nil)
	ok(204, "DELETE", "/v1/contacts/"+contact, "", nil)

	entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		if en.Actor.ID != e.keyIDs["send"] || en.Actor.Type != store.ActorKey {
			t.Errorf("entry %+v: actor is not the send key", en)
		}
		got = append(got, en.Action+" "+en.Target)
	}
	want := []string{"contact.deleted " + contact, "crew.deleted " + crew, "template.deleted " + tpl, "template.updated " + tpl,
		"template.created ", "crew.updated " + crew, "crew.created ", "contacts.imported ", "contacts.imported ",
		"contact.updated " + contact, "contact.created "}
	if !slices.Equal(got, want) {
		t.Fatalf("audit = %q\nwant %q", got, want)
	}
}

// A directory change whose audit entry cannot be written is not made: the
// API answers an error and the directory is as it was (issue 17). Failed
// before: the change was made and answered 2xx, and only the entry was
// missing.
func TestDirectoryChangeFailsWithItsAudit(t *testing.T) {
	e := newEnv(t, nil)
	refuseAudit(t, e, "contact.created", "contacts.imported", "crew.updated", "template.deleted")
	failed := func(method, path, body string, header map[string]string) {
		t.Helper()
		r, b := e.do(method, path, body, "send", header)
		if r.StatusCode < 500 {
			t.Fatalf("%s %s with its audit entry refused: %d %s, want an error", method, path, r.StatusCode, b)
		}
	}
	failed("POST", "/v1/contacts", `{"number":"+15550100051","name":"Ana"}`, nil)
	failed("POST", "/v1/contacts/import", "number,name\n+15550100052,Ben\n", map[string]string{"Content-Type": "text/csv"})
	if _, b := e.do("GET", "/v1/contacts", "", "read", nil); !strings.Contains(string(b), `"contacts":[]`) {
		t.Fatalf("contacts after refused audits: %s", b)
	}
	r, b := e.do("POST", "/v1/crews", `{"name":"Night"}`, "send", nil)
	if r.StatusCode != 201 {
		t.Fatalf("crew: %d %s", r.StatusCode, b)
	}
	crew := decode[struct{ ID string }](t, b).ID
	failed("PATCH", "/v1/crews/"+crew, `{"description":"the night shift"}`, nil)
	if _, b := e.do("GET", "/v1/crews/"+crew, "", "read", nil); !strings.Contains(string(b), `"description":""`) {
		t.Fatalf("crew after a refused update: %s", b)
	}
	r, b = e.do("POST", "/v1/templates", `{"name":"Call","text":"Hi {{name}}"}`, "send", nil)
	if r.StatusCode != 201 {
		t.Fatalf("template: %d %s", r.StatusCode, b)
	}
	tpl := decode[struct{ ID string }](t, b).ID
	failed("DELETE", "/v1/templates/"+tpl, "", nil)
	if r, b := e.do("GET", "/v1/templates/"+tpl, "", "read", nil); r.StatusCode != 200 {
		t.Fatalf("template after a refused delete: %d %s", r.StatusCode, b)
	}
	entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range entries {
		got = append(got, en.Action+" "+en.Target)
	}
	if want := []string{"template.created ", "crew.created "}; !slices.Equal(got, want) {
		t.Fatalf("audit = %q, want %q", got, want)
	}
}

// A crew write naming a number nobody has yet creates that contact in the
// crew write's own transaction (store.Crew.NewContacts): when the crew's
// entry is refused, the contact is not made either. Failed before the
// change: the contact was imported in a transaction of its own first and
// stayed.
func TestCrewNewContactsCommitWithTheCrew(t *testing.T) {
	e := newEnv(t, nil)
	r, b := e.do("POST", "/v1/crews", `{"name":"Day"}`, "send", nil)
	if r.StatusCode != 201 {
		t.Fatalf("crew: %d %s", r.StatusCode, b)
	}
	crew := decode[struct{ ID string }](t, b).ID
	refuseAudit(t, e, "crew.created", "crew.updated")
	if r, b := e.do("POST", "/v1/crews", `{"name":"Night","members":["+15550100061"]}`, "send", nil); r.StatusCode < 500 {
		t.Fatalf("crew with its entry refused: %d %s, want an error", r.StatusCode, b)
	}
	if r, b := e.do("PATCH", "/v1/crews/"+crew, `{"members":["+15550100062"]}`, "send", nil); r.StatusCode < 500 {
		t.Fatalf("crew update with its entry refused: %d %s, want an error", r.StatusCode, b)
	}
	if _, b := e.do("GET", "/v1/contacts", "", "read", nil); !strings.Contains(string(b), `"contacts":[]`) {
		t.Fatalf("contacts after refused crew writes: %s", b)
	}
}
