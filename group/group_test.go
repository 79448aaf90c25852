package group

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const sender = "+15550100000"

func numbers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", 100001+i)
	}
	return out
}

// newGroup builds a group through Plan and Apply, recording its events.
type harness struct {
	t      *testing.T
	g      *Group
	events []Event
}

func newHarness(t *testing.T, mode crewcast.Mode, n int, suppressed map[string]bool) *harness {
	t.Helper()
	c, errs := Plan("g1", Request{From: sender, To: numbers(n), Text: "Crew call 7am", Mode: mode}, Settings{}, suppressed, t0)
	if errs != nil {
		t.Fatalf("plan: %v", errs)
	}
	h := &harness{t: t, g: &Group{}}
	h.apply(c)
	return h
}

func (h *harness) apply(e Event) {
	h.t.Helper()
	if err := h.g.Apply(e); err != nil {
		h.t.Fatalf("apply %s: %v", e.Type(), err)
	}
	h.events = append(h.events, e)
}

func (h *harness) claim(now time.Time, limit int) Claimed {
	h.t.Helper()
	c, ok := h.g.Claim(now, limit)
	if !ok {
		h.t.Fatalf("nothing to claim at %s", now)
	}
	h.apply(c)
	return c
}

func (h *harness) outcome(s Send, res crewcast.SendResult, err error, now time.Time) Outcome {
	h.t.Helper()
	o := h.g.Outcome(s, res, err, now)
	h.apply(Outcomes{At: now, Outcomes: []Outcome{o}})
	return o
}

func (h *harness) status(i int) crewcast.Status { return h.g.Recipients[i].Status }

// replay rebuilds the group from its encoded journal and compares.
func (h *harness) replay() {
	h.t.Helper()
	g := &Group{}
	for _, e := range h.events {
		typ, data, err := Encode(e)
		if err != nil {
			h.t.Fatal(err)
		}
		d, err := Decode(typ, data)
		if err != nil {
			h.t.Fatal(err)
		}
		if err := g.Apply(d); err != nil {
			h.t.Fatalf("replay %s: %v", typ, err)
		}
	}
	a, _ := json.Marshal(h.g)
	b, _ := json.Marshal(g)
	if string(a) != string(b) {
		h.t.Fatalf("replayed state differs:\nlive   %s\nreplay %s", a, b)
	}
}

func TestPlanNormalizesMergesAndSuppresses(t *testing.T) {
	req := Request{
		From: "(555) 010-0000",
		Recipients: []RecipientInput{
			{Number: "+1 555 010 0001", Name: "Ana"},
			{Number: "555-010-0001", Name: "Dup"},
			{Number: "+15550100002", Name: " Bo "},
		},
		Text: "hi",
	}
	c, errs := Plan("g", req, Settings{}, map[string]bool{"+15550100002": true}, t0)
	if errs != nil {
		t.Fatal(errs)
	}
	if c.From != "+15550100000" || c.Mode != crewcast.ModeIndividual {
		t.Fatalf("from/mode: %q %q", c.From, c.Mode)
	}
	want := []RosterEntry{{Number: "+15550100001", Name: "Ana"}, {Number: "+15550100002", Name: "Bo", Suppressed: true}}
	if !reflect.DeepEqual(c.Recipients, want) {
		t.Fatalf("roster %+v, want %+v", c.Recipients, want)
	}
	g := &Group{}
	if err := g.Apply(c); err != nil {
		t.Fatal(err)
	}
	if g.Recipients[1].Status != crewcast.StatusOptedOut || g.Recipients[0].Status != crewcast.StatusPending {
		t.Fatalf("statuses %s %s", g.Recipients[0].Status, g.Recipients[1].Status)
	}
	if c.Settings.MaxAttempts != 3 || c.Settings.Deadline != 24*time.Hour {
		t.Fatalf("defaults not applied: %+v", c.Settings)
	}
}

