package tracker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
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

// fakeMailer records the email steps it is asked to send; block, when
// set, holds each call until closed (the call then fails as a crash would).
type fakeMailer struct {
	mu    sync.Mutex
	steps []MailStep
	block chan struct{}
	began chan struct{} // receives once per call, when set
}

func (m *fakeMailer) MailStep(ctx context.Context, s MailStep) error {
	m.mu.Lock()
	m.steps = append(m.steps, s)
	block, began := m.block, m.began
	m.mu.Unlock()
	if began != nil {
		began <- struct{}{}
	}
	if block != nil {
		<-block
		return errors.New("process gone")
	}
	return nil
}

func (m *fakeMailer) sent() []MailStep {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MailStep{}, m.steps...)
}

// sms (1m) → email (2m) → sms (3m): a person with an email gets the mail
// once, with the group's options; one without is skipped (and says so in
// the journal) and still gets the last text; one who answered gets nothing
// more.
func TestLadderEmailStep(t *testing.T) {
	m := &fakeMailer{}
	e := newEnv(t, func(c *Config) { c.Mailer = m })
	n := nums(3)
	if err := e.st.CreateContact(context.Background(), store.Contact{ID: "c0", Number: n[0], Name: "Ada", Email: "ada@example.org"}); err != nil {
		t.Fatal(err)
	}
	id, _, err := e.tr.Create(context.Background(), group.Request{From: from, To: n, Text: "Crew call 7am",
		Responses: []group.Option{{Key: "1", Label: "Coming"}, {Key: "2", Label: "Cannot"}},
		PolicyInput: group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{
			{After: "1m", Channel: "sms"}, {After: "2m", Channel: "email"}, {After: "3m", Channel: "sms", Text: "Last call"}}}}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(time.Minute)
	e.waitSends("step one", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 3 })
	e.settle()
	e.reply(n[2], "1", "r2")
	e.waitGroup(id, "answer", func(_ store.GroupRow, rows []store.DeliveryRow) bool { return rows[2].Response == "1" })
	e.clk.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.journalText(id), `"result":"skipped"`) || len(m.sent()) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("email step: mails %v, journal %s", m.sent(), e.journalText(id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.settle()
	e.clk.Advance(time.Minute)
	e.waitSends("last call", func(s []crewcast.SendRequest) bool { return countText("Last call")(s) == 2 })
	for range 3 {
		e.clk.Advance(time.Minute)
		e.settle()
	}
	mails := m.sent()
	if len(mails) != 1 || mails[0].To != "ada@example.org" || mails[0].Recipient != 0 || mails[0].SendID != "f0-2" ||
		!strings.HasPrefix(mails[0].Text, "Reminder: Crew call 7am") || len(mails[0].Options) != 2 {
		t.Fatalf("mails %+v", mails)
	}
	if per := e.prov.sentTo(); per[n[0]] != 3 || per[n[1]] != 3 || per[n[2]] != 2 {
		t.Fatalf("texts per person %v", per)
	}
}

// An email step whose call was in flight when the process died is
// unconfirmed and never mailed again; the ladder's next step follows.
func TestLadderEmailCrashNeverResent(t *testing.T) {
	m := &fakeMailer{block: make(chan struct{}), began: make(chan struct{}, 1)}
	defer close(m.block)
	e := newEnv(t, func(c *Config) { c.Mailer = m })
	n := nums(1)
	if err := e.st.CreateContact(context.Background(), store.Contact{ID: "c0", Number: n[0], Email: "ada@example.org"}); err != nil {
		t.Fatal(err)
	}
	id := e.createPolicy(1, group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{
		{After: "1m", Channel: "email"}, {After: "2m", Channel: "sms", Text: "Last call"}}}})
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(time.Minute)
	<-m.began // the mail is being handed over when the process dies

	prov2, m2 := &fakeProvider{}, &fakeMailer{}
	st2, _ := e.secondProcess(Config{Provider: prov2, Mailer: m2})
	e.clk.Advance(time.Minute) // the in-flight wake-up falls due
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(journalOf(t, st2, id), `"result":"uncertain"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the crashed email step was not recovered: %s", journalOf(t, st2, id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.clk.Advance(time.Minute)
	deadline = time.Now().Add(10 * time.Second)
	for len(prov2.sent()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if sent := prov2.sent(); len(sent) != 1 || sent[0].IdempotencyKey != group.ClaimKey(id, "f0-2") || len(m2.sent()) != 0 {
		t.Fatalf("the new process sent %+v and mailed %+v; want only step 2", sent, m2.sent())
	}
}

// journalOf is a group's journal as text.
func journalOf(t *testing.T, st store.Store, id string) string {
	t.Helper()
	var b strings.Builder
	_ = st.Load(context.Background(), id, 0, func(ev actor.Event) error {
		b.WriteString(ev.Type + " " + string(ev.Data) + "\n")
		return nil
	})
	return b.String()
}

func (e *env) journalText(id string) string { return journalOf(e.t, e.st, id) }

// An answer by email link counts like a text reply: the response is
// recorded, later steps stop; the same link posted again changes nothing.
func TestEmailAnswerCountsLikeAReply(t *testing.T) {
	m := &fakeMailer{}
	e := newEnv(t, func(c *Config) { c.Mailer = m })
	n := nums(2)
	id, _, err := e.tr.Create(context.Background(), group.Request{From: from, To: n, Text: "Crew call 7am",
		Responses:   []group.Option{{Key: "1", Label: "Coming"}, {Key: "2", Label: "Cannot"}},
		PolicyInput: group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{{After: "1m", Channel: "sms"}}}}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	for range 2 {
		if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{EmailAnswer(id, "email:tok1", n[0], from, "2", e.clk.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitGroup(id, "answer", func(_ store.GroupRow, rows []store.DeliveryRow) bool { return rows[0].Response == "2" })
	e.clk.Advance(time.Minute)
	e.waitSends("the step to the other", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 1 })
	for range 2 {
		e.clk.Advance(time.Minute)
		e.settle()
	}
	if per := e.prov.sentTo(); per[n[0]] != 1 || per[n[1]] != 2 {
		t.Fatalf("texts per person %v", per)
	}
	if got := strings.Count(e.journalText(id), "reply.received"); got != 1 {
		t.Fatalf("%d replies journaled, want 1:\n%s", got, e.journalText(id))
	}
}
