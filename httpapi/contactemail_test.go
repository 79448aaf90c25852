package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A contact's email (docs/design.md §17): set on create, kept by a PATCH
// that does not name it, cleared by "", searched, refused when it is not
// one bare address (without echoing it), and imported from an `email`
// column that a file without one leaves alone.
func TestContactEmail(t *testing.T) {
	e := newEnv(t, nil)
	resp, b := e.do("POST", "/v1/contacts", `{"number":"+15550100001","name":"Ada","email":" ada@Example.ORG "}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	ada := decode[contactJSON](t, b)
	if ada.Email != "ada@example.org" {
		t.Fatalf("email = %q", ada.Email)
	}
	for _, bad := range []string{`"Ada <ada@corp.test>"`, `"adacorp"`, `"a@b.c, d@e.f"`, `"ada@corp.test\r\nBcc: x@y.z"`} {
		resp, b := e.do("POST", "/v1/contacts", `{"number":"+15550100002","email":`+bad+`}`, "send", nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"email"`) {
			t.Errorf("email %s = %d %s, want 400 naming the field", bad, resp.StatusCode, b)
		}
		if strings.Contains(string(b), "corp.test") || strings.Contains(string(b), "adacorp") || strings.Contains(string(b), "d@e.f") {
			t.Errorf("the refusal echoes the address: %s", b)
		}
	}
	resp, b = e.do("PATCH", "/v1/contacts/"+ada.ID, `{"name":"Ada L"}`, "send", nil)
	if c := decode[contactJSON](t, b); resp.StatusCode != http.StatusOK || c.Email != "ada@example.org" {
		t.Fatalf("patch without email = %d %+v", resp.StatusCode, c)
	}
	if resp, b := e.do("GET", "/v1/contacts?q=example.org", "", "read", nil); !strings.Contains(string(b), ada.ID) {
		t.Fatalf("search by email = %d %s", resp.StatusCode, b)
	}
	csv := "number,email\r\n+15550100001,ada@new.example\r\n+15550100003,cy@example.org\r\n+15550100004,not-an-address\r\n"
	resp, b = e.do("POST", "/v1/contacts/import", csv, "send", csvHeader)
	rep := decode[importJSON](t, b)
	if resp.StatusCode != http.StatusOK || rep.Created != 1 || rep.Updated != 1 || len(rep.Errors) != 1 ||
		!strings.Contains(rep.Errors[0].Error, "email") || strings.Contains(rep.Errors[0].Error, "not-an-address") {
		t.Fatalf("import = %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/v1/contacts/import", "number,name\r\n+15550100001,Ada K\r\n", "send", csvHeader)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("import without email = %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/v1/contacts/"+ada.ID, "", "read", nil)
	if c := decode[contactJSON](t, b); resp.StatusCode != http.StatusOK || c.Name != "Ada K" || c.Email != "ada@new.example" {
		t.Fatalf("after imports = %d %+v", resp.StatusCode, c)
	}
	resp, b = e.do("PATCH", "/v1/contacts/"+ada.ID, `{"email":""}`, "send", nil)
	if c := decode[contactJSON](t, b); resp.StatusCode != http.StatusOK || c.Email != "" {
		t.Fatalf("clear email = %d %+v", resp.StatusCode, c)
	}
}