func TestPlanErrorsNameFields(t *testing.T) {
	cases := []struct {
		name  string
		req   Request
		field string
	}{
		{"no from", Request{To: []string{"+15550100001"}, Text: "x"}, "from"},
		{"bad number", Request{From: sender, To: []string{"+15550100001", "hello"}, Text: "x"}, "to[1]"},
		{"bad recipient number", Request{From: sender, Recipients: []RecipientInput{{Number: "12"}}, Text: "x"}, "recipients[0].number"},
		{"no text", Request{From: sender, To: []string{"+15550100001"}}, "text"},
		{"too long", Request{From: sender, To: []string{"+15550100001"}, Text: strings.Repeat("x", MaxSegments*153+1)}, "text"},
		{"no recipients", Request{From: sender, Text: "x"}, "to"},
		{"bad mode", Request{From: sender, To: []string{"+15550100001"}, Text: "x", Mode: "blast"}, "mode"},
		{"mms too many", Request{From: sender, To: numbers(9), Text: "x", Mode: crewcast.ModeGroupMMS}, "to"},
		{"self", Request{From: sender, To: []string{sender}, Text: "x"}, "to[0]"},
		{"bad media", Request{From: sender, To: []string{"+15550100001"}, Text: "x", MediaURLs: []string{"ftp://x"}}, "media_urls[0]"},
		{"both to and recipients", Request{From: sender, To: []string{"+15550100001"}, Recipients: []RecipientInput{{Number: "+15550100002"}}, Text: "x"}, "to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Plan("g", tc.req, Settings{}, nil, t0)
			for _, e := range errs {
				if e.Field == tc.field {
					return
				}
			}
			t.Fatalf("want an error on %q, got %v", tc.field, errs)
		})
	}
	if _, errs := Plan("g", Request{From: sender, To: numbers(MaxRecipients + 1), Text: "x"}, Settings{}, nil, t0); len(errs) != 1 || errs[0].Field != "to" {
		t.Fatalf("100,001 recipients: %v", errs)
	}
}

func TestHappyPathIndividual(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 3, nil)
	c := h.claim(t0, 0)
	if len(c.Sends) != 3 || h.g.Status != crewcast.GroupSending {
		t.Fatalf("claimed %d sends, status %s", len(c.Sends), h.g.Status)
	}
	if _, ok := h.g.Claim(t0, 0); ok {
		t.Fatal("claimed recipients were claimable again")
	}
	for i, s := range c.Sends {
		h.outcome(s, crewcast.SendResult{MessageID: "m" + string(rune('0'+i))}, nil, t0.Add(time.Second))
	}
	if h.g.Status != crewcast.GroupAwaiting {
		t.Fatalf("status %s, want awaiting", h.g.Status)
	}
	for i := range 3 {
		ev := crewcast.Event{Provider: "telnyx", EventID: "e" + string(rune('0'+i)), Kind: crewcast.KindStatus,
			MessageID: "m" + string(rune('0'+i)), From: sender, To: h.g.Recipients[i].Number, Status: crewcast.StatusDelivered}
		o, ok := h.g.Observe(ev, t0.Add(5*time.Second))
		if !ok {
			t.Fatal("observe: no match")
		}
		h.apply(o)
	}
	if h.g.Status != crewcast.GroupComplete {
		t.Fatalf("status %s, want complete", h.g.Status)
	}
	counts := h.g.Counts()
	if counts["delivered"] != 3 || counts["pending"] != 0 {
		t.Fatalf("counts %v", counts)
	}
	if r := h.g.Recipients[0]; r.DeliveredAt != t0.Add(5*time.Second) || r.SentAt != t0.Add(time.Second) || r.Attempts != 1 {
		t.Fatalf("recipient %+v", r)
	}
	h.replay()
}

func TestClaimLimitAndGroupMMSSingleSend(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 5, nil)
	if c := h.claim(t0, 2); len(c.Sends) != 2 || c.Sends[0].ID != "s1" || c.Sends[1].ID != "s2" {
		t.Fatalf("limit 2: %+v", c)
	}
	if c := h.claim(t0, 0); len(c.Sends) != 3 || c.Sends[0].ID != "s3" {
		t.Fatalf("rest: %+v", c)
	}
	m := newHarness(t, crewcast.ModeGroupMMS, 8, map[string]bool{numbers(8)[7]: true})
	c := m.claim(t0, 1)
	if len(c.Sends) != 1 || len(c.Sends[0].Indices) != 7 {
		t.Fatalf("group MMS claim: %+v", c)
	}
	m.outcome(c.Sends[0], crewcast.SendResult{MessageID: "gm", GroupMessageID: "gg"}, nil, t0)
	for i := range 7 {
		if r := m.g.Recipients[i]; r.Status != crewcast.StatusSent || r.MessageID != "gm" || r.GroupMessageID != "gg" {
			t.Fatalf("recipient %d: %+v", i, r)
		}
	}
	if m.status(7) != crewcast.StatusOptedOut {
		t.Fatal("suppressed recipient was touched")
	}
}

func sendErr(status int, code string, class crewcast.ErrorClass) error {
	return &crewcast.SendError{Provider: "telnyx", HTTPStatus: status, Code: code, Class: class}
}

