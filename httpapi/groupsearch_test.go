package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// TestGroupsSearch is issue 28 item 8: GET /v1/groups takes q (text,
// any case), from (the sender, normalized), since and until (created_at)
// besides status; bad values are 400s naming the parameter.
func TestGroupsSearch(t *testing.T) {
	e := newEnv(t, nil)
	mk := func(from, text string) string {
		req := group.Request{From: from, Text: text, Recipients: []group.RecipientInput{{Number: "+15550100009"}}}
		id, _, err := e.mini.create(context.Background(), req, tracker.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		e.clock.Advance(time.Hour)
		return id
	}
	start := e.clock.Now()
	gate := mk("+15550100000", "Gate CODE changed")
	call := mk("+15550100001", "Crew call 7am")
	late := mk("+15550100001", "gate opens late")
	list := func(query string) []string {
		t.Helper()
		r, b := e.do("GET", "/v1/groups?"+query, "", "read", nil)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", query, r.StatusCode, b)
		}
		var ids []string
		for _, g := range decode[groupListJSON](t, b).Groups {
			ids = append(ids, g.ID)
		}
		return ids
	}
	at := func(d time.Duration) string { return url.QueryEscape(start.Add(d).Format(time.RFC3339)) }
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"q=gate", []string{late, gate}},
		{"q=GATE+code", []string{gate}},
		{"from=%2B15550100001", []string{late, call}},
		{"from=(555)+010-0001", []string{late, call}},
		{"from=%2B15550100001&q=gate", []string{late}},
		{"since=" + at(time.Hour), []string{late, call}},
		{"until=" + at(time.Hour), []string{gate}},
		{"since=" + at(time.Hour) + "&until=" + at(2*time.Hour), []string{call}},
		{"q=zebra", nil},
	} {
		if got := list(c.query); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
	}
	for query, field := range map[string]string{"since=yesterday": "since", "until=2026-13-01": "until", "from=abc": "from",
		"since=" + at(time.Hour) + "&until=" + at(0): "until"} {
		r, b := e.do("GET", "/v1/groups?"+query, "", "read", nil)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"`+field+`"`) {
			t.Errorf("%s: %d %s, want a 400 naming %s", query, r.StatusCode, b, field)
		}
	}
}

// TestResolvedByNamesWhoMarked is issue 28 item 9: a recipient resolved by
// hand as delivered carries resolved_by, the name of the key (or user)
// that did; one marked not delivered (retried: the provider will say) has
// none.
func TestResolvedByNamesWhoMarked(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001", "+15550100002")
	e.apply(id, group.Claimed{At: e.clock.Now(), Sends: []group.Send{{ID: "s0", Indices: []int{0, 1}}}})
	e.apply(id, group.Outcomes{At: e.clock.Now(), Outcomes: []group.Outcome{{SendID: "s0", Indices: []int{0, 1},
		Result: group.ResultUncertain, Class: crewcast.ClassUncertain}}})
	for n, outcome := range map[string]string{"%2B15550100001": "delivered", "%2B15550100002": "not_delivered"} {
		if r, b := e.do("POST", "/v1/groups/"+id+"/recipients/"+n+"/resolve", `{"outcome":"`+outcome+`"}`, "send", nil); r.StatusCode != 200 {
			t.Fatalf("resolve %s: %d %s", n, r.StatusCode, b)
		}
	}
	r, b := e.do("GET", "/v1/groups/"+id, "", "read", nil)
	if r.StatusCode != 200 {
		t.Fatalf("get: %d %s", r.StatusCode, b)
	}
	for _, rj := range decode[apitype.Group](t, b).Recipients {
		switch {
		case rj.Number == "+15550100001" && (rj.ResolvedBy == nil || *rj.ResolvedBy != "send"):
			t.Errorf("the resolved recipient: status %s, resolved_by %v, want the key's name %q", rj.Status, rj.ResolvedBy, "send")
		case rj.Number == "+15550100002" && rj.ResolvedBy != nil:
			t.Errorf("the recipient marked not delivered (%s) has resolved_by %q", rj.Status, *rj.ResolvedBy)
		}
	}
}
