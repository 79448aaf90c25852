package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// t14Max and t14After are the follow-up policy of T14's groups: short, so
// that follow-ups fire while the server is being killed.
const (
	t14Max   = 2
	t14After = "1s"
)

// t14Answered is how long after the API shows an answer a follow-up may
// still reach the simulator: its call started before the answer committed
// (the sender's check), plus the loopback request.
const t14AnswerSlack = time.Second

// runT14 kills -9 the server while follow-ups fire (docs/design.md §12): each
// iteration creates a group with {"after":"1s","max":2}, answers for some
// recipients through the simulator, kills the server at a random moment
// of the first three seconds and restarts it. At the end the simulator's
// ledger must hold, per person, at most one first message and at most
// `max` follow-ups (so at most 1 + max, each follow-up at most once: the
// run's duplicate check counts follow-ups under their own text), and no
// follow-up that reached the simulator more than a second after the API
// showed the person's answer.
func runT14(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	srv, err := h.mainServer(ctx)
	if err != nil {
		return res.fail("start server: %v", err)
	}
	iterations := max(h.cfg.iterations, 1)
	var ids []string
	answered := map[string]string{} // number → group
	for i := 0; i < iterations && ctx.Err() == nil; i++ {
		n := h.randInt(4, 10)
		to := h.numbers(n)
		from := fmt.Sprintf("+1555010%04d", h.fromSeq.Add(1))
		text := fmt.Sprintf("chaos t14 #%d seed %d", h.textSeq.Add(1), h.cfg.seed)
		fuText := "Again: " + text
		body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual",
			"followup": map[string]any{"after": t14After, "max": t14Max, "text": fuText}}
		var g groupView
		if _, err := doJSON(ctx, http.MethodPost, srv.api.base+"/v1/groups", srv.api.key, body, &g); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("iteration %d: create group: %v", i, err))
			continue
		}
		h.reg.add(g, to)
		h.reg.addFollowups(g.ID, fuText, to, t14Max)
		srv.groups = append(srv.groups, g.ID)
		ids = append(ids, g.ID)
		// Some recipients answer at random moments (through the
		// simulator, as a handset would), some of them while follow-ups
		// are being claimed.
		for _, num := range to {
			if h.randInt(0, 2) != 0 {
				continue
			}
			answered[num] = g.ID
			go func(num string, d time.Duration) {
				if sleep(ctx, d) != nil {
					return
				}
				_, _ = doJSON(ctx, http.MethodPost, h.simAPI.base+"/sim/inbound", h.simAPI.token, map[string]string{"from": num, "to": from, "text": "on my way"}, nil)
			}(num, h.randDur(200*time.Millisecond, 2500*time.Millisecond))
		}
		if err := sleep(ctx, h.randDur(100*time.Millisecond, 3*time.Second)); err != nil {
			break
		}
		srv.kill9()
		if err := srv.start(ctx); err != nil {
			return res.fail("iteration %d: restart: %v", i, err)
		}
	}
	// Let the last follow-ups fire: every recipient's next_followup_at
	// empty and nothing pending or sending.
	deadline := time.Now().Add(30 * time.Second)
	var views []groupView
	for {
		views = views[:0]
		busy := 0
		for _, id := range ids {
			g, err := srv.api.group(ctx, id)
			if err != nil {
				busy++
				continue
			}
			views = append(views, g)
			for _, r := range g.Recipients {
				if r.NextFollowupAt != nil || r.Status == "pending" || r.Status == "sending" {
					busy++
				}
			}
		}
		if busy == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if busy > 0 {
				res.problems = append(res.problems, fmt.Sprintf("%d recipients still had follow-ups due 30s after the last kill", busy))
			}
			break
		}
		_ = sleep(ctx, 300*time.Millisecond) // polling an external process
	}
	h.quiesce(ctx, 2*time.Second, 20*time.Second)
	ledger, err := h.simAPI.ledger(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	repliedAt := map[string]time.Time{}
	followups, unconfirmed := 0, 0
	for _, g := range views {
		for _, r := range g.Recipients {
			if r.RepliedAt != nil && r.ReplyText != "" {
				repliedAt[r.Number] = *r.RepliedAt
			}
			followups += r.FollowupsSent
			if r.Status == "unconfirmed" {
				unconfirmed++
			}
		}
	}
	perPerson := map[string]int{}
	inGroups := map[string]bool{}
	for _, id := range ids {
		inGroups[id] = true
	}
	byNumber, _, _ := h.reg.snapshot()
	for _, s := range ledger {
		if !inGroups[byNumber[s.To]] || !strings.Contains(s.Text, "chaos t14 ") {
			continue
		}
		perPerson[s.To]++
		if strings.HasPrefix(s.Text, "Again: ") {
			if at, ok := repliedAt[s.To]; ok && s.ReceivedAt.After(at.Add(t14AnswerSlack)) {
				res.problems = append(res.problems, fmt.Sprintf("FOLLOW-UP AFTER ANSWER: %s got a follow-up at %s, answered at %s",
					s.To, s.ReceivedAt.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano)))
			}
		}
	}
	if followups == 0 {
		res.problems = append(res.problems, "no follow-up was sent: the scenario exercised nothing")
	}
	for num, c := range perPerson {
		if c > 1+t14Max {
			res.problems = append(res.problems, fmt.Sprintf("TOO MANY: %s got %d messages, at most %d", num, c, 1+t14Max))
		}
	}
	res.notes = append(res.notes, fmt.Sprintf("%d kills, %d groups, %d people (%d answering), %d follow-ups accepted, %d unconfirmed first sends, %d ledger rows",
		iterations, len(ids), len(perPerson), len(answered), followups, unconfirmed, len(ledgerRowsOf(ledger, "chaos t14 "))))
	return res
}

func ledgerRowsOf(l []ledgerSend, marker string) []ledgerSend {
	var out []ledgerSend
	for _, s := range l {
		if strings.Contains(s.Text, marker) {
			out = append(out, s)
		}
	}
	return out
}
