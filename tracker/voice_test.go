package tracker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// fakeCaller records the calls it is asked to place; block, when set,
// holds each call until closed (the call then fails as a crash would).
type fakeCaller struct {
	mu    sync.Mutex
	calls []CallStep
	block chan struct{}
	began chan struct{}
}

func (f *fakeCaller) PlaceCall(ctx context.Context, c CallStep) (string, error) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	n := len(f.calls)
	block, began := f.block, f.began
	f.mu.Unlock()
	if began != nil {
		began <- struct{}{}
	}
	if block != nil {
		<-block
		return "", errors.New("process gone")
	}
	return "CA" + strings.Repeat("0", 31) + string(rune('0'+n%10)), nil
}

func (f *fakeCaller) placed() []CallStep {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]CallStep{}, f.calls...)
}

// sms (1m) → voice (2m) → sms (3m): each person not yet answered is
// called once, with the group's options; a digit pressed on the call
// answers (later steps stop); the same gather callback replayed changes
// nothing; a call that ended unanswered is journaled and the ladder goes on.
func TestLadderVoiceStep(t *testing.T) {
	fc := &fakeCaller{}
	e := newEnv(t, func(c *Config) { c.Caller = fc })
	n := nums(3)
	id, _, err := e.tr.Create(context.Background(), group.Request{From: from, To: n, Text: "Crew call 7am",
		Responses: []group.Option{{Key: "Y", Label: "Coming"}, {Key: "N", Label: "Cannot"}},
		PolicyInput: group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{
			{After: "1m", Channel: "sms"}, {After: "2m", Channel: "voice"}, {After: "3m", Channel: "sms", Text: "Last call"}}}}}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "all sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(time.Minute)
	e.waitSends("step one", func(s []crewcast.SendRequest) bool { return countText("Reminder")(s) == 3 })
	e.settle()
	e.reply(n[2], "Y", "r2")
	e.waitGroup(id, "answer", responseOf(n[2], "Y"))
	e.clk.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for len(fc.placed()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("calls %+v", fc.placed())
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.settle()
	calls := fc.placed()
	if len(calls) != 2 || calls[0].From != from || len(calls[0].Options) != 2 || !strings.HasPrefix(calls[0].Text, "Reminder: Crew call 7am") {
		t.Fatalf("calls %+v", calls)
	}
	// n[0] presses 2 (the second option, N); the callback comes twice.
	for range 2 {
		if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{VoiceAnswer(id, "twilio:CA1:gather", n[0], from, "N", e.clk.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{CallEndedEvent(id, "twilio:CA2:no-answer", n[1], from, "no_answer", "", e.clk.Now())}); err != nil {
		t.Fatal(err)
	}
	e.waitGroup(id, "voice answer", responseOf(n[0], "N"))
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(e.journalText(id), `"outcome":"no_answer"`) {
		if time.Now().After(deadline) {
			t.Fatalf("call end not journaled: %s", e.journalText(id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.clk.Advance(time.Minute)
	e.waitSends("last call", func(s []crewcast.SendRequest) bool { return countText("Last call")(s) == 1 })
	for range 3 {
		e.clk.Advance(time.Minute)
		e.settle()
	}
	if got := len(fc.placed()); got != 2 {
		t.Fatalf("%d calls placed, want 2", got)
	}
	if per := e.prov.sentTo(); per[n[0]] != 2 || per[n[1]] != 3 || per[n[2]] != 2 {
		t.Fatalf("texts per person %v", per)
	}
	// The history says which channel each attempt and answer took.
	j := e.journalText(id)
	for _, want := range []string{`{"send_id":"f0-2","i":0,"n":2,"channel":"voice"}`, `"message_id":"call:CA`, `"channel":"voice"}]}`,
		`"response":"N","channel":"voice"`} {
		if !strings.Contains(j, want) {
			t.Errorf("journal lacks %s:\n%s", want, j)
		}
	}
	if got := strings.Count(e.journalText(id), "reply.received"); got != 2 {
		t.Fatalf("%d replies journaled, want 2 (the text and one digit):\n%s", got, e.journalText(id))
	}
}

// A voice step whose call was being placed when the process died is
// unconfirmed and never placed again; the ladder's next step follows.
func TestLadderVoiceCrashNeverReplaced(t *testing.T) {
	fc := &fakeCaller{block: make(chan struct{}), began: make(chan struct{}, 1)}
	defer close(fc.block)
	e := newEnv(t, func(c *Config) { c.Caller = fc })
	id := e.createPolicy(1, group.PolicyInput{Followup: &group.FollowupInput{Steps: []group.StepInput{
		{After: "1m", Channel: "voice"}, {After: "2m", Channel: "sms", Text: "Last call"}}}})
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	e.clk.Advance(time.Minute)
	<-fc.began // the call is being placed when the process dies

	prov2, fc2 := &fakeProvider{}, &fakeCaller{}
	st2, _ := e.secondProcess(Config{Provider: prov2, Caller: fc2})
	e.clk.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(journalOf(t, st2, id), `"result":"uncertain"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the crashed call was not recovered: %s", journalOf(t, st2, id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.clk.Advance(time.Minute)
	deadline = time.Now().Add(10 * time.Second)
	for len(prov2.sent()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if sent := prov2.sent(); len(sent) != 1 || sent[0].IdempotencyKey != group.ClaimKey(id, "f0-2") || len(fc2.placed()) != 0 {
		t.Fatalf("the new process sent %+v and placed %+v; want only step 2", sent, fc2.placed())
	}
}

// responseOf waits for number's recorded response to be want.
func responseOf(number, want string) func(store.GroupRow, []store.DeliveryRow) bool {
	return func(_ store.GroupRow, rows []store.DeliveryRow) bool {
		for _, r := range rows {
			if r.Number == number {
				return r.Response == want
			}
		}
		return false
	}
}
