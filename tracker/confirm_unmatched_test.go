package tracker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crewcast/crewcast/actor"
)

// unmatchedConfirmations reads the unmatched journal's confirmation
// events: the claims and the outcomes, by send id.
func (e *env) unmatchedConfirmations() (claims map[string]unmatchedConfirm, outcomes map[string]unmatchedConfirmOutcome) {
	e.t.Helper()
	claims, outcomes = map[string]unmatchedConfirm{}, map[string]unmatchedConfirmOutcome{}
	if err := e.st.Load(context.Background(), unmatchedKey, 0, func(ev actor.Event) error {
		switch ev.Type {
		case typeUnmatchedConfirmClaimed:
			var c unmatchedConfirm
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				return err
			}
			claims[c.SendID] = c
		case typeUnmatchedConfirmOutcome:
			var o unmatchedConfirmOutcome
			if err := json.Unmarshal(ev.Data, &o); err != nil {
				return err
			}
			outcomes[o.SendID] = o
		}
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return claims, outcomes
}

// awaitUnmatchedOutcomes waits until the unmatched journal holds want
// confirmation claims, each with its outcome.
func (e *env) awaitUnmatchedOutcomes(want int) map[string]unmatchedConfirmOutcome {
	e.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		claims, outs := e.unmatchedConfirmations()
		if len(claims) == want && len(outs) == want {
			return outs
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("unmatched confirmations: %d claims, %d outcomes; want %d each", len(claims), len(outs), want)
		}
	}
}

// TestUnmatchedStopGetsOneConfirmation (issue 32 item 2): a STOP from a
// number that is in no group (it texted the sender number out of the
// blue, or its group is long gone) is honoured like any other, and with
// --opt-out-reply TEXT gets the confirmation exactly once, from the number
// it texted: claimed in the unmatched journal with the reply, its outcome
// journaled after; a webhook delivered again and a restart send nothing
// more. HELP gets --help-reply the same way.
func TestUnmatchedStopGetsOneConfirmation(t *testing.T) {
	mod := func(c *Config) { c.OptOutReply, c.HelpReply = optOutText, helpText }
	e := newEnv(t, mod)
	const stranger, asker = "+15559990001", "+15559990002"
	e.inbound("u-stop-1", stranger, "Stop texting me")
	e.inbound("u-stop-1", stranger, "Stop texting me")
	e.inbound("u-help-1", asker, "HELP")
	outs := e.awaitUnmatchedOutcomes(2)
	for id, o := range outs {
		if o.Status != "sent" || o.MessageID == "" {
			t.Errorf("outcome of %s: %+v, want sent with a message id", id, o)
		}
	}
	sup, err := e.st.Suppressed(context.Background(), []string{stranger})
	if err != nil || len(sup) != 1 {
		t.Fatalf("the stranger's STOP was not honoured: %v %v", sup, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.tr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	e.tr = e.start(mod)
	e.inbound("u-stop-1", stranger, "Stop texting me")
	e.settle()
	if n := confirmations(e.prov, stranger, optOutText); n != 1 {
		t.Fatalf("%d opt-out confirmations to the stranger, want 1 (sends %+v)", n, e.prov.sent())
	}
	if n := confirmations(e.prov, asker, helpText); n != 1 {
		t.Fatalf("%d help replies, want 1", n)
	}
	for _, s := range e.prov.sent() {
		if s.From != from {
			t.Errorf("confirmation from %s, want %s (the number the person texted)", s.From, from)
		}
	}
	if claims, _ := e.unmatchedConfirmations(); len(claims) != 2 {
		t.Fatalf("%d claims after the redelivery, want 2", len(claims))
	}
}
