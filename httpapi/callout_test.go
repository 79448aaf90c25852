package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
)

const calloutOpts = `"responses":[{"key":"1","label":"Coming","ack":"yes"},{"key":"2","label":"No","ack":"no"}]`
const calloutBase = `{"from":"+15550100000","to":["+15550100001","+15550100002","+15550100003"],"text":"Callout",` + calloutOpts

// Callouts that fill are accepted and shown: the group's waves
// (size, every, sent, next_at), its exact quorum and auto-reply texts; the
// recipients' wave, selected and standby; the counts of not_needed,
// selected and standby. Responses are validated against docs/openapi.yaml.
func TestCalloutCreatedAndShown(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "waves make the quorum exact", method: "POST", path: "/v1/groups", key: "send", status: 201,
			body: calloutBase + `,"quorum":{"response":"1","count":1},"waves":{"size":2,"every":"5m"},"confirmed_text":"You're on"}`,
			check: func(t *testing.T, e *env, _ *http.Response, body []byte) {
				var g struct {
					ID     string `json:"id"`
					Quorum struct {
						Exact bool `json:"exact"`
					} `json:"quorum"`
					Waves         *apitype.Waves `json:"waves"`
					ConfirmedText string         `json:"confirmed_text"`
					FilledText    string         `json:"filled_text"`
					Counts        map[string]any `json:"counts"`
				}
				if err := json.Unmarshal(body, &g); err != nil {
					t.Fatal(err)
				}
				if !g.Quorum.Exact || g.Waves == nil || g.Waves.Size != 2 || g.Waves.Every != "5m" || g.Waves.Sent != 0 ||
					g.Waves.NextAt == nil || g.ConfirmedText != "You're on" || g.FilledText != group.DefaultFilledText {
					t.Fatalf("group %s", body)
				}
				for _, k := range []string{"not_needed", "selected", "standby"} {
					if _, ok := g.Counts[k]; !ok {
						t.Errorf("counts lack %s: %s", k, body)
					}
				}
				now := e.clock.Now()
				e.apply(g.ID, group.WaveSent{At: now, Wave: 1, Indices: []int{0, 1}},
					group.Selected{At: now, Indices: []int{1}}, group.NotNeeded{At: now, Indices: []int{2}})
				resp, rbody := e.do("GET", "/v1/groups/"+g.ID, "", e.keys["read"], nil)
				if resp.StatusCode != 200 {
					t.Fatalf("get %d %s", resp.StatusCode, rbody)
				}
				var got struct {
					Counts     map[string]any   `json:"counts"`
					Waves      apitype.Waves    `json:"waves"`
					Recipients []map[string]any `json:"recipients"`
				}
				if err := json.Unmarshal(rbody, &got); err != nil {
					t.Fatal(err)
				}
				if got.Waves.Sent != 1 || got.Counts["selected"] != 1.0 || got.Counts["not_needed"] != 1.0 {
					t.Fatalf("after a wave: %s", rbody)
				}
				r := got.Recipients
				if r[0]["wave"] != 1.0 || r[1]["selected"] != true || r[0]["selected"] != false || r[2]["wave"] != nil ||
					r[2]["status"] != "not_needed" {
					t.Fatalf("recipients %v", r)
				}
				// The confirmed_text is in the person's history.
				s := group.AutoReplySend{ID: "c1", Index: 1, Kind: group.AutoConfirmed}
				e.apply(g.ID, group.Replied{At: now, EventID: "in1", Index: 1, Text: "1", Response: "1"},
					group.AutoReplyClaimed{At: now, Sends: []group.AutoReplySend{s}},
					group.AutoReplyOutcomes{At: now, Outcomes: []group.Outcome{{SendID: "c1", Indices: []int{1}, Result: group.ResultAccepted, MessageID: "m-c1"}}})
				resp, hb := e.do("GET", "/v1/reports/recipients/%2B15550100002", "", e.keys["read"], nil)
				if resp.StatusCode != 200 || !strings.Contains(string(hb), `"auto_replies":[{"group_id":"`+g.ID+`","kind":"confirmed","text":"You're on","status":"sent"}]`) {
					t.Fatalf("history %d %s", resp.StatusCode, hb)
				}
			}},
		{name: "exact false stays plain with waves", method: "POST", path: "/v1/groups", key: "send", status: 201,
			body: calloutBase + `,"quorum":{"response":"1","count":1,"exact":false},"waves":{"size":2,"every":"5m"}}`,
			has:  []string{`"exact":false`}},
	})
	runShared(t, nil, []scenario{
		{name: "waves need a quorum", method: "POST", path: "/v1/groups", key: "send", status: 400,
			body: calloutBase + `,"waves":{"size":2,"every":"5m"}}`, fields: []string{"waves"}},
		{name: "bad wave size and every", method: "POST", path: "/v1/groups", key: "send", status: 400,
			body:   calloutBase + `,"quorum":{"response":"1","count":1},"waves":{"size":0,"every":"soon"}}`,
			fields: []string{"waves.every", "waves.size"}},
		{name: "unknown quorum field", method: "POST", path: "/v1/groups", key: "send", status: 400,
			body: calloutBase + `,"quorum":{"response":"1","count":1,"exactly":true}}`},
		{name: "filled_text needs a quorum", method: "POST", path: "/v1/groups", key: "send", status: 400,
			body: calloutBase + `,"filled_text":"Full"}`, fields: []string{"filled_text"}},
	})
}

