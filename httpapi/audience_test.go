package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// setupDirectory imports five contacts and two overlapping crews.
func setupDirectory(t *testing.T, e *env) {
	t.Helper()
	csv := "number,name,tags,site\n" +
		"+15550100001,Ada Lovelace,night,North\n" +
		"+15550100002,Grace Hopper,night;day,\n" +
		"+15550100003,Linus,day,South\n" +
		"+15550100004,Margaret Hamilton,,East\n" +
		"+15550100005,Ken,,West\n"
	if resp, b := e.do("POST", "/v1/contacts/import", csv, "send", csvHeader); resp.StatusCode != http.StatusOK {
		t.Fatalf("import = %d %s", resp.StatusCode, b)
	}
	for _, body := range []string{
		`{"name":"Night","members":["+15550100001","+15550100002","+15550100004"]}`,
		`{"name":"Day","members":["+15550100002","+15550100003","+15550100004"]}`,
		`{"name":"Empty"}`,
	} {
		if resp, b := e.do("POST", "/v1/crews", body, "send", nil); resp.StatusCode != http.StatusCreated {
			t.Fatalf("crew %s = %d %s", body, resp.StatusCode, b)
		}
	}
}

func TestCreateGroupFromCrewsTagsContacts(t *testing.T) {
	e := newEnv(t, nil)
	setupDirectory(t, e)
	ken := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?q=ken", "", "read", nil))).Contacts[0]
	resp, b := e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Night","Day"],"tags":["day"],
		"contacts":["`+ken.ID+`","+15550100009"],"to":["+15550100001"],
		"text":"Hi {{first_name}}, report to {{fields.site | default \"the depot\"}}"}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	g := decode[apitype.Group](t, b)
	got := map[string]apitype.Recipient{}
	var order []string
	for _, r := range g.Recipients {
		if _, dup := got[r.Number]; dup {
			t.Fatalf("%s twice in the roster", r.Number)
		}
		got[r.Number] = r
		order = append(order, r.Number)
	}
	want := []string{"+15550100001", "+15550100002", "+15550100004", "+15550100003", "+15550100005", "+15550100009"}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("roster = %v, want %v", order, want)
	}
	for num, text := range map[string]string{
		"+15550100001": "Hi Ada, report to North",       // from to: still gets the contact's name and fields
		"+15550100002": "Hi Grace, report to the depot", // field missing: the default
		"+15550100005": "Hi Ken, report to West",
		"+15550100009": "Hi , report to the depot", // an unsaved number has no name
	} {
		if got[num].Text != text {
			t.Errorf("%s text = %q, want %q", num, got[num].Text, text)
		}
	}
	if got["+15550100001"].ContactID == "" || got["+15550100001"].Name != "Ada Lovelace" || got["+15550100009"].ContactID != "" {
		t.Errorf("contact ids/names = %+v / %+v", got["+15550100001"], got["+15550100009"])
	}

	// Contact ids repeated, or already a crew's member, are each taken
	// once, where they first appear.
	linus := decode[contactListJSON](t, must(e.do("GET", "/v1/contacts?q=linus", "", "read", nil))).Contacts[0]
	resp, b = e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Day"],
		"contacts":["`+ken.ID+`","`+linus.ID+`"," `+ken.ID+`"],"text":"x"}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create with repeated contacts = %d %s", resp.StatusCode, b)
	}
	order = order[:0]
	for _, r := range decode[apitype.Group](t, b).Recipients {
		order = append(order, r.Number)
	}
	if want := "+15550100002,+15550100003,+15550100004,+15550100005"; strings.Join(order, ",") != want {
		t.Fatalf("roster with repeated contacts = %v, want %v", order, want)
	}

	for _, tc := range []struct{ body, want string }{
		{`{"from":"+15550100000","crews":["Nope"],"text":"x"}`, "Nope"},
		{`{"from":"+15550100000","crews":["Empty"],"text":"x"}`, "no members"},
		{`{"from":"+15550100000","crews":["Night"],"template":"Ghost"}`, "Ghost"},
		{`{"from":"+15550100000","contacts":["ct_missing"],"text":"x"}`, "ct_missing"},
		{`{"from":"+15550100000","tags":["nobody-has-this"],"text":"x"}`, "nobody-has-this"},
		{`{"from":"+15550100000","crews":["Night"],"text":"Hi {{nickname}}"}`, "nickname"},
	} {
		resp, b := e.do("POST", "/v1/groups", tc.body, "send", nil)
		if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s = %d %s, want 422 naming %q", tc.body, resp.StatusCode, b, tc.want)
		}
	}
	// A field without a default that a recipient lacks names the recipient.
	resp, b = e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Night"],"text":"Go to {{fields.site}}"}`, "send", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "+15550100002") || !strings.Contains(string(b), "fields.site") {
		t.Fatalf("missing field = %d %s", resp.StatusCode, b)
	}
}