func TestOutcomeClassification(t *testing.T) {
	cases := []struct {
		name      string
		err       error
		result    string
		status    crewcast.Status
		attempts  int
		retryAt   time.Duration // from t0; -1 = zero
		groupStat crewcast.GroupStatus
	}{
		{"accepted", nil, ResultAccepted, crewcast.StatusSent, 1, -1, crewcast.GroupAwaiting},
		{"429 gives the attempt back", &crewcast.SendError{HTTPStatus: 429, Code: "10011", Class: crewcast.ClassNotSent, RetryAfter: 7 * time.Second}, ResultRateLimited, crewcast.StatusPending, 0, 7 * time.Second, crewcast.GroupSending},
		{"429 without retry-after", sendErr(429, "10011", crewcast.ClassNotSent), ResultRateLimited, crewcast.StatusPending, 0, DefaultRetryAfter, crewcast.GroupSending},
		{"not sent backs off 5m", sendErr(400, "40011", crewcast.ClassNotSent), ResultRetry, crewcast.StatusPending, 1, 5 * time.Minute, crewcast.GroupSending},
		{"recipient permanent", sendErr(400, "40001", crewcast.ClassRecipient), ResultFailed, crewcast.StatusFailed, 1, -1, crewcast.GroupComplete},
		{"opt-out", &crewcast.SendError{HTTPStatus: 403, Code: "40300", Class: crewcast.ClassRecipient, OptOut: true}, ResultFailed, crewcast.StatusOptedOut, 1, -1, crewcast.GroupComplete},
		{"carrier", sendErr(400, "40006", crewcast.ClassCarrier), ResultFailed, crewcast.StatusFailed, 1, -1, crewcast.GroupComplete},
		{"sender pauses", sendErr(401, "10009", crewcast.ClassSender), ResultHalted, crewcast.StatusPending, 0, -1, crewcast.GroupPaused},
		{"5xx uncertain", sendErr(502, "", crewcast.ClassUncertain), ResultUncertain, crewcast.StatusUnconfirmed, 1, -1, crewcast.GroupComplete},
		{"unclassified error uncertain", errors.New("connection reset"), ResultUncertain, crewcast.StatusUnconfirmed, 1, -1, crewcast.GroupComplete},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, crewcast.ModeIndividual, 1, nil)
			c := h.claim(t0, 0)
			o := h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, tc.err, t0)
			r := h.g.Recipients[0]
			if o.Result != tc.result || r.Status != tc.status || r.Attempts != tc.attempts || h.g.Status != tc.groupStat {
				t.Fatalf("result %s status %s attempts %d group %s; want %s %s %d %s", o.Result, r.Status, r.Attempts, h.g.Status, tc.result, tc.status, tc.attempts, tc.groupStat)
			}
			if tc.retryAt >= 0 && r.RetryAt != t0.Add(tc.retryAt) {
				t.Fatalf("retry at %s, want +%s", r.RetryAt, tc.retryAt)
			}
			if r.Claims != 1 {
				t.Fatalf("claims %d", r.Claims)
			}
			if tc.groupStat == crewcast.GroupPaused && h.g.PauseReason == "" {
				t.Fatal("paused without a reason")
			}
			h.replay()
		})
	}
}

func TestRetryBackoffAndBudget(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	now := t0
	notSent := sendErr(400, "40014", crewcast.ClassNotSent)
	waits := []time.Duration{5 * time.Minute, 15 * time.Minute}
	for attempt := 1; attempt <= 3; attempt++ {
		c := h.claim(now, 0)
		if got := h.g.Recipients[0].Attempts; got != attempt {
			t.Fatalf("attempt %d: attempts=%d", attempt, got)
		}
		o := h.outcome(c.Sends[0], crewcast.SendResult{}, notSent, now)
		if attempt < 3 {
			if o.Result != ResultRetry || h.g.Recipients[0].RetryAt != now.Add(waits[attempt-1]) {
				t.Fatalf("attempt %d: %+v retryAt %s", attempt, o, h.g.Recipients[0].RetryAt)
			}
			if _, ok := h.g.Claim(now.Add(waits[attempt-1]-time.Second), 0); ok {
				t.Fatal("claimed before the backoff ended")
			}
			now = now.Add(waits[attempt-1])
		} else if o.Result != ResultFailed || h.status(0) != crewcast.StatusFailed {
			t.Fatalf("third not-sent: %+v status %s", o, h.status(0))
		}
	}
	if _, ok := h.g.Claim(now.Add(time.Hour), 0); ok {
		t.Fatal("claimed beyond the attempt budget")
	}
	if _, err := h.g.Retry(h.g.Recipients[0].Number, now, "op"); !errors.Is(err, ErrState) {
		t.Fatalf("operator retry beyond budget: %v", err)
	}
	h.replay()
}

