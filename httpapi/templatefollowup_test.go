package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A template holds a follow-up ladder: saved after the checks a group's
// followup gets, shown back, kept by a PATCH without it, cleared by null.
func TestTemplateFollowupLadder(t *testing.T) {
	e := newEnv(t, nil)
	resp, b := e.do("POST", "/v1/templates", `{"name":"Call-in","text":"Crew call",
		"followup":{"steps":[{"after":"5m","channel":"sms"},{"after":"10m","channel":"voice"},{"after":"20m","channel":"email","text":"Please answer"}]}}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	tp := decode[templateJSON](t, b)
	if f := tp.Followup; f == nil || len(f.Steps) != 3 || f.Steps[1].Channel != "voice" || f.Steps[2].Text != "Please answer" {
		t.Fatalf("followup = %+v", tp.Followup)
	}
	resp, b = e.do("PATCH", "/v1/templates/"+tp.ID, `{"text":"Crew call 7am"}`, "send", nil)
	if got := decode[templateJSON](t, b); resp.StatusCode != http.StatusOK || got.Followup == nil || len(got.Followup.Steps) != 3 {
		t.Fatalf("patch without followup = %d %s", resp.StatusCode, b)
	}
	for body, field := range map[string]string{
		`{"followup":{"steps":[{"after":"5m","channel":"fax"}]}}`:                      "followup.steps[0].channel",
		`{"followup":{"after":"5m","max":2,"steps":[{"after":"5m","channel":"sms"}]}}`: `"followup"`,
		`{"followup":{"after":"5m","max":1,"colour":"red"}}`:                           `"followup"`,
	} {
		resp, b := e.do("PATCH", "/v1/templates/"+tp.ID, body, "send", nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), field) {
			t.Errorf("%s = %d %s, want 400 on %s", body, resp.StatusCode, b, field)
		}
	}
	resp, b = e.do("PATCH", "/v1/templates/"+tp.ID, `{"followup":null}`, "send", nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"followup"`) {
		t.Fatalf("clear = %d %s", resp.StatusCode, b)
	}
}
