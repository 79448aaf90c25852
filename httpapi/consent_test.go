package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 32 item 3: every contact shows its consent state, GET
// /v1/contacts/{id}/consent its history; the import's consent and
// consent_source columns add to it, an opted_out suppresses the number,
// and an import never opts a suppressed number back in.
func TestContactConsentAndImportColumns(t *testing.T) {
	e := newEnv(t, nil)
	const ana, ben, cy = "+15550100061", "+15550100062", "+15550100063"
	importCSV := func(csv string, dry bool) importJSON {
		t.Helper()
		path := "/v1/contacts/import"
		if dry {
			path += "?dry_run=1"
		}
		resp, b := e.do("POST", path, csv, "send", csvHeader)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("import = %d %s", resp.StatusCode, b)
		}
		return decode[importJSON](t, b)
	}
	contacts := func() map[string]contactJSON {
		t.Helper()
		out := map[string]contactJSON{}
		for _, c := range decode[contactListJSON](t, must(e.do("GET", "/v1/contacts", "", "read", nil))).Contacts {
			out[c.Number] = c
		}
		return out
	}
	history := func(id string) []consentEntryJSON {
		t.Helper()
		resp, b := e.do("GET", "/v1/contacts/"+id+"/consent", "", "read", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET consent = %d %s", resp.StatusCode, b)
		}
		return decode[consentHistoryJSON](t, b).History
	}
	file := "number,name,consent,consent_source\n" + ana + ",Ana,opted_in,\n" + ben + ",Ben,opted_out,board\n" + cy + ",Cy,,\n"
	if rep := importCSV(file, true); rep.Created != 3 || rep.ConsentKeptOptedOut != 0 {
		t.Fatalf("dry run = %+v", rep)
	}
	if h, err := e.st.ConsentHistory(t.Context(), ana); err != nil || len(h) != 0 {
		t.Fatalf("a dry run wrote consent history: %+v, %v", h, err)
	}
	if rep := importCSV(file, false); rep.Created != 3 || len(rep.Errors) != 0 {
		t.Fatalf("import = %+v", rep)
	}
	cs := contacts()
	if cs[ana].Consent != "opted_in" || cs[ben].Consent != "opted_out" || cs[cy].Consent != "unknown" {
		t.Fatalf("consent states = %q %q %q", cs[ana].Consent, cs[ben].Consent, cs[cy].Consent)
	}
	if sup, err := e.st.Suppressed(t.Context(), []string{ben}); err != nil || sup[ben].Reason != "manual" {
		t.Fatalf("an import's opted_out did not suppress the number: %+v, %v", sup, err)
	}
	h := history(cs[ana].ID)
	if len(h) != 1 || h[0].State != "opted_in" || h[0].Source != "import" || h[0].By != e.keyIDs["send"] || h[0].At == nil {
		t.Fatalf("Ana's history = %+v", h)
	}
	if h := history(cs[ben].ID); len(h) != 1 || h[0].Source != "board" || h[0].State != "opted_out" {
		t.Fatalf("Ben's history = %+v", h)
	}
	if h := history(cs[cy].ID); h == nil || len(h) != 0 {
		t.Fatalf("Cy's history = %#v, want []", h)
	}
	// The same file again adds nothing.
	if rep := importCSV(file, false); rep.Unchanged != 3 || len(history(cs[ana].ID)) != 1 || len(history(cs[ben].ID)) != 1 {
		t.Fatalf("re-import = %+v", rep)
	}

	// An API key suppresses Ana: opted_out from api, by the key.
	if resp, b := e.do("POST", "/v1/suppressions", `{"number":"`+ana+`"}`, "send", nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("suppress = %d %s", resp.StatusCode, b)
	}
	h = history(cs[ana].ID)
	if len(h) != 2 || h[1].State != "opted_out" || h[1].Source != "api" || h[1].By != e.keyIDs["send"] {
		t.Fatalf("after the suppression: %+v", h)
	}
	// A re-import cannot opt her back in, and says so.
	if rep := importCSV("number,consent\n"+ana+",opted_in\n"+ben+",opted_in\n", false); rep.ConsentKeptOptedOut != 2 {
		t.Fatalf("re-import opting suppressed numbers in = %+v, want consent_kept_opted_out 2", rep)
	}
	if cs := contacts(); cs[ana].Consent != "opted_out" || cs[ben].Consent != "opted_out" || len(history(cs[ana].ID)) != 2 {
		t.Fatalf("after the re-import: %q %q", cs[ana].Consent, cs[ben].Consent)
	}
	// The operator lifts it: opted_in from api.
	if resp, b := e.do("DELETE", "/v1/suppressions/"+ana, "", "send", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("unsuppress = %d %s", resp.StatusCode, b)
	}
	h = history(cs[ana].ID)
	if len(h) != 3 || h[2].State != "opted_in" || h[2].Source != "api" {
		t.Fatalf("after the lift: %+v", h)
	}
	if c := decode[contactJSON](t, must(e.do("GET", "/v1/contacts/"+cs[ana].ID, "", "read", nil))); c.Consent != "opted_in" {
		t.Fatalf("GET contact consent = %q", c.Consent)
	}

	// Bad values are bad lines, naming the column.
	rep := importCSV("number,consent,consent_source\n+15550100064,maybe,\n+15550100065,opted_in,fax\n", false)
	if len(rep.Errors) != 2 || !strings.Contains(rep.Errors[0].Error, "consent") || !strings.Contains(rep.Errors[1].Error, "consent_source") {
		t.Fatalf("bad consent values = %+v", rep)
	}
	if resp, _ := e.do("GET", "/v1/contacts/ct_missing/consent", "", "read", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("consent of a missing contact = %d", resp.StatusCode)
	}
}