func TestCreateGroupWithSavedTemplateAndResponses(t *testing.T) {
	e := newEnv(t, nil)
	setupDirectory(t, e)
	if resp, b := e.do("POST", "/v1/templates", `{"name":"Call-in","text":"Crew call 7am",
		"responses":[{"key":"1","label":"Coming","ack":"yes"},{"key":"2","label":"Can't make it","ack":"no"}]}`, "send", nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("template = %d %s", resp.StatusCode, b)
	}
	resp, b := e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Night"],"template":"Call-in","quorum":{"response":"1","count":2}}`, "send", nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, b)
	}
	g := decode[apitype.Group](t, b)
	if g.Text != "Crew call 7am\nReply 1 Coming, 2 Can't make it" {
		t.Fatalf("text = %q", g.Text)
	}
	if len(g.Responses) != 2 || g.Quorum == nil || g.Quorum.Count != 2 || g.Quorum.MetAt != nil {
		t.Fatalf("responses/quorum = %+v %+v", g.Responses, g.Quorum)
	}
	for _, r := range g.Recipients {
		if r.Text != g.Text {
			t.Fatalf("recipient text %q, want the group's", r.Text)
		}
	}
	if _, ok := g.Counts["responses.1"]; !ok {
		t.Fatalf("counts lack responses: %v", g.Counts)
	}
	// The counts JSON nests responses.
	if !strings.Contains(string(b), `"responses":{"1":0,"2":0}`) {
		t.Fatalf("counts.responses not nested: %s", b)
	}
	resp, b = e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Night"],"template":"Call-in","response_hint":false}`, "send", nil)
	if g := decode[apitype.Group](t, b); resp.StatusCode != http.StatusCreated || g.Text != "Crew call 7am" {
		t.Fatalf("without hint = %d %q", resp.StatusCode, g.Text)
	}
	resp, b = e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Night"],"text":"x","quorum":{"response":"9","count":1},
		"responses":[{"key":"1","label":"Yes"}]}`, "send", nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "quorum.response") {
		t.Fatalf("quorum of an unknown option = %d %s", resp.StatusCode, b)
	}
}

func TestPreviewSendsAndWritesNothing(t *testing.T) {
	e := newEnv(t, nil)
	setupDirectory(t, e)
	if resp, _ := e.do("POST", "/v1/suppressions", `{"number":"+15550100002","reason":"stop"}`, "send", nil); resp.StatusCode != http.StatusCreated {
		t.Fatal("suppress")
	}
	created := 0
	inner := e.svc.CreateFunc
	e.svc.CreateFunc = func(ctx context.Context, req group.Request, opts tracker.CreateOptions) (string, bool, error) {
		created++
		return inner(ctx, req, opts)
	}
	body := `{"from":"+15550100000","crews":["Night","Day"],"to":["not-a-number","+15550100001"],
		"text":"Hi {{first_name}}, 7am at {{fields.site | default \"the depot\"}} (bring €5)",
		"responses":[{"key":"1","label":"Coming"}]}`
	resp, b := e.do("POST", "/v1/groups/preview", body, "send", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("preview = %d %s", resp.StatusCode, b)
	}
	p := decode[previewJSON](t, b)
	if p.Recipients != 3 || p.SuppressedTotal != 1 || p.Suppressed[0].Number != "+15550100002" || p.Suppressed[0].Reason != "stop" {
		t.Fatalf("preview = %+v", p)
	}
	if p.InvalidTotal != 1 || p.Invalid[0].Input != "not-a-number" {
		t.Fatalf("invalid = %+v", p.Invalid)
	}
	if p.Encoding != "GSM-7" || p.Segments != 1 || len(p.Samples) != 3 || p.Samples[0].Text != "Hi Ada, 7am at North (bring €5)\nReply 1 Coming" {
		t.Fatalf("segments/samples = %+v", p)
	}
	// Of the people texted, Margaret's text is the longest: 50 characters,
	// and € counts two septets. (Grace's is longer, but she is suppressed.)
	if want := 51; p.Units != want {
		t.Fatalf("units = %d, want %d", p.Units, want)
	}
	resp, b = e.do("POST", "/v1/groups/preview", `{"from":"+15550100000","crews":["Night"],"text":"Привет {{first_name}}"}`, "send", nil)
	if p := decode[previewJSON](t, b); resp.StatusCode != http.StatusOK || p.Encoding != "UCS-2" {
		t.Fatalf("UCS-2 preview = %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", "/v1/groups/preview", `{"from":"+15550100000","crews":["Ghost"],"text":"x"}`, "send", nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("unknown crew = %d %s", resp.StatusCode, b)
	}
	if created != 0 {
		t.Fatalf("preview created %d groups", created)
	}
	if gs := decode[groupListJSON](t, must(e.do("GET", "/v1/groups", "", "read", nil))).Groups; len(gs) != 0 {
		t.Fatalf("preview wrote groups: %v", gs)
	}
}

// A directory choice that would text nobody is a 422 naming the reason,
// whatever tracker reports it.
func TestNobodyReachableIs422(t *testing.T) {
	e := newEnv(t, nil)
	setupDirectory(t, e)
	e.svc.CreateFunc = func(context.Context, group.Request, tracker.CreateOptions) (string, bool, error) {
		return "", false, fmt.Errorf("%w: all 3 recipients are on the suppression list", tracker.ErrNoneReachable)
	}
	resp, b := e.do("POST", "/v1/groups", `{"from":"+15550100000","crews":["Night"],"text":"x"}`, "send", nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), "suppression list") {
		t.Fatalf("nobody reachable = %d %s", resp.StatusCode, b)
	}
}
