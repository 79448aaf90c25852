package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/apitype"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

func TestGroupPolicyFields(t *testing.T) {
	e := newEnv(t, nil)
	sendAt := e.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	body := `{"from":"+15550100000","text":"Crew call 7am",
		"recipients":[{"number":"+15550100001","name":"Ann","timezone":"America/New_York"},{"number":"+15550100002"}],
		"send_at":"` + sendAt + `","priority":"normal","quiet_hours":"22:00-06:30",
		"followup":{"after":"10m","max":2},
		"escalate":{"after":"30m","crews":["Supervisors"],"to":["+15550109999"],"text":"No reply: {{no_reply_names}}"}}`
	resp, b := e.do("POST", "/v1/groups", body, "send", nil)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	g := decode[apitype.Group](t, b)
	if g.SendAt == nil || g.SendAt.Format(time.RFC3339) != sendAt || g.Priority != "normal" || g.QuietHours != "22:00-06:30" {
		t.Fatalf("group policy %+v", g.Policy)
	}
	if g.Followup == nil || g.Followup.After != "10m" || g.Followup.Max != 2 || g.Followup.Text != "Reminder: Crew call 7am" {
		t.Fatalf("followup %+v", g.Followup)
	}
	if g.Escalate == nil || g.Escalate.Crews[0] != "Supervisors" || g.Escalate.To[0] != "+15550109999" || g.EscalatedAt != nil {
		t.Fatalf("escalate %+v", g.Escalate)
	}
	if g.Counts["scheduled"] != 2 {
		t.Fatalf("counts %v", g.Counts)
	}
	for _, r := range g.Recipients {
		if r.Status != "scheduled" || r.HeldUntil == nil || r.HeldUntil.Format(time.RFC3339) != sendAt || r.NextFollowupAt != nil {
			t.Fatalf("recipient %+v", r)
		}
	}
	if !strings.Contains(string(b), `"followups_sent":0`) || !strings.Contains(string(b), `"next_followup_at":null`) {
		t.Fatalf("recipient fields missing: %s", b)
	}

	// After the first send and one follow-up, the counts and next time show.
	id := g.ID
	now := e.clock.Now().Add(time.Hour)
	e.apply(id, group.Claimed{At: now, Sends: []group.Send{{ID: "s1", Indices: []int{0}}}},
		group.Outcomes{At: now, Outcomes: []group.Outcome{{SendID: "s1", Indices: []int{0}, Result: group.ResultAccepted, MessageID: "m1"}}},
		group.FollowupClaimed{At: now.Add(10 * time.Minute), Sends: []group.FollowupSend{{ID: "f0-1", Index: 0, N: 1}}},
		group.FollowupOutcomes{At: now.Add(10 * time.Minute), Outcomes: []group.Outcome{{SendID: "f0-1", Indices: []int{0}, Result: group.ResultAccepted, MessageID: "m2"}}})
	resp, b = e.do("GET", "/v1/groups/"+id+"/recipients?status=sent", "", "read", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	list := decode[recipientListJSON](t, b)
	if len(list.Recipients) != 1 {
		t.Fatalf("recipients %s", b)
	}
	r := list.Recipients[0]
	if r.FollowupsSent != 1 || r.NextFollowupAt == nil || !r.NextFollowupAt.Equal(now.Add(20*time.Minute)) || r.HeldUntil != nil {
		t.Fatalf("after a follow-up: %+v", r.RecipientPolicy)
	}
	if r.Status != string(crewcast.StatusSent) {
		t.Fatalf("status %s", r.Status)
	}
}

func TestGroupPolicyValidation(t *testing.T) {
	e := newEnv(t, nil)
	resp, b := e.do("POST", "/v1/groups", `{"from":"+15550100000","to":["+15550100001"],"text":"x",
		"quiet_hours":"late","followup":{"after":"1ms","max":0},"priority":"urgent"}`, "send", nil)
	if resp.StatusCode != 400 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for _, f := range []string{"quiet_hours", "followup.after", "followup.max", "priority"} {
		if !strings.Contains(string(b), `"`+f+`"`) {
			t.Errorf("no error for %s: %s", f, b)
		}
	}
	// A group without a policy shows none.
	id := e.createGroup("+15550100001")
	resp, b = e.do("GET", "/v1/groups/"+id, "", "read", nil)
	if resp.StatusCode != 200 || strings.Contains(string(b), `"followup"`) || strings.Contains(string(b), `"quiet_hours"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}

// policySvc adds the policy actions to the test service.
type policySvc struct {
	*fakeService
	e *env
}

func (p policySvc) Nudge(ctx context.Context, id, by string) error {
	return p.e.mini.command(ctx, id, func(g *group.Group, now time.Time) (group.Event, error) { return g.Nudge(now, by) })
}

func (p policySvc) RetryFailed(ctx context.Context, id, by string) (int, int, error) {
	p.e.mini.mu.Lock()
	_, ok := p.e.mini.groups[id]
	p.e.mini.mu.Unlock()
	if !ok {
		return 0, 0, tracker.ErrNotFound
	}
	return 1, 2, nil
}

func TestGroupPolicyActions(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001")
	// A service without the actions answers 501.
	if resp, b := e.do("POST", "/v1/groups/"+id+"/nudge", "", "send", nil); resp.StatusCode != 501 {
		t.Fatalf("nudge without support: %d %s", resp.StatusCode, b)
	}
	var svc policySvc
	e2 := newEnv(t, func(c *Config) {
		svc.fakeService = c.Service.(*fakeService)
		c.Service = &svc
	})
	svc.e = e2
	body := `{"from":"+15550100000","to":["+15550100001"],"text":"x","followup":{"after":"1h","max":1}}`
	resp, b := e2.do("POST", "/v1/groups", body, "send", nil)
	if resp.StatusCode != 201 {
		t.Fatalf("create %d %s", resp.StatusCode, b)
	}
	gid := decode[apitype.Group](t, b).ID
	// Nobody was texted yet: 409.
	if resp, b := e2.do("POST", "/v1/groups/"+gid+"/nudge", "", "send", nil); resp.StatusCode != 409 {
		t.Fatalf("nudge before any send: %d %s", resp.StatusCode, b)
	}
	now := e2.clock.Now()
	e2.apply(gid, group.Claimed{At: now, Sends: []group.Send{{ID: "s1", Indices: []int{0}}}},
		group.Outcomes{At: now, Outcomes: []group.Outcome{{SendID: "s1", Indices: []int{0}, Result: group.ResultAccepted, MessageID: "m1"}}})
	if resp, b := e2.do("POST", "/v1/groups/"+gid+"/nudge", "", "read", nil); resp.StatusCode != 403 {
		t.Fatalf("read key: %d %s", resp.StatusCode, b)
	}
	resp, b = e2.do("POST", "/v1/groups/"+gid+"/nudge", "", "send", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("nudge: %d %s", resp.StatusCode, b)
	}
	if g := decode[apitype.Group](t, b); g.Recipients[0].NextFollowupAt == nil || g.Recipients[0].NextFollowupAt.After(e2.clock.Now()) {
		t.Fatalf("next follow-up not now: %+v", g.Recipients[0].RecipientPolicy)
	}
	resp, b = e2.do("POST", "/v1/groups/"+gid+"/retry-failed", "", "send", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"retried":1`) || !strings.Contains(string(b), `"skipped":2`) {
		t.Fatalf("retry-failed: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e2.do("POST", "/v1/groups/nope/retry-failed", "", "send", nil); resp.StatusCode != 404 {
		t.Fatalf("missing group: %d", resp.StatusCode)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", time.Second: "1s", time.Hour + time.Second: "1h0m1s"} {
		if got := shortDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

// TestListShowsSendAtOfScheduledGroups: GET /v1/groups carries send_at
// for a group still waiting for it, so a list can say "Scheduled for …"
// (issue 28 item 4); a group without one has none.
func TestListShowsSendAtOfScheduledGroups(t *testing.T) {
	e := newEnv(t, nil)
	sendAt := e.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if resp, b := e.do("POST", "/v1/groups", `{"from":"+15550100000","to":["+15550100001"],"text":"Later","send_at":"`+sendAt+`"}`, "send", nil); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("POST", "/v1/groups", `{"from":"+15550100000","to":["+15550100002"],"text":"Now"}`, "send", nil); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b := e.do("GET", "/v1/groups", "", "read", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	list := decode[groupListJSON](t, b)
	if len(list.Groups) != 2 {
		t.Fatalf("list: %s", b)
	}
	for _, g := range list.Groups {
		switch g.Text {
		case "Later":
			if g.SendAt == nil || g.SendAt.Format(time.RFC3339) != sendAt {
				t.Errorf("scheduled group in the list: send_at %v, want %s", g.SendAt, sendAt)
			}
		case "Now":
			if g.SendAt != nil {
				t.Errorf("unscheduled group in the list has send_at %v", g.SendAt)
			}
		}
	}
}

// A send_at in the past is refused (422 on send_at), not quietly sent now.
func TestGroupSendAtInPastRefused(t *testing.T) {
	e := newEnv(t, nil)
	past := e.clock.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	body := `{"from":"+15550100000","text":"x","to":["+15550100001"],"send_at":"` + past + `"}`
	resp, b := e.do("POST", "/v1/groups", body, "send", nil)
	if resp.StatusCode != 422 || !strings.Contains(string(b), `"field":"send_at"`) || !strings.Contains(string(b), "past") {
		t.Fatalf("send_at in the past: %d %s", resp.StatusCode, b)
	}
}
