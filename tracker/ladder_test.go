package tracker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// An sms ladder goes out step by step, each step `after` the person's send,
// each once, with its own text; an answer stops the rest.
func TestLadderSMSStepsOnce(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createPolicy(2, group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{
		{After: "1m", Channel: "sms", Text: "Step one"}, {After: "3m", Channel: "sms", Text: "Step two"}}}})
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	n := nums(2)
	one, two := countText("Step one"), countText("Step two")
	e.clk.Advance(time.Minute)
	e.waitSends("step one", func(s []crewcast.SendRequest) bool { return one(s) == 2 })
	e.settle()
	e.reply(n[1], "yes", "r1")
	e.waitGroup(id, "reply", func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		return rows[1].Ack == crewcast.AckYes
	})
	e.clk.Advance(time.Minute) // send+2m: step two not due yet
	e.settle()
	if got := two(e.prov.sent()); got != 0 {
		t.Fatalf("step two early: %d", got)
	}
	e.clk.Advance(time.Minute)
	e.waitSends("step two", func(s []crewcast.SendRequest) bool { return two(s) == 1 })
	for range 3 {
		e.clk.Advance(time.Minute)
		e.settle()
	}
	if per := e.prov.sentTo(); per[n[0]] != 3 || per[n[1]] != 2 {
		t.Fatalf("sends per person %v", per)
	}
}

// A step on a channel the tracker cannot send on is refused at creation
// (422, naming the step), never texted instead.
func TestLadderRefusesChannelWithoutSender(t *testing.T) {
	e := newEnv(t, nil)
	_, _, err := e.tr.Create(context.Background(), group.Request{From: from, To: nums(1), Text: "x",
		PolicyInput: group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{
			{After: "1m", Channel: "sms"}, {After: "2m", Channel: "voice"}}}}}, CreateOptions{})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "followup.steps[1].channel" ||
		!ve.Fields[0].Unprocessable || !strings.Contains(ve.Fields[0].Message, "voice") {
		t.Fatalf("create = %v", err)
	}
}
