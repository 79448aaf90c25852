package group

import (
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// The directory (issue 13) feeds the follow-ups of issue 14: a contact's
// time zone reaches the roster, a reminder repeats the person's own
// rendered text, the escalation tally counts per response option, and a
// met quorum stops follow-ups.
func TestDirectoryFeedsFollowups(t *testing.T) {
	hint := false
	nums := numbers(2)
	req := Request{From: sender, Text: "Hi {{first_name}}, crew call 7am", ResponseHint: &hint,
		Resolved: []RecipientInput{
			{Number: nums[0], Name: "Ada King", ContactID: "ct_1", Timezone: "Europe/Berlin"},
			{Number: nums[1], Name: "Bo Li", ContactID: "ct_2"},
		},
		Responses: []Option{{Key: "1", Label: "Coming", Ack: crewcast.AckYes}, {Key: "2", Label: "Cannot", Ack: crewcast.AckNo}},
		Quorum:    &Quorum{Response: "1", Count: 1, KeepSending: true},
		PolicyInput: PolicyInput{Followup: &FollowupInput{After: "10m", Max: 2},
			Escalate: &EscalateInput{After: "30m", To: []string{"+15550109999"}, Text: "{{tally}}"}}}
	c, errs := Plan("g1", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	if errs := PlanPolicy(&c, req, PolicyDefaults{Timezone: "UTC"}, NormalizeNumber); errs != nil {
		t.Fatalf("plan policy: %v", errs)
	}
	if c.Recipients[0].TZ != "Europe/Berlin" || c.Recipients[1].TZ != "" {
		t.Fatalf("roster zones %q %q, want the contact's", c.Recipients[0].TZ, c.Recipients[1].TZ)
	}
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	if !h.g.HasQuorum() || h.g.QuorumMet() {
		t.Fatalf("quorum: has %v met %v", h.g.HasQuorum(), h.g.QuorumMet())
	}
	if got := h.g.FollowupTextFor(h.g.Recipients[0]); got != DefaultFollowupPrefix+"Hi Ada, crew call 7am" {
		t.Fatalf("reminder text %q", got)
	}
	h.sendAll(t0)
	h.reply(1, "2", t0.Add(time.Minute))
	e, ok := h.g.Escalate(t0.Add(30 * time.Minute))
	if !ok || !strings.Contains(e.Text, "1 Coming 0, 2 Cannot 1") {
		t.Fatalf("escalation %+v", e)
	}
	h.reply(0, "coming", t0.Add(31*time.Minute))
	q, ok := h.g.QuorumReached(t0.Add(31 * time.Minute)) // as the actor does after a reply
	if !ok {
		t.Fatal("the quorum was not reached")
	}
	h.apply(q)
	if !h.g.QuorumMet() {
		t.Fatal("quorum met, but QuorumMet says no")
	}
	if c := h.followups(t0.Add(time.Hour)); len(c.Sends) != 0 {
		t.Fatalf("follow-ups after the quorum: %v", ids(c))
	}
}
