package httpapi

import (
	"net/http"
	"testing"
)

// Issue 27 item 11: NUL, other C0 controls and bidirectional override
// characters were accepted in message texts. Each is a 422 invalid_text
// naming the field and the 1-based character position.
func TestMessageTextsRefuseControlCharacters(t *testing.T) {
	position := func(field string, want int) func(t *testing.T, e *env, _ *http.Response, b []byte) {
		return func(t *testing.T, e *env, _ *http.Response, b []byte) {
			ej := errorOf(t, b)
			if len(ej.Fields) != 1 || ej.Fields[0].Field != field || ej.Fields[0].Position != want {
				t.Errorf("fields %+v, want one on %s at position %d", ej.Fields, field, want)
			}
		}
	}
	const head = `{"from":"+15550100000","to":["+15550100001"],`
	runShared(t, nil, []scenario{
		{name: "right-to-left override in the text", method: "POST", path: "/v1/groups", key: "send",
			body: head + `"text":"Crew\u202ecall"}`, status: 422, code: "invalid_text", fields: []string{"text"},
			has: []string{"character 5 is U+202E"}, check: position("text", 5)},
		{name: "NUL in the text", method: "POST", path: "/v1/groups", key: "send",
			body: head + `"text":"\u0000"}`, status: 422, code: "invalid_text", fields: []string{"text"}, check: position("text", 1)},
		{name: "escape in the follow-up text", method: "POST", path: "/v1/groups", key: "send",
			body:   head + `"text":"Crew call","followup":{"after":"10m","max":1,"text":"again \u001b[2J"}}`,
			status: 422, code: "invalid_text", fields: []string{"followup.text"}, check: position("followup.text", 7)},
		{name: "isolate in the escalation text", method: "POST", path: "/v1/groups", key: "send",
			body:   head + `"text":"Crew call","escalate":{"after":"30m","to":["+15550100009"],"text":"\u2066x"}}`,
			status: 422, code: "invalid_text", fields: []string{"escalate.text"}, check: position("escalate.text", 1)},
		{name: "embedding in a response label", method: "POST", path: "/v1/groups", key: "send",
			body:   head + `"text":"Crew call","responses":[{"key":"1","label":"Com\u202aing"}]}`,
			status: 422, code: "invalid_text", fields: []string{"responses[0].label"}, check: position("responses[0].label", 4)},
		{name: "preview too", method: "POST", path: "/v1/groups/preview", key: "send",
			body: head + `"text":"a\u202db"}`, status: 422, code: "invalid_text", fields: []string{"text"}},
		{name: "template text", method: "POST", path: "/v1/templates", key: "send",
			body: `{"name":"t1","text":"Hi {{first_name}}\u2069"}`, status: 422, code: "invalid_text", fields: []string{"text"},
			check: position("text", 18)},
		{name: "template response label", method: "POST", path: "/v1/templates", key: "send",
			body:   `{"name":"t2","text":"Hi","responses":[{"key":"1","label":"ok"},{"key":"2","label":"bell\u0007"}]}`,
			status: 422, code: "invalid_text", fields: []string{"responses[1].label"}, check: position("responses[1].label", 5)},
		{name: "tabs and new lines are fine", method: "POST", path: "/v1/groups/preview", key: "send",
			body: head + `"text":"Crew call\r\n\t7am"}`, status: 200},
	})
}
