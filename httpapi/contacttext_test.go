package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A contact's name and field values are rendered into message texts
// ({{first_name}}, {{fields.site}}), so they refuse what a message text
// refuses: NUL, other control characters and bidirectional overrides (422
// invalid_text with the position), on create, on patch and in an import row.
func TestContactTextsRefuseControlCharacters(t *testing.T) {
	e := newEnv(t, nil)
	for _, body := range []string{
		`{"number":"+15550100001","name":"Ana \u202eesuoh"}`,
		`{"number":"+15550100001","name":"Ana","fields":{"site":"North\u0000gate"}}`,
	} {
		resp, b := e.do("POST", "/v1/contacts", body, "send", nil)
		if resp.StatusCode != http.StatusUnprocessableEntity || errorOf(t, b).Code != "invalid_text" || errorOf(t, b).Fields[0].Position == 0 {
			t.Errorf("create %s: %d %s, want 422 invalid_text with a position", body, resp.StatusCode, b)
		}
	}
	c := decode[contactJSON](t, must(e.do("POST", "/v1/contacts", `{"number":"+15550100002","name":"Bo"}`, "send", nil)))
	resp, b := e.do("PATCH", "/v1/contacts/"+c.ID, `{"name":"Bo \u2066x"}`, "send", nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || errorOf(t, b).Code != "invalid_text" {
		t.Errorf("patch: %d %s, want 422 invalid_text", resp.StatusCode, b)
	}
	csv := "number,name,site\n+15550100003,Cy \u202eyC,North\n+15550100004,Di,South\n"
	resp, b = e.do("POST", "/v1/contacts/import", csv, "send", csvHeader)
	rep := decode[importJSON](t, b)
	if resp.StatusCode != http.StatusOK || rep.Created != 1 || len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0].Error, "U+202E") {
		t.Errorf("import: %d %s, want one row refused naming U+202E", resp.StatusCode, b)
	}
}
