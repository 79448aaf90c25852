package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// bigTo returns a create body whose to holds n copies of number.
func bigTo(n int, number string) string {
	q, _ := json.Marshal(number)
	var b strings.Builder
	b.WriteString(`{"from":"+15550100000","text":"x","to":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(q)
	}
	b.WriteString("]}")
	return b.String()
}

// Issue 12 finding 7: 520,000 empty numbers answered with 520,000 errors
// (38 MB). The answer lists at most 100 and counts the rest; a list over
// the group limit is refused with one error.
func TestCreateValidationIsBounded(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "5,000 empty numbers: 100 listed, total counted", method: "POST", path: "/v1/groups", key: "send",
			body: bigTo(5000, ""), status: 400, code: "invalid_request",
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				ej := errorOf(t, b)
				if len(ej.Fields) != group.MaxFieldErrors || ej.FieldsTotal != 5000 {
					t.Errorf("%d fields listed, fields_total %d; want %d and 5000", len(ej.Fields), ej.FieldsTotal, group.MaxFieldErrors)
				}
				if len(b) > 32<<10 || !strings.Contains(ej.Message, "4900 more") {
					t.Errorf("answer of %d bytes, message %.200q", len(b), ej.Message)
				}
			}},
		{name: "520,000 empty numbers: one error", method: "POST", path: "/v1/groups", key: "send",
			body: bigTo(520000, ""), status: 400, code: "invalid_request", fields: []string{"to"},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				if len(b) > 1<<10 || !strings.Contains(string(b), "at most 100000 recipients") {
					t.Errorf("answer of %d bytes: %.300s", len(b), b)
				}
			}},
		{name: "too many named recipients: one error", method: "POST", path: "/v1/groups", key: "send",
			body:   `{"from":"+15550100000","text":"x","recipients":[` + strings.Repeat(`{"number":""},`, group.MaxRecipients) + `{"number":""}]}`,
			status: 400, code: "invalid_request", fields: []string{"recipients"}},
		{name: "a large named roster is not refused for its size", method: "POST", path: "/v1/groups", key: "send",
			body: `{"from":"+15550100000","text":"x","recipients":[` +
				strings.Repeat(`{"number":"bad","name":"Alexandra Montgomery-Fitzwilliam, crew 7"},`, 50000) + `{"number":""}]}`,
			status: 400, code: "invalid_request"},
		{name: "bad lines echoed verbatim", method: "POST", path: "/v1/groups", key: "send",
			body:   `{"from":"+15550100000","text":"x","to":["+15550100001","not-a-number","+15550100001","12"]}`,
			status: 400, code: "invalid_request", fields: []string{"to[1]", "to[3]"},
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				ej := errorOf(t, b)
				if ej.Fields[0].Input != "not-a-number" || !strings.Contains(ej.Fields[0].Message, `"not-a-number"`) || ej.Fields[1].Input != "12" {
					t.Errorf("fields %+v, want the typed input", ej.Fields)
				}
			}},
		{name: "emoji text over 10 segments", method: "POST", path: "/v1/groups", key: "send",
			body:   `{"from":"+15550100000","to":["+15550100001"],"text":"` + strings.Repeat("😀", 1600) + `"}`,
			status: 400, code: "invalid_request", fields: []string{"text"}, has: []string{"segments"}},
		{name: "metadata media URL", method: "POST", path: "/v1/groups", key: "send",
			body:   `{"from":"+15550100000","to":["+15550100001"],"text":"x","media_urls":["http://169.254.169.254/latest"]}`,
			status: 400, code: "invalid_request", fields: []string{"media_urls[0]"}},
	})
}

func TestUnknownRecipientsResolveAndErrorsExplained(t *testing.T) {
	unknown := func(e *env) map[string]string {
		id := e.createGroup("+15550100001", "+15550100002", "+15550100003")
		now := e.clock.Now()
		e.apply(id, group.Claimed{At: now, Sends: []group.Send{{ID: "s0", Indices: []int{0}}, {ID: "s1", Indices: []int{1}}, {ID: "s2", Indices: []int{2}}}})
		e.apply(id, group.Outcomes{At: now, Outcomes: []group.Outcome{
			{SendID: "s0", Indices: []int{0}, Result: group.ResultAccepted, MessageID: "m0"},
			{SendID: "s1", Indices: []int{1}, Result: group.ResultAccepted, MessageID: "m1"},
			{SendID: "s2", Indices: []int{2}, Result: group.ResultFailed, Code: "40001", Class: crewcast.ClassRecipient}}})
		e.apply(id, group.Expired{At: now, Indices: []int{0, 1}, Reason: "no receipt"})
		e.apply(id, group.Replied{At: now, EventID: "r1", Index: 0, Text: "yes", Ack: crewcast.AckYes})
		return map[string]string{"id": id}
	}
	recipient := func(number, status string) func(t *testing.T, e *env, _ *http.Response, b []byte) {
		return func(t *testing.T, e *env, _ *http.Response, b []byte) {
			for _, r := range decode[apitype.Group](t, b).Recipients {
				if r.Number == number && r.Status != status {
					t.Errorf("%s is %s, want %s", number, r.Status, status)
				}
			}
		}
	}
	runScenarios(t, []scenario{
		{name: "resolve unknown delivered", setup: unknown, method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100001/resolve",
			body: `{"outcome":"delivered"}`, key: "send", status: 200, check: recipient("+15550100001", "delivered")},
		{name: "resolve unknown not_delivered", setup: unknown, method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100002/resolve",
			body: `{"outcome":"not_delivered"}`, key: "send", status: 200, check: recipient("+15550100002", "pending")},
		{name: "resolve a failed recipient conflicts", setup: unknown, method: "POST", path: "/v1/groups/{id}/recipients/%2B15550100003/resolve",
			body: `{"outcome":"delivered"}`, key: "send", status: 409, has: []string{"unconfirmed or unknown"}},
		{name: "error explained with a link; reply counts split", setup: unknown, method: "GET", path: "/v1/groups/{id}", key: "read", status: 200,
			check: func(t *testing.T, e *env, _ *http.Response, b []byte) {
				g := decode[apitype.Group](t, b)
				r := g.Recipients[2]
				if r.ErrorCode != "40001" || !strings.Contains(r.ErrorDetail, "landline") ||
					r.ErrorURL != "https://developers.telnyx.com/docs/messaging/messages/error-codes" {
					t.Errorf("failed recipient %+v, want error_detail and error_url", r)
				}
				if g.Recipients[0].ErrorDetail != "" || g.Recipients[0].ErrorURL != "" {
					t.Errorf("recipient without an error has detail %q url %q", g.Recipients[0].ErrorDetail, g.Recipients[0].ErrorURL)
				}
				want := map[string]int{"unknown": 2, "failed": 1, "acknowledged": 1, "ack_yes": 1, "ack_no": 0, "no_reply": 2, "replied": 1}
				for k, v := range want {
					if got, ok := g.Counts[k]; !ok || got != v {
						t.Errorf("counts[%s] = %d (present %v), want %d", k, got, ok, v)
					}
				}
			}},
	})
	// The journal keeps who resolved and from what status.
	e := newEnv(t, nil)
	id := unknown(e)["id"]
	resp, b := e.do("POST", "/v1/groups/"+id+"/recipients/%2B15550100001/resolve", `{"outcome":"delivered"}`, "send", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("resolve: %d %s", resp.StatusCode, b)
	}
	_, b = e.do("GET", "/v1/groups/"+id+"/events", "", "read", nil)
	want := fmt.Sprintf(`"outcome":"delivered","by":"%s","from":"unknown"`, e.keyIDs["send"])
	if !strings.Contains(string(b), want) {
		t.Errorf("journal lacks %s:\n%s", want, b)
	}
}

// A projection row written before no_reply was counted still shows who has
// not replied.
func TestNoReplyForOlderRows(t *testing.T) {
	g := groupOf(store.GroupRow{Counts: map[string]int{"delivered": 4, "failed": 1, "opted_out": 1, "replied": 2, "acknowledged": 2}})
	if g.Counts["no_reply"] != 3 {
		t.Errorf("no_reply %d, want 3 (6 recipients, 2 replied, 1 opted out)", g.Counts["no_reply"])
	}
	if g := groupOf(store.GroupRow{Counts: map[string]int{"delivered": 4, "no_reply": 1}}); g.Counts["no_reply"] != 1 {
		t.Errorf("a stored no_reply was recomputed: %d", g.Counts["no_reply"])
	}
}