func TestRateLimitNeverSpendsBudget(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	now := t0
	for range 10 {
		c := h.claim(now, 0)
		h.outcome(c.Sends[0], crewcast.SendResult{}, &crewcast.SendError{HTTPStatus: 429, Class: crewcast.ClassNotSent, RetryAfter: time.Second}, now)
		now = now.Add(time.Second)
	}
	r := h.g.Recipients[0]
	if r.Attempts != 0 || r.Claims != 10 || r.Status != crewcast.StatusPending {
		t.Fatalf("after 10 rate limits: %+v", r)
	}
	c := h.claim(now, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m"}, nil, now)
	if h.status(0) != crewcast.StatusSent || h.g.Recipients[0].Attempts != 1 {
		t.Fatalf("final: %+v", h.g.Recipients[0])
	}
	h.replay()
}

func TestObservedForwardOnlyAndDuplicates(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	num := h.g.Recipients[0].Number
	ev := func(id string, st crewcast.Status, msg string) Observed {
		o, ok := h.g.Observe(crewcast.Event{Provider: "telnyx", EventID: id, Kind: crewcast.KindStatus, MessageID: msg, From: sender, To: num, Status: st}, t0.Add(time.Minute))
		if !ok {
			t.Fatal("no match")
		}
		return o
	}
	h.apply(ev("e1", crewcast.StatusDelivered, "m1"))
	h.apply(ev("e0", crewcast.StatusSent, "m1")) // late "sent"
	if h.status(0) != crewcast.StatusDelivered {
		t.Fatalf("late sent moved status to %s", h.status(0))
	}
	h.apply(ev("e2", crewcast.StatusFailed, "m1")) // contradicting final: first final wins
	if h.status(0) != crewcast.StatusDelivered {
		t.Fatalf("failed overwrote delivered: %s", h.status(0))
	}
	// A duplicate is recognised before it becomes a journal event, and
	// applying it anyway (a replayed journal) changes nothing.
	if _, ok := h.g.Observe(crewcast.Event{Provider: "telnyx", EventID: "e1", Kind: crewcast.KindStatus, MessageID: "m1", From: sender, To: num, Status: crewcast.StatusDelivered}, t0); ok {
		t.Fatal("a duplicate webhook produced a new observation")
	}
	before, _ := json.Marshal(h.g)
	if err := h.g.Apply(Observed{At: t0, EventID: "e1", Source: SourceWebhook, Index: 0, MessageID: "m1", Status: crewcast.StatusFailed}); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(h.g)
	if string(before) != string(after) {
		t.Fatal("duplicate event changed state")
	}
	h.replay()
}

func TestObservedIgnoresStaleMessageAndUnacceptedSend(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	num := h.g.Recipients[0].Number
	c := h.claim(t0, 0)
	// Both observations below must reach Apply: a zero Observed would
	// leave the status alone too, and prove nothing.
	observe := func(ev crewcast.Event) Observed {
		t.Helper()
		o, ok := h.g.Observe(ev, t0)
		if !ok {
			t.Fatalf("event %s not observed", ev.EventID)
		}
		return o
	}
	// A webhook that beats the send result: the actor parks it; even if it
	// reached Apply, it must not move a recipient in "sending".
	h.apply(observe(crewcast.Event{EventID: "early", Kind: crewcast.KindStatus, MessageID: "m1", To: num, Status: crewcast.StatusDelivered}))
	if h.status(0) != crewcast.StatusSending {
		t.Fatalf("status %s", h.status(0))
	}
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	h.apply(observe(crewcast.Event{EventID: "old", Kind: crewcast.KindStatus, MessageID: "m0", To: num, Status: crewcast.StatusFailed}))
	if h.status(0) != crewcast.StatusSent {
		t.Fatalf("stale message id moved status to %s", h.status(0))
	}
}

func TestFinalizedNotSentIsRetriedAndUnknownCanStillDeliver(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 2, nil)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	h.outcome(c.Sends[1], crewcast.SendResult{MessageID: "m2"}, nil, t0)
	n0, n1 := h.g.Recipients[0].Number, h.g.Recipients[1].Number
	o, _ := h.g.Observe(crewcast.Event{EventID: "x", Kind: crewcast.KindStatus, MessageID: "m1", To: n0, Status: crewcast.StatusFailed, ErrorCode: "40014", ErrorClass: crewcast.ClassNotSent}, t0)
	h.apply(o)
	if r := h.g.Recipients[0]; r.Status != crewcast.StatusPending || r.RetryAt != t0.Add(5*time.Minute) {
		t.Fatalf("not-sent finalized: %+v", r)
	}
	o, _ = h.g.Observe(crewcast.Event{EventID: "u", Kind: crewcast.KindStatus, MessageID: "m2", To: n1, Status: crewcast.StatusUnknown, ProviderStatus: "delivery_unconfirmed"}, t0)
	h.apply(o)
	if h.status(1) != crewcast.StatusUnknown {
		t.Fatalf("unknown: %s", h.status(1))
	}
	o, _ = h.g.Observe(crewcast.Event{EventID: "d", Kind: crewcast.KindStatus, MessageID: "m2", To: n1, Status: crewcast.StatusDelivered}, t0)
	h.apply(o)
	if h.status(1) != crewcast.StatusDelivered {
		t.Fatalf("late delivery after unknown: %s", h.status(1))
	}
	h.replay()
}

