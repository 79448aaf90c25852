package group

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// policyHarness builds a group with the given policy input.
func policyHarness(t *testing.T, n int, in PolicyInput, d PolicyDefaults, tz ...string) *harness {
	t.Helper()
	req := Request{From: sender, Text: "Crew call 7am", PolicyInput: in}
	for i, num := range numbers(n) {
		ri := RecipientInput{Number: num, Name: "P" + string(rune('A'+i))}
		if i < len(tz) {
			ri.Timezone = tz[i]
		}
		req.Recipients = append(req.Recipients, ri)
	}
	c, errs := Plan("g1", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	if errs := PlanPolicy(&c, req, d, NormalizeNumber); errs != nil {
		t.Fatalf("plan policy: %v", errs)
	}
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	return h
}

// sendAll claims every due main send and accepts it at now.
func (h *harness) sendAll(now time.Time) {
	h.t.Helper()
	c := h.claim(now, 0)
	for _, s := range c.Sends {
		h.outcome(s, crewcast.SendResult{MessageID: "m-" + s.ID}, nil, now)
	}
}

func (h *harness) followups(now time.Time) FollowupClaimed {
	h.t.Helper()
	c, ok := h.g.ClaimFollowups(now, 0)
	if ok {
		h.apply(c)
	}
	return c
}

func (h *harness) followupOutcome(s FollowupSend, err error, now time.Time) {
	h.t.Helper()
	o := h.g.FollowupOutcome(s.Send(), crewcast.SendResult{MessageID: "m-" + s.ID}, err, now)
	h.apply(FollowupOutcomes{At: now, Outcomes: []Outcome{o}})
}

func (h *harness) reply(i int, text string, now time.Time) {
	h.t.Helper()
	ev := crewcast.Event{Kind: crewcast.KindInbound, EventID: "in-" + text + now.String(), From: h.g.Recipients[i].Number, Text: text}
	rep, ok := h.g.Reply(ev, now)
	if !ok {
		h.t.Fatalf("reply not taken")
	}
	h.apply(rep)
}

func ids(c FollowupClaimed) []string {
	var out []string
	for _, s := range c.Sends {
		out = append(out, s.ID)
	}
	return out
}

func TestFollowupsEveryAfterAtMostMaxAndStopOnAnswer(t *testing.T) {
	h := policyHarness(t, 3, PolicyInput{Followup: &FollowupInput{After: "10m", Max: 2}}, PolicyDefaults{})
	if h.g.FollowupText() != "Reminder: Crew call 7am" {
		t.Fatalf("default text %q", h.g.FollowupText())
	}
	h.sendAll(t0)
	if c := h.followups(t0.Add(9 * time.Minute)); len(c.Sends) != 0 {
		t.Fatalf("follow-up before after: %v", ids(c))
	}
	if got := h.g.NextFollowupAt(h.g.Recipients[0]); !got.Equal(t0.Add(10 * time.Minute)) {
		t.Fatalf("next follow-up %s", got)
	}
	// Recipient 1 answers; recipient 2 replies STOP (not an answer, but
	// opted out); recipient 0 says HELP (not an answer).
	h.reply(1, "yes", t0.Add(time.Minute))
	h.reply(2, "STOP", t0.Add(time.Minute))
	h.reply(0, "HELP", t0.Add(time.Minute))
	c := h.followups(t0.Add(10 * time.Minute))
	if got := strings.Join(ids(c), ","); got != "f0-1" {
		t.Fatalf("follow-ups at 10m: %q", got)
	}
	// While in flight, nothing more for recipient 0.
	if c := h.followups(t0.Add(time.Hour)); len(c.Sends) != 0 {
		t.Fatalf("second follow-up while the first is in flight: %v", ids(c))
	}
	h.followupOutcome(c.Sends[0], nil, t0.Add(10*time.Minute))
	if r := h.g.Recipients[0]; r.FollowupsSent != 1 || r.FollowupMessageID != "m-f0-1" {
		t.Fatalf("after accept: %+v", r.FollowupState)
	}
	c = h.followups(t0.Add(20 * time.Minute))
	if got := strings.Join(ids(c), ","); got != "f0-2" {
		t.Fatalf("follow-ups at 20m: %q", got)
	}
	h.followupOutcome(c.Sends[0], nil, t0.Add(20*time.Minute))
	if c := h.followups(t0.Add(24 * time.Hour)); len(c.Sends) != 0 {
		t.Fatalf("more than max: %v", ids(c))
	}
	if s := h.g.FollowupStopped(h.g.Recipients[0]); s != "all follow-ups sent" {
		t.Fatalf("stop reason %q", s)
	}
	if s := h.g.FollowupStopped(h.g.Recipients[1]); s != "answered" {
		t.Fatalf("stop reason %q", s)
	}
	if s := h.g.FollowupStopped(h.g.Recipients[2]); s != "opted out" {
		t.Fatalf("stop reason %q", s)
	}
	h.replay()
}

func TestFollowupNotSentIsClaimedAgainUnderTheSameNumberUncertainIsSpent(t *testing.T) {
	h := policyHarness(t, 2, PolicyInput{Followup: &FollowupInput{After: "1s", Max: 2, Text: "Answer please"}}, PolicyDefaults{})
	h.sendAll(t0)
	c := h.followups(t0.Add(time.Second))
	if len(c.Sends) != 2 {
		t.Fatalf("want 2 follow-ups, got %v", ids(c))
	}
	// 0: rate limited (certainly not sent): given back, same id later.
	h.followupOutcome(c.Sends[0], &crewcast.SendError{Class: crewcast.ClassNotSent, HTTPStatus: 429, RetryAfter: 5 * time.Second}, t0.Add(time.Second))
	// 1: ambiguous: spent, never resent; the next one is f1-2.
	h.followupOutcome(c.Sends[1], &crewcast.SendError{Class: crewcast.ClassUncertain, HTTPStatus: 503}, t0.Add(time.Second))
	if r := h.g.Recipients[0]; r.Followups != 0 || !h.g.NextFollowupAt(r).Equal(t0.Add(6*time.Second)) {
		t.Fatalf("rate limited: %+v next %s", r.FollowupState, h.g.NextFollowupAt(r))
	}
	c = h.followups(t0.Add(6 * time.Second))
	if got := strings.Join(ids(c), ","); got != "f0-1,f1-2" {
		t.Fatalf("got %q", got)
	}
	// A definite failure stops follow-ups for that person.
	h.followupOutcome(c.Sends[0], &crewcast.SendError{Class: crewcast.ClassRecipient, Code: "40001"}, t0.Add(6*time.Second))
	if s := h.g.FollowupStopped(h.g.Recipients[0]); !strings.HasPrefix(s, "follow-up failed") {
		t.Fatalf("stop %q", s)
	}
	h.replay()
}

func TestFollowupAnsweredInFlightAndRecovery(t *testing.T) {
	h := policyHarness(t, 2, PolicyInput{Followup: &FollowupInput{After: "1m", Max: 3}}, PolicyDefaults{})
	h.sendAll(t0)
	c := h.followups(t0.Add(time.Minute))
	// 0 answers while its follow-up is claimed: the sender does not call.
	h.reply(0, "on my way", t0.Add(time.Minute))
	h.followupOutcome(c.Sends[0], &FollowupAnswered{}, t0.Add(time.Minute))
	if r := h.g.Recipients[0]; r.Followups != 0 || r.FollowupsSent != 0 || h.g.FollowupStopped(r) != "answered" {
		t.Fatalf("answered in flight: %+v", r.FollowupState)
	}
	// 1's process dies mid-call: the follow-up is unconfirmed and spent.
	evs := h.g.RecoverFollowups(t0.Add(2*time.Minute), func(string) bool { return false })
	if len(evs) != 1 {
		t.Fatalf("recover: %v", evs)
	}
	h.apply(evs[0])
	if r := h.g.Recipients[1]; r.FollowupSendID != "" || r.Followups != 1 {
		t.Fatalf("recovered: %+v", r.FollowupState)
	}
	c = h.followups(t0.Add(3 * time.Minute))
	if got := strings.Join(ids(c), ","); got != "f1-2" {
		t.Fatalf("after recovery %q", got)
	}
	// Cancel stops the rest.
	h.followupOutcome(c.Sends[0], nil, t0.Add(3*time.Minute))
	cn, err := h.g.Cancel(t0.Add(3*time.Minute), "op")
	if err == nil {
		h.apply(cn)
	}
	if c := h.followups(t0.Add(time.Hour)); len(c.Sends) != 0 && err == nil {
		t.Fatalf("after cancel: %v", ids(c))
	}
	h.replay()
}

func TestFollowupSkipsSuppressedAndQuorum(t *testing.T) {
	h := policyHarness(t, 3, PolicyInput{Followup: &FollowupInput{After: "1m", Max: 1}}, PolicyDefaults{})
	h.sendAll(t0)
	st, ok := h.g.StopFollowups(map[string]string{h.g.Recipients[2].Number: "manual"}, t0)
	if !ok {
		t.Fatal("no stop")
	}
	h.apply(st)
	c := h.followups(t0.Add(time.Minute))
	if got := strings.Join(ids(c), ","); got != "f0-1,f1-1" {
		t.Fatalf("got %q", got)
	}
	h.g.quorumMet = true
	if h.g.NextFollowupAt(h.g.Recipients[0]) != (time.Time{}) {
		t.Fatal("quorum met but follow-up planned")
	}
	h.g.quorumMet = false
	h.replay()
}

func TestSendAtHoldsAndCancelSendsNothing(t *testing.T) {
	at := t0.Add(2 * time.Hour)
	h := policyHarness(t, 2, PolicyInput{SendAt: at.Format(time.RFC3339)}, PolicyDefaults{})
	if h.status(0) != crewcast.StatusScheduled || !h.g.Recipients[0].HeldUntil.Equal(at) || h.g.SendAt() != at {
		t.Fatalf("not scheduled: %+v", h.g.Recipients[0])
	}
	if _, ok := h.g.Claim(at.Add(-time.Second), 0); ok {
		t.Fatal("claimed before send_at")
	}
	if h.g.Counts()["scheduled"] != 2 || h.g.Status != crewcast.GroupSending {
		t.Fatalf("counts %v status %s", h.g.Counts(), h.g.Status)
	}
	c := h.claim(at, 0)
	if len(c.Sends) != 2 {
		t.Fatalf("claimed %d", len(c.Sends))
	}
	// Another group, canceled before: nothing ever claimed.
	h2 := policyHarness(t, 2, PolicyInput{SendAt: at.Format(time.RFC3339)}, PolicyDefaults{})
	cn, err := h2.g.Cancel(t0, "op")
	if err != nil {
		t.Fatal(err)
	}
	h2.apply(cn)
	if _, ok := h2.g.Claim(at.Add(time.Hour), 0); ok || h2.status(0) != crewcast.StatusCanceled {
		t.Fatalf("canceled group claims or status %s", h2.status(0))
	}
	h.replay()
	h2.replay()
}

func TestPlanPolicyErrors(t *testing.T) {
	req := Request{From: sender, Text: "x", Recipients: []RecipientInput{{Number: numbers(1)[0], Timezone: "Mars/Base"}},
		PolicyInput: PolicyInput{SendAt: "tomorrow", Priority: "urgent", QuietHours: "22-6",
			Followup: &FollowupInput{After: "500ms", Max: 0}, Escalate: &EscalateInput{After: "x"}}}
	c, errs := Plan("g", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	got := map[string]bool{}
	for _, e := range PlanPolicy(&c, req, PolicyDefaults{}, NormalizeNumber) {
		got[e.Field] = true
	}
	for _, f := range []string{"send_at", "priority", "quiet_hours", "followup.after", "followup.max", "escalate.after", "escalate", "recipients[0].timezone"} {
		if !got[f] {
			t.Errorf("no error for %s (got %v)", f, got)
		}
	}
}

func TestEscalationOnceWithNamesAndTally(t *testing.T) {
	h := policyHarness(t, 3, PolicyInput{Escalate: &EscalateInput{After: "30m", To: []string{"+15550109999", "+1 555 010 9999"},
		Text: "No reply: {{no_reply_names}}. {{tally}}"}}, PolicyDefaults{})
	h.sendAll(t0)
	h.reply(1, "yes", t0.Add(time.Minute))
	if _, ok := h.g.Escalate(t0.Add(29 * time.Minute)); ok {
		t.Fatal("escalated early")
	}
	if !h.g.EscalationDue().Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("due %s", h.g.EscalationDue())
	}
	e, ok := h.g.Escalate(t0.Add(30 * time.Minute))
	if !ok || len(e.Sends) != 1 || e.Sends[0].To != "+15550109999" {
		t.Fatalf("escalation %+v", e)
	}
	if e.Text != "No reply: PA, PC. 1 of 3 answered: 1 yes, 0 no" {
		t.Fatalf("text %q", e.Text)
	}
	h.apply(e)
	if _, ok := h.g.Escalate(t0.Add(time.Hour)); ok {
		t.Fatal("escalated twice")
	}
	o := h.g.EscalationOutcome(e.Sends[0].Send(), crewcast.SendResult{MessageID: "me"}, nil, t0.Add(30*time.Minute))
	h.apply(EscalationOutcomes{At: t0.Add(30 * time.Minute), Outcomes: []Outcome{o}})
	if s := h.g.Escalation.Sends[0]; s.Status != EscalationSent || s.MessageID != "me" || !h.g.EscalatedAt().Equal(t0.Add(30*time.Minute)) {
		t.Fatalf("escalation %+v", s)
	}
	h.replay()

	// Everyone answered: decided once, nothing sent.
	h2 := policyHarness(t, 1, PolicyInput{Escalate: &EscalateInput{After: "1m", To: []string{"+15550109999"}}}, PolicyDefaults{})
	h2.sendAll(t0)
	h2.reply(0, "ok", t0)
	e, ok = h2.g.Escalate(t0.Add(time.Minute))
	if !ok || e.Skipped != "everyone answered" || len(e.Sends) != 0 {
		t.Fatalf("%+v", e)
	}
	// Crash during an escalation send: unconfirmed, never resent.
	h3 := policyHarness(t, 1, PolicyInput{Escalate: &EscalateInput{After: "1m", To: []string{"+15550109999"}}}, PolicyDefaults{})
	h3.sendAll(t0)
	e, _ = h3.g.Escalate(t0.Add(time.Minute))
	h3.apply(e)
	for _, ev := range h3.g.RecoverFollowups(t0.Add(2*time.Minute), nil) {
		h3.apply(ev)
	}
	if s := h3.g.Escalation.Sends[0]; s.Status != EscalationUnconfirmed || len(h3.g.EscalationSends()) != 0 {
		t.Fatalf("%+v", s)
	}
	h3.replay()
}

func TestNudgeSendsTheNextFollowupNowWithinMax(t *testing.T) {
	h := policyHarness(t, 3, PolicyInput{Followup: &FollowupInput{After: "1h", Max: 1}}, PolicyDefaults{})
	if _, err := h.g.Nudge(t0, "op"); err == nil {
		t.Fatal("nudge before anyone was texted")
	}
	h.sendAll(t0)
	h.reply(1, "yes", t0.Add(time.Minute))
	n, err := h.g.Nudge(t0.Add(2*time.Minute), "op")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(n)
	c := h.followups(t0.Add(2 * time.Minute))
	if got := strings.Join(ids(c), ","); got != "f0-1,f2-1" {
		t.Fatalf("nudged %q", got)
	}
	for _, s := range c.Sends {
		h.followupOutcome(s, nil, t0.Add(2*time.Minute))
	}
	// max is 1: a second nudge has no one left and sends nothing.
	if _, err := h.g.Nudge(t0.Add(3*time.Minute), "op"); err == nil {
		t.Fatal("second nudge allowed past max")
	}
	if c := h.followups(t0.Add(24 * time.Hour)); len(c.Sends) != 0 {
		t.Fatalf("past max: %v", ids(c))
	}
	h.replay()
	// Without a policy: refused.
	h2 := policyHarness(t, 1, PolicyInput{}, PolicyDefaults{})
	h2.sendAll(t0)
	if _, err := h2.g.Nudge(t0, "op"); err == nil {
		t.Fatal("nudge without policy")
	}
}

// TestPolicyClaimKeysAreValidIdempotencyKeys: follow-up and escalation
// claim keys go to providers as Idempotency-Key, whose syntax (Telnyx's,
// which the simulator enforces) allows letters, digits, '_', ':' and '-'
// only. A dot in "f0.1" made the Telnyx client refuse every follow-up as
// a sender error, pausing the group (found by the board's browser test).
func TestPolicyClaimKeysAreValidIdempotencyKeys(t *testing.T) {
	key := regexp.MustCompile(`^[A-Za-z0-9_:-]{1,255}$`)
	h := policyHarness(t, 12, PolicyInput{Followup: &FollowupInput{After: "1s", Max: 10},
		Escalate: &EscalateInput{After: "1s", To: []string{"+15550109999"}}}, PolicyDefaults{})
	h.sendAll(t0)
	c := h.followups(t0.Add(time.Second))
	e, _ := h.g.Escalate(t0.Add(time.Second))
	ids := []string{}
	for _, s := range c.Sends {
		ids = append(ids, s.ID)
	}
	for _, s := range e.Sends {
		ids = append(ids, s.ID)
	}
	if len(ids) != 13 {
		t.Fatalf("ids %v", ids)
	}
	for _, id := range ids {
		if k := ClaimKey("grp_ddwsoqjsnrxbbq2gxt4xqe56ni", id); !key.MatchString(k) {
			t.Errorf("claim key %q is not a valid idempotency key", k)
		}
	}
}

func TestRetentionRewritesPolicyBodiesAndNumbers(t *testing.T) {
	h := policyHarness(t, 2, PolicyInput{Followup: &FollowupInput{After: "1m", Max: 1, Text: "secret reminder"},
		Escalate: &EscalateInput{After: "1m", To: []string{"+15550109999"}, Text: "secret: {{no_reply_names}}"}}, PolicyDefaults{})
	h.sendAll(t0)
	e, _ := h.g.Escalate(t0.Add(time.Minute))
	h.apply(e)
	hash := func(n string) string { return "h:" + n[len(n)-4:] }
	for _, ev := range h.events {
		typ, data, err := Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		out, err := RewriteEvent(typ, data, true, hash)
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		if strings.Contains(s, "secret") || strings.Contains(s, "+15550109999") || strings.Contains(s, "PA") {
			t.Errorf("%s still holds a body or number: %s", typ, s)
		}
		if _, err := Decode(typ, out); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
}

func TestPlanPolicyKeepsARosterZoneTheRequestDoesNotName(t *testing.T) {
	req := Request{From: sender, To: numbers(2), Text: "x", PolicyInput: PolicyInput{QuietHours: "22:00-06:00"}}
	c, errs := Plan("g", req, Settings{}, nil, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	c.Recipients[1].TZ = "Asia/Tokyo" // as a contact's zone would be
	if errs := PlanPolicy(&c, req, PolicyDefaults{Timezone: "UTC"}, NormalizeNumber); errs != nil {
		t.Fatal(errs)
	}
	if c.Recipients[0].TZ != "" || c.Recipients[1].TZ != "Asia/Tokyo" || c.Policy.Timezone != "UTC" {
		t.Fatalf("zones %q %q default %q", c.Recipients[0].TZ, c.Recipients[1].TZ, c.Policy.Timezone)
	}
}
