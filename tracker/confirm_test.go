package tracker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
)

const optOutText, helpText = "You are unsubscribed from Crew call. Reply START to resume.", "Crew call alerts. Reply STOP to end."

// confirmations counts the provider sends of text to number.
func confirmations(p *fakeProvider, number, text string) int {
	n := 0
	for _, s := range p.sent() {
		if s.Text == text && len(s.To) == 1 && s.To[0] == number {
			n++
		}
	}
	return n
}

func (e *env) inbound(evID, fromNum, text string) {
	e.t.Helper()
	if _, err := e.tr.Ingest(context.Background(), []crewcast.Event{{Provider: "fake", EventID: evID, Kind: crewcast.KindInbound,
		From: fromNum, To: from, Text: text}}); err != nil {
		e.t.Fatal(err)
	}
}

// awaitConfirmations waits until group id records want confirmations with
// a final status and returns them.
func (e *env) awaitConfirmations(id string, want int) []group.Confirmation {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		e.barrier(id)
		g, _, err := LoadGroup(context.Background(), e.st, id)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(g.Confirmations) == want && len(g.ConfirmSends()) == 0 {
			return g.Confirmations
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("confirmations %+v, want %d settled", g.Confirmations, want)
		}
	}
}

// TestOptOutReplySentOnceAcrossDuplicatesAndRestart: with --opt-out-reply
// TEXT, a STOP gets exactly one confirmation from the number the person
// texted, although the webhook is delivered twice, and again after a
// restart; the confirmation is on the group's record.
func TestOptOutReplySentOnceAcrossDuplicatesAndRestart(t *testing.T) {
	mod := func(c *Config) { c.OptOutReply = optOutText }
	e := newEnv(t, mod)
	id := e.create(2, crewcast.ModeIndividual)
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	who := nums(2)[0]
	e.inbound("stop-1", who, "Stop texting me please")
	e.inbound("stop-1", who, "Stop texting me please")
	cs := e.awaitConfirmations(id, 1)
	if c := cs[0]; c.Status != group.EscalationSent || c.From != from || c.Keyword != group.KeywordStop || c.Index != 0 || c.MessageID == "" {
		t.Fatalf("confirmation %+v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	e.tr = e.start(mod)
	e.inbound("stop-1", who, "Stop texting me please")
	e.awaitConfirmations(id, 1)
	if n := confirmations(e.prov, who, optOutText); n != 1 {
		t.Fatalf("%d opt-out confirmations sent, want 1 (sends %+v)", n, e.prov.sent())
	}
	for _, s := range e.prov.sent() {
		if s.Text == optOutText && s.From != from {
			t.Errorf("confirmation from %s, want %s (the number the person texted)", s.From, from)
		}
	}
}

// TestHelpReplyAndOffSendNothingElse: HELP gets --help-reply; with
// --opt-out-reply off (or provider) a STOP gets nothing from crewcast, and
// START never does.
func TestHelpReplyAndOffSendNothingElse(t *testing.T) {
	for _, mode := range []string{"off", "provider", ""} {
		t.Run("opt-out-reply="+mode, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.OptOutReply, c.HelpReply = mode, helpText })
			id := e.create(3, crewcast.ModeIndividual)
			e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
			n := nums(3)
			e.inbound("help-1", n[0], "HELP")
			e.inbound("stop-1", n[1], "STOP")
			e.inbound("start-1", n[2], "START")
			cs := e.awaitConfirmations(id, 1)
			if cs[0].Keyword != group.KeywordHelp || cs[0].Text != helpText || cs[0].Status != group.EscalationSent {
				t.Fatalf("confirmation %+v", cs[0])
			}
			if got := confirmations(e.prov, n[0], helpText); got != 1 {
				t.Fatalf("%d help replies", got)
			}
			if got := len(e.prov.sent()); got != 4 {
				t.Fatalf("%d sends, want 3 first messages and the help reply: %+v", got, e.prov.sent())
			}
		})
	}
}

// TestConfirmationCrashIsUnconfirmedNeverResent: a process that dies
// between the confirmation's claim and the provider's answer leaves it
// unconfirmed to the next one, which does not send it again.
func TestConfirmationCrashIsUnconfirmedNeverResent(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	mod := func(c *Config) { c.OptOutReply = optOutText }
	e := newEnv(t, mod)
	id := e.create(1, crewcast.ModeIndividual)
	e.waitGroup(id, "sent", allStatus(crewcast.StatusSent))
	e.prov.mu.Lock()
	e.prov.sendFn = func(req crewcast.SendRequest, id string) (crewcast.SendResult, error) {
		<-block
		return crewcast.SendResult{}, errors.New("process gone")
	}
	e.prov.mu.Unlock()
	e.inbound("stop-1", nums(1)[0], "STOP")
	for deadline := time.Now().Add(10 * time.Second); confirmations(e.prov, nums(1)[0], optOutText) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the confirmation never reached the provider")
		}
	}
	// A second process on the same database; the first is stuck mid-call.
	st2 := openStore(t, e.path, e.clk.Now)
	defer st2.Close()
	prov2 := &fakeProvider{}
	tr2, err := New(Config{Store: st2, Provider: prov2, Clock: e.clk, SweepInterval: time.Hour, OptOutReply: optOutText})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tr2.Stop(ctx)
	}()
	// The webhook again (a provider retry) loads the group there.
	if _, err := tr2.Ingest(context.Background(), []crewcast.Event{{Provider: "fake", EventID: "stop-1", Kind: crewcast.KindInbound,
		From: nums(1)[0], To: from, Text: "STOP"}}); err != nil {
		t.Fatal(err)
	}
	e2 := &env{t: t, st: st2, prov: prov2, tr: tr2, clk: e.clk}
	cs := e2.awaitConfirmations(id, 1)
	if cs[0].Status != group.EscalationUnconfirmed {
		t.Fatalf("confirmation %+v, want unconfirmed", cs[0])
	}
	if len(prov2.sent()) != 0 {
		t.Fatalf("the recovering process sent %+v", prov2.sent())
	}
}