func TestRecoverInFlightAndReconcile(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 3, nil)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	// Crash: s2 and s3 had no result. s3 is still running in this process.
	u, ok := h.g.RecoverInFlight(t0.Add(time.Minute), func(id string) bool { return id == "s3" })
	if !ok || !reflect.DeepEqual(u.Indices, []int{1}) {
		t.Fatalf("recover: %+v", u)
	}
	h.apply(u)
	if h.status(1) != crewcast.StatusUnconfirmed || h.status(2) != crewcast.StatusSending {
		t.Fatalf("statuses %s %s", h.status(1), h.status(2))
	}
	if _, ok := h.g.Claim(t0.Add(time.Hour), 0); ok {
		t.Fatal("an unconfirmed recipient was claimable")
	}
	// The late result of the recovered send changes nothing.
	h.outcome(Send{ID: "s2", Indices: []int{1}}, crewcast.SendResult{MessageID: "m2"}, nil, t0.Add(2*time.Minute))
	if h.status(1) != crewcast.StatusUnconfirmed {
		t.Fatalf("late outcome moved an unconfirmed recipient to %s", h.status(1))
	}
	orphan := crewcast.Event{Provider: "telnyx", EventID: "o1", Kind: crewcast.KindStatus, MessageID: "m2", From: sender,
		To: h.g.Recipients[1].Number, Status: crewcast.StatusDelivered, Text: "Crew call 7am", OccurredAt: t0.Add(30 * time.Second)}
	for _, bad := range []crewcast.Event{
		func() crewcast.Event { e := orphan; e.Text = "other text"; return e }(),
		func() crewcast.Event { e := orphan; e.From = "+15550109999"; return e }(),
		func() crewcast.Event { e := orphan; e.OccurredAt = t0.Add(2 * time.Hour); return e }(),
		func() crewcast.Event { e := orphan; e.To = h.g.Recipients[0].Number; return e }(), // sent, not unconfirmed
	} {
		if _, ok := h.g.Reconcile(bad, t0); ok {
			t.Fatalf("reconciled a non-matching orphan %+v", bad)
		}
	}
	o, ok := h.g.Reconcile(orphan, t0.Add(3*time.Minute))
	if !ok {
		t.Fatal("matching orphan not reconciled")
	}
	h.apply(o)
	if r := h.g.Recipients[1]; r.Status != crewcast.StatusDelivered || r.MessageID != "m2" || r.Reason == "" {
		t.Fatalf("reconciled: %+v", r)
	}
	h.replay()
}

func TestGroupMMSRecoveryTakesWholeSend(t *testing.T) {
	h := newHarness(t, crewcast.ModeGroupMMS, 4, nil)
	h.claim(t0, 0)
	u, ok := h.g.RecoverInFlight(t0, nil)
	if !ok || len(u.Indices) != 4 {
		t.Fatalf("recover: %+v", u)
	}
	h.apply(u)
	for i := range 4 {
		if h.status(i) != crewcast.StatusUnconfirmed {
			t.Fatalf("recipient %d: %s", i, h.status(i))
		}
	}
}

func TestChecksDoubleThenExpire(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	r := h.g.Recipients[0]
	if r.NextCheckAt != t0.Add(15*time.Minute) {
		t.Fatalf("first check at %s", r.NextCheckAt)
	}
	if len(h.g.Due(t0.Add(14*time.Minute))) != 0 || len(h.g.Due(t0.Add(15*time.Minute))) != 1 {
		t.Fatal("due")
	}
	now := t0.Add(15 * time.Minute)
	still := crewcast.MessageStatus{MessageID: "m1", Recipients: []crewcast.RecipientStatus{{Number: r.Number, Status: crewcast.StatusSent, ProviderStatus: "sent"}}}
	e := h.g.CheckResult(0, still, nil, now)
	ck, ok := e.(Checked)
	if !ok || ck.NextCheckAt != now.Add(30*time.Minute) || ck.ProviderStatus != "sent" {
		t.Fatalf("check: %+v", e)
	}
	h.apply(e)
	e = h.g.CheckResult(0, crewcast.MessageStatus{}, errors.New("lookup timeout"), now.Add(30*time.Minute))
	if ck, ok := e.(Checked); !ok || ck.NextCheckAt != now.Add(90*time.Minute) || ck.Error == "" {
		t.Fatalf("second check: %+v", e)
	}
	h.apply(e)
	e = h.g.CheckResult(0, still, nil, t0.Add(24*time.Hour))
	if _, ok := e.(Expired); !ok {
		t.Fatalf("at the deadline: %+v", e)
	}
	h.apply(e)
	if h.status(0) != crewcast.StatusUnknown || h.g.Status != crewcast.GroupComplete {
		t.Fatalf("after deadline: %s %s", h.status(0), h.g.Status)
	}
	// A lookup that finds delivery moves a sent recipient.
	h2 := newHarness(t, crewcast.ModeIndividual, 1, nil)
	c = h2.claim(t0, 0)
	h2.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	e = h2.g.CheckResult(0, crewcast.MessageStatus{MessageID: "m1", Recipients: []crewcast.RecipientStatus{{Number: h2.g.Recipients[0].Number, Status: crewcast.StatusDelivered}}}, nil, t0.Add(time.Hour))
	h2.apply(e)
	if h2.status(0) != crewcast.StatusDelivered {
		t.Fatalf("lookup delivered: %s", h2.status(0))
	}
	h.replay()
}

