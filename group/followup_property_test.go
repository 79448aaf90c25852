package group

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
)

// TestPropertyFollowupsNeverAfterAnswerNeverTwiceNeverOverMax drives a
// group with a follow-up policy through random interleavings of main
// sends, receipts, answers, STOP/START/HELP, manual suppressions, cancels,
// quorum, crashes, reminder firings (claims at random times) and provider
// answers to follow-ups, with an injected clock. After every step:
//   - no follow-up is claimed for a recipient whose answer was committed,
//     who is opted out or suppressed, in a canceled group or after quorum;
//   - a follow-up (recipient, n) is claimed again only if its earlier claim
//     certainly did not reach the provider;
//   - follow-ups that may have gone out never exceed max per recipient;
//   - a follow-up whose recipient answered while it was in flight is not
//     sent (the sender's check, modelled here, says so) and does not count;
//   - replaying the journal rebuilds the live state.
func TestPropertyFollowupsNeverAfterAnswerNeverTwiceNeverOverMax(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "recipients")
		max := rapid.IntRange(1, 3).Draw(rt, "max")
		in := PolicyInput{Followup: &FollowupInput{After: "1m", Max: max}}
		d := PolicyDefaults{}
		if rapid.Bool().Draw(rt, "quiet") {
			d.Quiet = &QuietHours{Start: 12*60 + 5, End: 12*60 + 20} // 12:05-12:20 UTC, t0 is 12:00
		}
		if rapid.Bool().Draw(rt, "escalate") {
			in.Escalate = &EscalateInput{After: "3m", To: []string{"+15550109999"}}
		}
		req := Request{From: sender, To: numbers(n), Text: "Crew call", PolicyInput: in}
		c, errs := Plan("g", req, Settings{}, nil, t0)
		if errs != nil {
			rt.Fatal(errs)
		}
		if errs := PlanPolicy(&c, req, d, NormalizeNumber); errs != nil {
			rt.Fatal(errs)
		}
		g := &Group{}
		var journal []Event
		apply := func(e Event) {
			if err := g.Apply(e); err != nil {
				rt.Fatalf("apply %s: %v", e.Type(), err)
			}
			journal = append(journal, e)
		}
		apply(c)

		now := t0
		var mainInFlight []Send
		var fuInFlight []FollowupSend
		maybeSent := map[string]bool{} // follow-up ids that may have reached the provider
		counted := make([]int, n)      // follow-ups per recipient that may have gone out
		suppressed := make([]bool, n)  // on the suppression list (manual, permanent here)
		answeredAt := make([]bool, n)  // an answer was committed
		quorum := false
		canceled := false
		msg := 0

		steps := rapid.IntRange(1, 80).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			switch rapid.IntRange(0, 10).Draw(rt, "action") {
			case 0: // time passes
				now = now.Add(time.Duration(rapid.IntRange(0, 150).Draw(rt, "seconds")) * time.Second)
			case 1: // main claim (a retry or kick)
				if h, ok := g.Hold(now); ok {
					apply(h)
				}
				if cl, ok := g.Claim(now, 0); ok {
					apply(cl)
					mainInFlight = append(mainInFlight, cl.Sends...)
				}
			case 2: // main outcome
				if len(mainInFlight) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(mainInFlight)-1).Draw(rt, "main")
				s := mainInFlight[k]
				mainInFlight = append(mainInFlight[:k], mainInFlight[k+1:]...)
				var err error
				switch rapid.IntRange(0, 3).Draw(rt, "main_result") {
				case 1:
					err = &crewcast.SendError{Class: crewcast.ClassNotSent, HTTPStatus: 429}
				case 2:
					err = &crewcast.SendError{Class: crewcast.ClassRecipient, Code: "40001"}
				case 3:
					err = &crewcast.SendError{Class: crewcast.ClassUncertain, HTTPStatus: 503}
				}
				msg++
				apply(Outcomes{At: now, Outcomes: []Outcome{g.Outcome(s, crewcast.SendResult{MessageID: fmt.Sprint("m", msg)}, err, now)}})
			case 3: // a reminder fires: claim follow-ups
				limit := rapid.IntRange(0, 3).Draw(rt, "limit")
				cl, ok := g.ClaimFollowups(now, limit)
				if !ok {
					continue
				}
				for _, s := range cl.Sends {
					r := g.Recipients[s.Index]
					switch {
					case answeredAt[s.Index]:
						rt.Fatalf("follow-up %s after an answer", s.ID)
					case r.Status == crewcast.StatusOptedOut || suppressed[s.Index]:
						rt.Fatalf("follow-up %s to an opted-out person", s.ID)
					case canceled || quorum:
						rt.Fatalf("follow-up %s in a canceled group or after quorum", s.ID)
					case maybeSent[s.ID]:
						rt.Fatalf("follow-up %s claimed twice", s.ID)
					case s.N > max || counted[s.Index] >= max:
						rt.Fatalf("follow-up %s over max %d", s.ID, max)
					case s.ID != followupSendID(s.Index, s.N):
						rt.Fatalf("claim key %s does not name follow-up %d", s.ID, s.N)
					}
					if g.quietAt(r, now) {
						rt.Fatalf("follow-up %s in quiet hours", s.ID)
					}
				}
				apply(cl)
				fuInFlight = append(fuInFlight, cl.Sends...)
			case 4: // the sender answers a follow-up
				if len(fuInFlight) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(fuInFlight)-1).Draw(rt, "fu")
				s := fuInFlight[k]
				fuInFlight = append(fuInFlight[:k], fuInFlight[k+1:]...)
				var err error
				sent := true
				switch {
				case Answered(g.Recipients[s.Index]):
					// The sender's last check (tracker) sees the answer.
					err, sent = &FollowupAnswered{}, false
				case suppressed[s.Index]:
					err, sent = &SuppressedAtSend{Reason: "manual"}, false
				default:
					switch rapid.IntRange(0, 4).Draw(rt, "fu_result") {
					case 1:
						err, sent = &crewcast.SendError{Class: crewcast.ClassNotSent, HTTPStatus: 429, RetryAfter: time.Second}, false
					case 2:
						err = &crewcast.SendError{Class: crewcast.ClassCarrier, Code: "30003"}
						sent = false // definite failure: did not reach them, but spent
					case 3:
						err = &crewcast.SendError{Class: crewcast.ClassUncertain, HTTPStatus: 503}
					case 4:
						err, sent = &crewcast.SendError{Class: crewcast.ClassNotSent, HTTPStatus: 400}, false
					}
				}
				o := g.FollowupOutcome(s.Send(), crewcast.SendResult{MessageID: "f" + s.ID}, err, now)
				apply(FollowupOutcomes{At: now, Outcomes: []Outcome{o}})
				if sent {
					maybeSent[s.ID] = true
					counted[s.Index]++
				}
				if o.Result == ResultFailed {
					maybeSent[s.ID] = true // a definite failure is never claimed again either
				}
			case 5: // a reply
				i := rapid.IntRange(0, n-1).Draw(rt, "who")
				text := rapid.SampledFrom([]string{"yes", "running late", "STOP", "START", "HELP"}).Draw(rt, "text")
				msg++
				rep, ok := g.Reply(crewcast.Event{Kind: crewcast.KindInbound, EventID: fmt.Sprint("in", msg), From: g.Recipients[i].Number, Text: text}, now)
				if ok {
					apply(rep)
					if rep.Keyword == "" {
						answeredAt[i] = true
					}
				}
			case 6: // a receipt for the main message
				i := rapid.IntRange(0, n-1).Draw(rt, "who")
				r := g.Recipients[i]
				msg++
				if o, ok := g.Observe(crewcast.Event{Kind: crewcast.KindStatus, EventID: fmt.Sprint("w", msg), To: r.Number,
					MessageID: r.MessageID, Status: crewcast.StatusDelivered}, now); ok {
					apply(o)
				}
			case 7: // an operator suppression
				i := rapid.IntRange(0, n-1).Draw(rt, "who")
				suppressed[i] = true
				if st, ok := g.StopFollowups(map[string]string{g.Recipients[i].Number: "manual"}, now); ok {
					apply(st)
				}
				if sp, ok := g.Suppress(map[string]string{g.Recipients[i].Number: "manual"}, now); ok {
					apply(sp)
				}
			case 8: // an operator nudges, or cancels
				if nd, err := g.Nudge(now, "op"); err == nil && rapid.Bool().Draw(rt, "nudge") {
					apply(nd)
				}
				if rapid.IntRange(0, 3).Draw(rt, "cancel") == 0 {
					if cn, err := g.Cancel(now, "op"); err == nil {
						apply(cn)
						canceled = true
					}
				}
			case 9: // crash: every in-flight send is lost
				if u, ok := g.RecoverInFlight(now, nil); ok {
					apply(u)
				}
				for _, e := range g.RecoverFollowups(now, nil) {
					apply(e)
				}
				for _, s := range fuInFlight {
					maybeSent[s.ID] = true
					counted[s.Index]++
				}
				mainInFlight, fuInFlight = nil, nil
			case 10: // quorum (or escalation due)
				if rapid.IntRange(0, 5).Draw(rt, "quorum") == 0 {
					g.quorumMet, quorum = true, true
				}
				if e, ok := g.Escalate(now); ok {
					apply(e)
				}
			}
			for i, r := range g.Recipients {
				if r.Followups > max {
					rt.Fatalf("recipient %d: %d follow-ups over max %d", i, r.Followups, max)
				}
				if counted[i] > max {
					rt.Fatalf("recipient %d: %d follow-ups may have gone out, max %d", i, counted[i], max)
				}
			}
		}
		replayed := &Group{}
		for _, e := range journal {
			typ, data, err := Encode(e)
			if err != nil {
				rt.Fatal(err)
			}
			ev, err := Decode(typ, data)
			if err != nil {
				rt.Fatal(err)
			}
			if err := replayed.Apply(ev); err != nil {
				rt.Fatalf("replay %s: %v", typ, err)
			}
		}
		a, b := mustJSON(g), mustJSON(replayed)
		if a != b {
			rt.Fatalf("replay differs:\n%s\n%s", a, b)
		}
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
