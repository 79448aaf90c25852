package group

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"
	"pgregory.net/rapid"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/errcode"
)

// TestPropertyNeverSendsTwiceAndStatusesMoveForward drives a group through
// random sequences of claims, provider outcomes, webhooks (duplicated and
// out of order), replies, crashes, checks and operator actions, and checks
// after every step that:
//   - a recipient is claimed only when its previous send certainly did not go
//     out, or an operator explicitly allowed a new attempt;
//   - attempts stay within the budget;
//   - provider reports never move a status backwards (except the documented
//     certainly-not-sent retry, and START undoing STOP);
//   - counts add up and the group status agrees with its recipients;
//   - replaying the journal rebuilds exactly the live state.
func TestPropertyNeverSendsTwiceAndStatusesMoveForward(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 10).Draw(rt, "recipients")
		mode := crewcast.ModeIndividual
		if n <= crewcast.MaxGroupMMS && rapid.Bool().Draw(rt, "group_mms") {
			mode = crewcast.ModeGroupMMS
		}
		nums := numbers(n)
		suppressed := map[string]bool{}
		for _, num := range nums {
			if rapid.IntRange(0, 9).Draw(rt, "suppress") == 0 {
				suppressed[num] = true
			}
		}
		c, errs := Plan("g", Request{From: sender, To: nums, Text: "Crew call 7am", Mode: mode}, Settings{}, suppressed, t0)
		if errs != nil {
			rt.Fatalf("plan: %v", errs)
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
		var inflight []Send
		maySend := make([]bool, n) // model: may recipient i be claimed again?
		for i := range maySend {
			maySend[i] = !suppressed[nums[i]]
		}
		type issued struct {
			idx int
			msg string
		}
		var messages []issued
		var webhooks []crewcast.Event // every webhook ever delivered, for duplicates
		eventSeq := 0
		classes := []crewcast.ErrorClass{crewcast.ClassNotSent, crewcast.ClassRecipient, crewcast.ClassCarrier, crewcast.ClassUncertain}

		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			before := make([]crewcast.Status, n)
			for i, r := range g.Recipients {
				before[i] = r.Status
			}
			var observedClass crewcast.ErrorClass
			providerReport := false
			keywordStart := false

			switch rapid.IntRange(0, 11).Draw(rt, "action") {
			case 0: // time passes
				now = now.Add(time.Duration(rapid.IntRange(0, 120).Draw(rt, "minutes")) * time.Minute)
			case 1, 2: // claim
				cl, ok := g.Claim(now, rapid.IntRange(0, 3).Draw(rt, "limit"))
				if !ok {
					break
				}
				for _, s := range cl.Sends {
					for _, i := range s.Indices {
						if !maySend[i] {
							rt.Fatalf("step %d: recipient %d claimed again (status before %s) without a certain not-sent result or operator decision", step, i, before[i])
						}
						maySend[i] = false
					}
				}
				apply(cl)
				inflight = append(inflight, cl.Sends...)
			case 3, 4: // a provider answers one send
				if len(inflight) == 0 {
					break
				}
				k := rapid.IntRange(0, len(inflight)-1).Draw(rt, "send")
				s := inflight[k]
				inflight = append(inflight[:k], inflight[k+1:]...)
				var err error
				var res crewcast.SendResult
				switch rapid.IntRange(0, 8).Draw(rt, "result") {
				case 0, 1, 2:
					eventSeq++
					res.MessageID = fmt.Sprintf("m%d", eventSeq)
				case 3:
					err = &crewcast.SendError{HTTPStatus: 429, Class: crewcast.ClassNotSent, RetryAfter: time.Second}
				case 4:
					err = &crewcast.SendError{HTTPStatus: 400, Code: "40011", Class: crewcast.ClassNotSent}
				case 5:
					err = &crewcast.SendError{HTTPStatus: 400, Code: "40001", Class: crewcast.ClassRecipient, OptOut: rapid.Bool().Draw(rt, "optout")}
				case 6:
					err = &crewcast.SendError{HTTPStatus: 401, Code: "10009", Class: crewcast.ClassSender}
				case 7:
					err = errors.New("read: connection reset by peer")
				case 8:
					err = &crewcast.SendError{HTTPStatus: 400, Code: "40006", Class: crewcast.ClassCarrier}
				}
				o := g.Outcome(s, res, err, now)
				var stillSending []int
				for _, i := range s.Indices {
					if g.Recipients[i].sending() && g.Recipients[i].SendID == s.ID {
						stillSending = append(stillSending, i)
					}
				}
				apply(Outcomes{At: now, Outcomes: []Outcome{o}})
				for _, i := range stillSending {
					switch o.Result {
					case ResultRetry, ResultRateLimited, ResultHalted:
						maySend[i] = true
					case ResultAccepted:
						messages = append(messages, issued{i, res.MessageID})
					}
				}
			case 5: // a webhook, new or a duplicate of an earlier one
				providerReport = true
				if len(webhooks) > 0 && rapid.Bool().Draw(rt, "duplicate") {
					ev := webhooks[rapid.IntRange(0, len(webhooks)-1).Draw(rt, "which")]
					if o, ok := g.Observe(ev, now); ok {
						observedClass = ev.ErrorClass
						apply(o)
					}
					break
				}
				if len(messages) == 0 {
					break
				}
				m := messages[rapid.IntRange(0, len(messages)-1).Draw(rt, "msg")]
				st := rapid.SampledFrom([]crewcast.Status{crewcast.StatusSent, crewcast.StatusDelivered, crewcast.StatusFailed, crewcast.StatusUnknown}).Draw(rt, "status")
				eventSeq++
				ev := crewcast.Event{Provider: "telnyx", EventID: fmt.Sprintf("e%d", eventSeq), Kind: crewcast.KindStatus,
					MessageID: m.msg, From: sender, To: nums[m.idx], Status: st}
				if st == crewcast.StatusFailed {
					ev.ErrorClass = rapid.SampledFrom(classes).Draw(rt, "class")
				}
				webhooks = append(webhooks, ev)
				if o, ok := g.Observe(ev, now); ok {
					observedClass = ev.ErrorClass
					apply(o)
				}
			case 6: // a reply
				i := rapid.IntRange(0, n-1).Draw(rt, "replier")
				text := rapid.SampledFrom([]string{"YES", "no", "running late", "STOP", "START", "HELP"}).Draw(rt, "text")
				eventSeq++
				keywordStart = ParseKeyword(text) == KeywordStart
				if r, ok := g.Reply(crewcast.Event{EventID: fmt.Sprintf("r%d", eventSeq), Kind: crewcast.KindInbound, From: nums[i], To: sender, Text: text}, now); ok {
					apply(r)
				}
			case 7: // crash: every send in flight is lost
				inflight = nil
				if u, ok := g.RecoverInFlight(now, nil); ok {
					apply(u)
				}
			case 8: // operator resolves an unconfirmed recipient
				i := rapid.IntRange(0, n-1).Draw(rt, "resolve")
				outcome := rapid.SampledFrom([]string{ResolveDelivered, ResolveNotDelivered}).Draw(rt, "outcome")
				if e, err := g.Resolve(nums[i], outcome, now, "op"); err == nil {
					apply(e)
					if g.Recipients[i].Status == crewcast.StatusPending {
						maySend[i] = true
					}
				}
			case 9: // operator retries a failed recipient, or resumes, or cancels
				switch rapid.IntRange(0, 4).Draw(rt, "op") {
				case 0, 1:
					i := rapid.IntRange(0, n-1).Draw(rt, "retry")
					if e, err := g.Retry(nums[i], now, "op"); err == nil {
						apply(e)
						maySend[i] = true
					}
				case 2, 3:
					if e, err := g.Resume(now, "op"); err == nil {
						apply(e)
					}
				case 4:
					if e, err := g.Cancel(now, "op"); err == nil {
						apply(e)
					}
				}
			case 10: // scheduled checks
				providerReport = true
				for _, i := range g.Due(now) {
					st := rapid.SampledFrom([]crewcast.Status{crewcast.StatusSent, crewcast.StatusDelivered, crewcast.StatusFailed}).Draw(rt, "lookup")
					var lerr error
					if rapid.IntRange(0, 4).Draw(rt, "lookup_err") == 0 {
						lerr = errors.New("timeout")
					}
					e := g.CheckResult(i, crewcast.MessageStatus{MessageID: g.Recipients[i].MessageID,
						Recipients: []crewcast.RecipientStatus{{Number: nums[i], Status: st, ErrorClass: crewcast.ClassCarrier}}}, lerr, now)
					apply(e)
				}
			case 11: // an orphan webhook for an unconfirmed recipient
				providerReport = true
				i := rapid.IntRange(0, n-1).Draw(rt, "orphan")
				eventSeq++
				ev := crewcast.Event{Provider: "telnyx", EventID: fmt.Sprintf("o%d", eventSeq), Kind: crewcast.KindStatus,
					MessageID: fmt.Sprintf("orphan%d", eventSeq), From: sender, To: nums[i], Status: crewcast.StatusDelivered,
					Text: "Crew call 7am", OccurredAt: g.Recipients[i].ClaimedAt.Add(time.Second)}
				if o, ok := g.Reconcile(ev, now); ok {
					apply(o)
				}
			}

			// Invariants.
			counts := 0
			hasOpen := false
			for i, r := range g.Recipients {
				if r.Attempts < 0 || r.Attempts > g.Settings.MaxAttempts {
					rt.Fatalf("step %d: recipient %d attempts %d out of [0,%d]", step, i, r.Attempts, g.Settings.MaxAttempts)
				}
				if providerReport && rank(r.Status) < rank(before[i]) {
					certainlyNotSent := r.Status == crewcast.StatusPending && observedClass == crewcast.ClassNotSent
					if !certainlyNotSent {
						rt.Fatalf("step %d: recipient %d moved backwards %s -> %s", step, i, before[i], r.Status)
					}
					maySend[i] = true
				}
				if !providerReport && !keywordStart && before[i] != crewcast.StatusPending && r.Status == crewcast.StatusPending && !maySend[i] {
					rt.Fatalf("step %d: recipient %d became pending from %s without leave to send", step, i, before[i])
				}
				if keywordStart && before[i] == crewcast.StatusOptedOut && r.Status == crewcast.StatusPending {
					// START restored a recipient STOP had taken while pending.
					maySend[i] = true
				}
				switch r.Status {
				case crewcast.StatusPending, crewcast.StatusSending, crewcast.StatusSent:
					hasOpen = true
				}
				counts++
			}
			total := 0
			for _, s := range crewcast.AllStatuses {
				total += g.Counts()[string(s)]
			}
			if total != counts || total != n {
				rt.Fatalf("step %d: counts add to %d, want %d", step, total, n)
			}
			// Counts follows changes incrementally: it must agree with
			// counting every recipient afresh.
			fresh := map[string]int{"replied": 0, "acknowledged": 0, "ack_yes": 0, "ack_no": 0, "no_reply": 0, "selected": 0, "standby": 0,
				"carrier_blocked": 0}
			for _, s := range crewcast.AllStatuses {
				fresh[string(s)] = 0
			}
			for _, r := range g.Recipients {
				fresh[string(r.Status)]++
				if r.Status == crewcast.StatusFailed && errcode.Carrier(r.ErrorCode) != "" {
					fresh["carrier_blocked"]++
				}
				if r.Selected {
					fresh["selected"]++
				}
				if r.Standby {
					fresh["standby"]++
				}
				if r.Replies > 0 {
					fresh["replied"]++
				} else if r.Status != crewcast.StatusOptedOut && r.Status != crewcast.StatusCanceled {
					fresh["no_reply"]++
				}
				if r.Ack != crewcast.AckNone {
					fresh["acknowledged"]++
					fresh["ack_"+string(r.Ack)]++
				}
				if r.AnsweredBy != "" {
					fresh["by_channel."+r.AnsweredBy]++
				}
			}
			if got := g.Counts(); !maps.Equal(got, fresh) {
				rt.Fatalf("step %d: counts %v, counting afresh gives %v", step, got, fresh)
			}
			if rapid.Bool().Draw(rt, "take_dirty") {
				g.TakeDirty() // as each commit does
			}
			if g.Status == crewcast.GroupComplete && hasOpen {
				rt.Fatalf("step %d: complete with open recipients", step)
			}
		}

		// Replay the encoded journal.
		replayed := &Group{}
		for _, e := range journal {
			typ, data, err := Encode(e)
			if err != nil {
				rt.Fatal(err)
			}
			d, err := Decode(typ, data)
			if err != nil {
				rt.Fatal(err)
			}
			if err := replayed.Apply(d); err != nil {
				rt.Fatalf("replay: %v", err)
			}
		}
		a, _ := json.Marshal(g)
		b, _ := json.Marshal(replayed)
		if string(a) != string(b) {
			rt.Fatalf("replay differs:\n%s\n%s", a, b)
		}
	})
}

// TestNormalizeFastPathMatchesLibphonenumber: the E.164 fast path returns
// exactly what the full parser returns.
func TestNormalizeFastPathMatchesLibphonenumber(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := "+1" + rapid.StringMatching(`[2-9][0-9]{9}`).Draw(rt, "national")
		if !isNANPE164(n) {
			rt.Fatalf("%s not recognised", n)
		}
		p, err := phonenumbers.Parse(n, DefaultRegion)
		if err != nil || !phonenumbers.IsPossibleNumber(p) {
			rt.Fatalf("libphonenumber rejects %s: %v", n, err)
		}
		if got := phonenumbers.Format(p, phonenumbers.E164); got != n {
			rt.Fatalf("libphonenumber formats %s as %s", n, got)
		}
	})
	for _, n := range []string{"+10123456789", "+11234567890", "+1555010000", "+155501000011", "+1555O100001", "15550100001", "+44207946000"} {
		if isNANPE164(n) {
			t.Errorf("%s taken by the fast path", n)
		}
	}
}