func TestRepliesAcksAndKeywords(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 2, nil)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	h.outcome(c.Sends[1], crewcast.SendResult{MessageID: "m2"}, nil, t0)
	n0, n1 := h.g.Recipients[0].Number, h.g.Recipients[1].Number
	reply := func(id, from, text string) {
		r, ok := h.g.Reply(crewcast.Event{EventID: id, Kind: crewcast.KindInbound, From: from, To: sender, Text: text}, t0.Add(time.Minute))
		if !ok {
			t.Fatalf("reply from %s not matched", from)
		}
		h.apply(r)
	}
	reply("r1", n0, "Yes!")
	if r := h.g.Recipients[0]; r.Ack != crewcast.AckYes || r.LastReply != "Yes!" || r.Replies != 1 {
		t.Fatalf("ack: %+v", r)
	}
	if _, ok := h.g.Reply(crewcast.Event{EventID: "r1", Kind: crewcast.KindInbound, From: n0, To: sender, Text: "Yes!"}, t0); ok {
		t.Fatal("a duplicate reply produced a new event")
	}
	if err := h.g.Apply(Replied{At: t0, EventID: "r1", Index: 0, Text: "Yes!", Ack: crewcast.AckYes}); err != nil {
		t.Fatal(err)
	}
	if h.g.Recipients[0].Replies != 1 {
		t.Fatal("duplicate reply counted twice")
	}
	reply("r2", n1, "STOP")
	if h.status(1) != crewcast.StatusOptedOut {
		t.Fatalf("STOP: %s", h.status(1))
	}
	reply("r3", n1, "start")
	if h.status(1) != crewcast.StatusSent {
		t.Fatalf("START: %s", h.status(1))
	}
	counts := h.g.Counts()
	if counts["replied"] != 2 || counts["acknowledged"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	if _, ok := h.g.Reply(crewcast.Event{Kind: crewcast.KindInbound, From: "+15550109999", Text: "?"}, t0); ok {
		t.Fatal("reply from a stranger matched")
	}
	h.replay()
}

