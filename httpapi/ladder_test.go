package httpapi

import (
	"strings"
	"testing"

	"github.com/crewcast/crewcast/apitype"
)

// A follow-up ladder (docs/design.md §17) is taken in the request and
// shown on the group, as the OpenAPI document says (env validates
// responses against it); its problems name the step at fault.
func TestGroupFollowupLadder(t *testing.T) {
	e := newEnv(t, nil)
	body := `{"from":"+15550100000","to":["+15550100001"],"text":"Crew call 7am",
		"followup":{"steps":[{"after":"5m","channel":"sms"},{"after":"10m","channel":"sms","text":"Last call"}]}}`
	resp, b := e.do("POST", "/v1/groups", body, "send", nil)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	g := decode[apitype.Group](t, b)
	f := g.Followup
	if f == nil || f.Max != 2 || len(f.Steps) != 2 || f.Steps[0] != (apitype.FollowupStep{After: "5m", Channel: "sms"}) ||
		f.Steps[1] != (apitype.FollowupStep{After: "10m", Channel: "sms", Text: "Last call"}) {
		t.Fatalf("followup = %+v", f)
	}
	resp, b = e.do("POST", "/v1/groups", `{"from":"+15550100000","to":["+15550100001"],"text":"x",
		"followup":{"after":"5m","max":1,"steps":[{"after":"5m","channel":"pigeon"},{"after":"1m","channel":"sms"}]}}`, "send", nil)
	if resp.StatusCode != 400 {
		t.Fatalf("bad ladder: %d %s", resp.StatusCode, b)
	}
	for _, field := range []string{"followup", "followup.steps[0].channel", "followup.steps[1].after"} {
		if !strings.Contains(string(b), `"field":"`+field+`"`) {
			t.Errorf("no error on %s: %s", field, b)
		}
	}
}
