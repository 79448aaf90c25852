package group

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLadderValidation(t *testing.T) {
	ok := []StepInput{{After: "5m", Channel: "sms"}, {After: "10m", Channel: "voice"}, {After: "20m", Channel: "email", Text: "x"}}
	for _, tc := range []struct {
		name  string
		in    FollowupInput
		field string
	}{
		{"both forms", FollowupInput{After: "5m", Max: 2, Steps: ok}, "followup"},
		{"no steps", FollowupInput{Steps: []StepInput{}}, "followup.steps"},
		{"too many", FollowupInput{Steps: slices.Repeat([]StepInput{{After: "1m", Channel: "sms"}}, MaxFollowups+1)}, "followup.steps"},
		{"bad channel", FollowupInput{Steps: []StepInput{{After: "5m", Channel: "fax"}}}, "followup.steps[0].channel"},
		{"bad after", FollowupInput{Steps: []StepInput{{After: "soon", Channel: "sms"}}}, "followup.steps[0].after"},
		{"not increasing", FollowupInput{Steps: []StepInput{{After: "10m", Channel: "sms"}, {After: "10m", Channel: "voice"}}}, "followup.steps[1].after"},
		{"long sms text", FollowupInput{Steps: []StepInput{{After: "5m", Channel: "sms", Text: strings.Repeat("x", 160*MaxSegments+1)}}}, "followup.steps[0].text"},
	} {
		_, errs := planFollowup(&tc.in)
		if !slices.ContainsFunc(errs, func(e FieldError) bool { return e.Field == tc.field }) {
			t.Errorf("%s: errors %v, want one on %s", tc.name, errs, tc.field)
		}
	}
	f, errs := planFollowup(&FollowupInput{Steps: ok})
	if errs != nil || f.Max != 3 || f.After != 5*time.Minute || f.Steps[1].Channel != ChannelVoice || f.Steps[2].After != 20*time.Minute {
		t.Fatalf("ladder = %+v, %v", f, errs)
	}
	if got := f.Channels(); !slices.Equal(got, []string{"sms", "voice", "email"}) {
		t.Fatalf("channels = %v", got)
	}
	old, errs := planFollowup(&FollowupInput{After: "10m", Max: 2})
	if errs != nil || old.Steps != nil || old.Step(2) != (Step{After: 20 * time.Minute, Channel: ChannelSMS}) {
		t.Fatalf("old form = %+v, %v", old, errs)
	}
}

// Each step's after counts from the person's send, not from the step
// before; each step is claimed once; an answer stops the rest; a step's
// own text is used for that step only.
func TestLadderStepsCountFromTheSend(t *testing.T) {
	in := PolicyInput{Followup: &FollowupInput{Steps: []StepInput{
		{After: "5m", Channel: "sms", Text: "First nudge"}, {After: "7m", Channel: "sms"}, {After: "20m", Channel: "sms"}}}}
	h := policyHarness(t, 2, in, PolicyDefaults{})
	h.sendAll(t0)
	if c := h.followups(t0.Add(5*time.Minute - time.Second)); len(c.Sends) != 0 {
		t.Fatalf("early: %v", ids(c))
	}
	c := h.followups(t0.Add(5 * time.Minute))
	if !slices.Equal(ids(c), []string{"f0-1", "f1-1"}) {
		t.Fatalf("step 1 = %v", ids(c))
	}
	if got := h.g.FollowupTextFor(h.g.Recipients[0]); got != "First nudge" {
		t.Fatalf("step 1 text %q", got)
	}
	// The provider answers a minute late: step 2 is still due 7m after the send.
	for _, s := range c.Sends {
		h.followupOutcome(s, nil, t0.Add(6*time.Minute))
	}
	if got := h.g.NextFollowupAt(h.g.Recipients[0]); !got.Equal(t0.Add(7 * time.Minute)) {
		t.Fatalf("step 2 due %v, want send+7m", got.Sub(t0))
	}
	if got := h.g.FollowupTextFor(h.g.Recipients[0]); got != "First nudge" {
		t.Fatalf("text after step 1 %q", got)
	}
	h.reply(1, "yes", t0.Add(6*time.Minute+30*time.Second))
	c = h.followups(t0.Add(7 * time.Minute))
	if !slices.Equal(ids(c), []string{"f0-2"}) {
		t.Fatalf("step 2 = %v (the answer stops recipient 1)", ids(c))
	}
	if got := h.g.FollowupTextFor(h.g.Recipients[0]); got != "Reminder: Crew call 7am" {
		t.Fatalf("step 2 default text %q", got)
	}
	h.followupOutcome(c.Sends[0], nil, t0.Add(7*time.Minute))
	if c := h.followups(t0.Add(19 * time.Minute)); len(c.Sends) != 0 {
		t.Fatalf("step 3 early: %v", ids(c))
	}
	c = h.followups(t0.Add(20 * time.Minute))
	h.followupOutcome(c.Sends[0], nil, t0.Add(20*time.Minute))
	if c := h.followups(t0.Add(24 * time.Hour)); len(c.Sends) != 0 {
		t.Fatalf("beyond the ladder: %v", ids(c))
	}
	r := h.g.Recipients[0]
	if r.FollowupsSent != 3 || h.g.FollowupStopped(r) != "all follow-ups sent" || h.g.Recipients[1].FollowupsSent != 1 {
		t.Fatalf("sent %d / %d, stopped %q", r.FollowupsSent, h.g.Recipients[1].FollowupsSent, h.g.FollowupStopped(r))
	}
}

// A step whose provider call was left in flight by a crash is spent
// (unconfirmed), never claimed again; the next step follows.
func TestLadderCrashSpendsTheStep(t *testing.T) {
	in := PolicyInput{Followup: &FollowupInput{Steps: []StepInput{{After: "5m", Channel: "sms"}, {After: "10m", Channel: "sms"}}}}
	h := policyHarness(t, 1, in, PolicyDefaults{})
	h.sendAll(t0)
	c := h.followups(t0.Add(5 * time.Minute))
	if len(c.Sends) != 1 {
		t.Fatalf("step 1 = %v", ids(c))
	}
	for _, e := range h.g.RecoverFollowups(t0.Add(6*time.Minute), nil) {
		h.apply(e)
	}
	if c := h.followups(t0.Add(9 * time.Minute)); len(c.Sends) != 0 {
		t.Fatalf("step 1 again after the crash: %v", ids(c))
	}
	if c := h.followups(t0.Add(10 * time.Minute)); !slices.Equal(ids(c), []string{"f0-2"}) {
		t.Fatalf("step 2 = %v", ids(c))
	}
}