func TestParseAckAndKeyword(t *testing.T) {
	acks := map[string]crewcast.Ack{
		"Y": crewcast.AckYes, "yes": crewcast.AckYes, " OK. ": crewcast.AckYes, "1": crewcast.AckYes, "Yes, on my way": crewcast.AckYes,
		"N": crewcast.AckNo, "no": crewcast.AckNo, "2": crewcast.AckNo, "NO - running late": crewcast.AckNo,
		"running late": crewcast.AckNone, "": crewcast.AckNone, "yesterday": crewcast.AckNone, "nothing": crewcast.AckNone,
	}
	for in, want := range acks {
		if got := ParseAck(in); got != want {
			t.Errorf("ParseAck(%q) = %q, want %q", in, got, want)
		}
	}
	kws := map[string]string{"STOP": KeywordStop, "Stop.": KeywordStop, "unsubscribe": KeywordStop, "STOP ALL": KeywordStop,
		"START": KeywordStart, "unstop": KeywordStart, "HELP": KeywordHelp, "stop by later": "", "yes": ""}
	for in, want := range kws {
		if got := ParseKeyword(in); got != want {
			t.Errorf("ParseKeyword(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOperatorActions(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 4, nil)
	c := h.claim(t0, 2)
	h.outcome(c.Sends[0], crewcast.SendResult{}, errors.New("timeout"), t0)                        // 0 unconfirmed
	h.outcome(c.Sends[1], crewcast.SendResult{}, sendErr(400, "40006", crewcast.ClassCarrier), t0) // 1 failed (carrier)
	n := func(i int) string { return h.g.Recipients[i].Number }

	if _, err := h.g.Resolve(n(1), ResolveDelivered, t0, "op"); !errors.Is(err, ErrState) {
		t.Fatalf("resolve a failed recipient: %v", err)
	}
	if _, err := h.g.Resolve("+15550109999", ResolveDelivered, t0, "op"); !errors.Is(err, ErrNoRecipient) {
		t.Fatalf("resolve a stranger: %v", err)
	}
	if _, err := h.g.Resolve(n(0), "maybe", t0, "op"); !errors.Is(err, ErrState) {
		t.Fatalf("bad outcome: %v", err)
	}
	res, err := h.g.Resolve(n(0), ResolveNotDelivered, t0, "op")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(res)
	if h.status(0) != crewcast.StatusPending {
		t.Fatalf("not_delivered: %s", h.status(0))
	}
	rt, err := h.g.Retry(n(1), t0, "op")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(rt)
	if h.status(1) != crewcast.StatusPending {
		t.Fatalf("retry: %s", h.status(1))
	}
	if _, err := h.g.Retry(n(2), t0, "op"); !errors.Is(err, ErrState) {
		t.Fatalf("retry a pending recipient: %v", err)
	}
	c2 := h.claim(t0, 1) // recipient 0 again, attempt 2
	if c2.Sends[0].Indices[0] != 0 || h.g.Recipients[0].Attempts != 2 {
		t.Fatalf("reclaim: %+v attempts %d", c2, h.g.Recipients[0].Attempts)
	}
	cn, err := h.g.Cancel(t0, "op")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(cn)
	if h.g.Status != crewcast.GroupCanceled || h.status(1) != crewcast.StatusCanceled || h.status(3) != crewcast.StatusCanceled || h.status(0) != crewcast.StatusSending {
		t.Fatalf("cancel: group %s, %s %s %s", h.g.Status, h.status(0), h.status(1), h.status(3))
	}
	if _, ok := h.g.Claim(t0, 0); ok {
		t.Fatal("claimed after cancel")
	}
	h.outcome(c2.Sends[0], crewcast.SendResult{MessageID: "m"}, nil, t0) // in-flight finishes
	if h.status(0) != crewcast.StatusSent || h.g.Status != crewcast.GroupCanceled {
		t.Fatalf("in-flight after cancel: %s, group %s", h.status(0), h.g.Status)
	}
	if _, err := h.g.Cancel(t0, "op"); !errors.Is(err, ErrState) {
		t.Fatalf("cancel twice: %v", err)
	}
	h.replay()
}

func TestSenderFailurePausesAndResume(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 3, nil)
	c := h.claim(t0, 1)
	h.outcome(c.Sends[0], crewcast.SendResult{}, sendErr(401, "10009", crewcast.ClassSender), t0)
	if h.g.Status != crewcast.GroupPaused {
		t.Fatalf("status %s", h.g.Status)
	}
	if _, ok := h.g.Claim(t0, 0); ok {
		t.Fatal("claimed while paused")
	}
	rs, err := h.g.Resume(t0, "op")
	if err != nil {
		t.Fatal(err)
	}
	h.apply(rs)
	if h.g.Status != crewcast.GroupSending || h.g.PauseReason != "" {
		t.Fatalf("after resume: %s %q", h.g.Status, h.g.PauseReason)
	}
	if c := h.claim(t0, 0); len(c.Sends) != 3 {
		t.Fatalf("after resume claimed %d", len(c.Sends))
	}
	h.replay()
}

func TestApplyRejectsForeignEvents(t *testing.T) {
	g := &Group{}
	if err := g.Apply(Claimed{At: t0}); err == nil {
		t.Fatal("event before creation accepted")
	}
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	if err := h.g.Apply(Observed{Index: 5}); err == nil {
		t.Fatal("out-of-range index accepted")
	}
	if _, err := Decode("no.such", []byte("{}")); err == nil {
		t.Fatal("unknown type decoded")
	}
}

func TestRewriteEventRedactsAndHashes(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 2, nil)
	c := h.claim(t0, 0)
	h.outcome(c.Sends[0], crewcast.SendResult{MessageID: "m1"}, nil, t0)
	r, _ := h.g.Reply(crewcast.Event{EventID: "r", Kind: crewcast.KindInbound, From: h.g.Recipients[0].Number, Text: "secret reply"}, t0)
	h.apply(r)
	hash := func(n string) string { return "h:" + n[len(n)-2:] }
	replayed := &Group{}
	for _, e := range h.events {
		typ, data, _ := Encode(e)
		out, err := RewriteEvent(typ, data, true, hash)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"Crew call", "secret reply", "+1555"} {
			if strings.Contains(string(out), bad) {
				t.Fatalf("%s still holds %q: %s", typ, bad, out)
			}
		}
		d, err := Decode(typ, out)
		if err != nil {
			t.Fatal(err)
		}
		if err := replayed.Apply(d); err != nil {
			t.Fatalf("rewritten journal does not replay: %v", err)
		}
	}
	if replayed.Recipients[0].Status != crewcast.StatusSent || replayed.Recipients[0].Replies != 1 || replayed.Text != "" {
		t.Fatalf("replayed %+v", replayed.Recipients[0])
	}
}

