package group

import (
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// TestLatestAnswerByProviderTime: "the latest answer wins" means the answer
// the person sent last, not the one crewcast happened to apply last. Two
// answers from one person can reach the group actor in the other order
// (two webhooks in flight at once, a provider retry, a second node); the
// earlier-sent one, applied second, must not replace the later one.
func TestLatestAnswerByProviderTime(t *testing.T) {
	os := []Option{{Key: "1", Label: "Coming"}, {Key: "2", Label: "Not coming"}}
	c, _ := Plan("g", Request{From: sender, To: numbers(1), Text: "x", Responses: os}, Settings{}, nil, t0)
	g := &Group{}
	if err := g.Apply(c); err != nil {
		t.Fatal(err)
	}
	reply := func(id, text string, sent, applied time.Time) {
		t.Helper()
		r, ok := g.Reply(crewcast.Event{EventID: id, Kind: crewcast.KindInbound, From: numbers(1)[0], Text: text, OccurredAt: sent}, applied)
		if !ok {
			t.Fatalf("reply %s not matched", id)
		}
		if err := g.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	// "2" was sent at +20 s and applied first; "1" was sent at +10 s and
	// applied after it.
	reply("late", "2", t0.Add(20*time.Second), t0.Add(21*time.Second))
	reply("early", "1", t0.Add(10*time.Second), t0.Add(22*time.Second))
	r := g.Recipients[0]
	if r.Response != "2" || r.LastReply != "2" {
		t.Fatalf("response %q, last reply %q: the earlier-sent answer replaced the later one", r.Response, r.LastReply)
	}
	if r.Replies != 2 {
		t.Errorf("replies %d, want 2 (both still counted)", r.Replies)
	}
	if got := g.Counts()[CountResponsePrefix+"2"]; got != 1 {
		t.Errorf("count for 2 = %d, want 1", got)
	}
	// A genuinely later answer still replaces it.
	reply("later", "1", t0.Add(30*time.Second), t0.Add(31*time.Second))
	if r.Response != "1" {
		t.Errorf("a later-sent answer did not win: response %q", r.Response)
	}

	// The same holds for plain yes/no acknowledgements.
	c2, _ := Plan("g2", Request{From: sender, To: numbers(1), Text: "x"}, Settings{}, nil, t0)
	g = &Group{}
	if err := g.Apply(c2); err != nil {
		t.Fatal(err)
	}
	reply("no", "no", t0.Add(20*time.Second), t0.Add(21*time.Second))
	reply("yes", "yes", t0.Add(10*time.Second), t0.Add(22*time.Second))
	if a := g.Recipients[0].Ack; a != crewcast.AckNo {
		t.Errorf("ack %q, want %q (the later-sent answer)", a, crewcast.AckNo)
	}

	// A keyword sent later does not make an earlier answer stale: STOP
	// never changes the answer, and the answer still counts.
	g = &Group{}
	if err := g.Apply(c); err != nil {
		t.Fatal(err)
	}
	reply("stop", "STOP", t0.Add(20*time.Second), t0.Add(21*time.Second))
	reply("answer", "1", t0.Add(10*time.Second), t0.Add(22*time.Second))
	if r := g.Recipients[0]; r.Response != "1" || r.Status != crewcast.StatusOptedOut {
		t.Errorf("STOP then an earlier answer: response %q status %q, want 1 and opted_out", r.Response, r.Status)
	}

	// Replies without a provider time (zero) keep arrival order.
	g = &Group{}
	if err := g.Apply(c2); err != nil {
		t.Fatal(err)
	}
	reply("a", "no", time.Time{}, t0.Add(21*time.Second))
	reply("b", "yes", time.Time{}, t0.Add(22*time.Second))
	if a := g.Recipients[0].Ack; a != crewcast.AckYes {
		t.Errorf("without provider times: ack %q, want arrival order (%q)", a, crewcast.AckYes)
	}
}