// calloutSvc adds the callout actions to the test service.
type calloutSvc struct {
	*fakeService
	e *env
}

func (c calloutSvc) SelectRecipient(ctx context.Context, id, number, by string) error {
	return c.e.mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.SelectByHand(number, now, by) })
}

func (c calloutSvc) ReleaseRecipient(ctx context.Context, id, number, by string) error {
	return c.e.mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.ReleaseByHand(number, now, by) })
}

func (c calloutSvc) StartNextWave(ctx context.Context, id, by string) error {
	return c.e.mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.WaveNow(now, by) })
}

// The dispatcher's hand: next wave now, release, select; 409 for what the
// rules refuse, 501 from a service without the actions, read keys refused.
func TestCalloutActions(t *testing.T) {
	plain := newEnv(t, nil)
	pid := plain.createGroup("+15550100001")
	if resp, b := plain.do("POST", "/v1/groups/"+pid+"/next-wave", "", "send", nil); resp.StatusCode != 501 {
		t.Fatalf("next wave without support: %d %s", resp.StatusCode, b)
	}
	var svc calloutSvc
	e := newEnv(t, func(c *Config) {
		svc.fakeService = c.Service.(*fakeService)
		c.Service = &svc
	})
	svc.e = e
	resp, b := e.do("POST", "/v1/groups", calloutBase+`,"quorum":{"response":"1","count":1},"waves":{"size":1,"every":"1h"}}`, "send", nil)
	if resp.StatusCode != 201 {
		t.Fatalf("create %d %s", resp.StatusCode, b)
	}
	id := decode[apitype.Group](t, b).ID
	if resp, _ := e.do("POST", "/v1/groups/"+id+"/next-wave", "", "read", nil); resp.StatusCode != 403 {
		t.Fatalf("read key: %d", resp.StatusCode)
	}
	e.apply(id, group.WaveSent{At: e.clock.Now(), Wave: 1, Indices: []int{0}})
	resp, b = e.do("POST", "/v1/groups/"+id+"/next-wave", "", "send", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"sent":2`) {
		t.Fatalf("next wave %d %s", resp.StatusCode, b)
	}
	num := "%2B15550100002"
	if resp, b := e.do("POST", "/v1/groups/"+id+"/recipients/"+num+"/select", "", "send", nil); resp.StatusCode != 409 {
		t.Fatalf("select without a yes: %d %s", resp.StatusCode, b)
	}
	e.apply(id, group.Replied{At: e.clock.Now(), EventID: "in1", Index: 1, Text: "1", Response: "1"})
	resp, b = e.do("POST", "/v1/groups/"+id+"/recipients/"+num+"/select", "", "send", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"selected":1`) {
		t.Fatalf("select %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/v1/groups/"+id+"/recipients/"+num+"/release", "", "send", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"selected":0`) {
		t.Fatalf("release %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", "/v1/groups/"+id+"/recipients/"+num+"/release", "", "send", nil); resp.StatusCode != 409 {
		t.Fatalf("release twice: %d %s", resp.StatusCode, b)
	}
}