// TestSuppressedAfterCreation: a suppression added after creation turns
// pending recipients opted_out before they are claimed; one found at the
// provider call gives the attempt back and opts the recipient out; both
// survive replay (issue 12 finding 1).
func TestSuppressedAfterCreation(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 4, nil)
	nums := numbers(4)
	if got := h.g.ClaimableNumbers(t0, 2); !reflect.DeepEqual(got, nums[:2]) {
		t.Fatalf("ClaimableNumbers = %v", got)
	}
	c := h.claim(t0, 1) // recipient 0 is sending
	s, ok := h.g.Suppress(map[string]string{nums[0]: "manual", nums[1]: "stop", "+15559999999": "manual"}, t0)
	if !ok || len(s.Recipients) != 1 || s.Recipients[0] != (SuppressedRecipient{Index: 1, Reason: "stop"}) {
		t.Fatalf("Suppress = %+v, %v (only the pending recipient 1)", s, ok)
	}
	h.apply(s)
	if h.status(1) != crewcast.StatusOptedOut || !strings.Contains(h.g.Recipients[1].Reason, "STOP") {
		t.Fatalf("recipient 1 = %+v", h.g.Recipients[1])
	}
	if got := h.g.ClaimableNumbers(t0, 0); !reflect.DeepEqual(got, nums[2:]) {
		t.Fatalf("ClaimableNumbers after suppression = %v", got)
	}
	o := h.outcome(c.Sends[0], crewcast.SendResult{}, fmt.Errorf("pool: %w", &SuppressedAtSend{Reason: "manual"}), t0)
	if o.Result != ResultSuppressed {
		t.Fatalf("outcome = %+v", o)
	}
	if r := h.g.Recipients[0]; r.Status != crewcast.StatusOptedOut || r.Attempts != 0 || !strings.Contains(r.Reason, "manual") {
		t.Fatalf("recipient 0 = %+v", r)
	}
	if _, ok := h.g.Suppress(map[string]string{nums[0]: "manual"}, t0); ok {
		t.Fatal("an opted-out recipient was suppressed again")
	}
	h.replay()
}

// TestSuppressedAtSendGroupMMS: a group MMS send refused because one
// member's number was suppressed opts out only that member; the others are
// pending again with the attempt given back, and claimed without them.
func TestSuppressedAtSendGroupMMS(t *testing.T) {
	h := newHarness(t, crewcast.ModeGroupMMS, 3, nil)
	nums := numbers(3)
	c := h.claim(t0, 0)
	o := h.outcome(c.Sends[0], crewcast.SendResult{}, &SuppressedAtSend{Reason: "stop", Numbers: []string{nums[1]}}, t0)
	if o.Result != ResultSuppressed || !reflect.DeepEqual(o.Suppressed, []int{1}) {
		t.Fatalf("outcome = %+v", o)
	}
	for i, want := range []crewcast.Status{crewcast.StatusPending, crewcast.StatusOptedOut, crewcast.StatusPending} {
		if r := h.g.Recipients[i]; r.Status != want || r.Attempts != 0 {
			t.Errorf("recipient %d: %s after %d attempts, want %s after 0", i, r.Status, r.Attempts, want)
		}
	}
	c2 := h.claim(t0, 0)
	if len(c2.Sends) != 1 || !reflect.DeepEqual(c2.Sends[0].Indices, []int{0, 2}) {
		t.Fatalf("next claim %+v, want one send to 0 and 2", c2)
	}
	h.replay()
}

// STOP while a send is in flight, the provider then refusing that send
// because the person opted out, then START: the send certainly failed, so
// START restores failed — not the in-flight status, which would leave the
// recipient sending for ever (seen in T15 on PostgreSQL).
func TestStopThenProviderOptOutThenStartRestoresFailed(t *testing.T) {
	h := newHarness(t, crewcast.ModeIndividual, 1, nil)
	c := h.claim(t0, 0)
	n := h.g.Recipients[0].Number
	reply := func(id, text string) {
		r, ok := h.g.Reply(crewcast.Event{EventID: id, Kind: crewcast.KindInbound, From: n, To: sender, Text: text}, t0.Add(time.Minute))
		if !ok {
			t.Fatalf("%s not matched", text)
		}
		h.apply(r)
	}
	reply("r1", "STOP")
	h.outcome(c.Sends[0], crewcast.SendResult{}, &crewcast.SendError{HTTPStatus: 403, Code: "40300", Class: crewcast.ClassRecipient, OptOut: true}, t0)
	if h.status(0) != crewcast.StatusOptedOut {
		t.Fatalf("after the refused send: %s", h.status(0))
	}
	reply("r2", "START")
	if h.status(0) != crewcast.StatusFailed || h.g.Status != crewcast.GroupComplete {
		t.Fatalf("START restored %s (group %s), want failed (complete)", h.status(0), h.g.Status)
	}
	h.replay()
}
