package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
)

// T19 (docs/testing.md): kill -9 while a ladder's calls are placed and
// its mail is sent. Each iteration creates a group whose ladder is the
// text, a call at 1 s and a mail at 4 s, to people with an email on their
// contact, each scripted at the simulator to press 1, let it ring, or be
// busy; some answer by text at random moments; the server is killed at a
// random moment of the first 5 s and restarted. At the end: at most one
// call and one mail per person (a crash between claim and call or mail
// leaves the step unconfirmed, never made again), nobody who answered
// gets a mail more than a second after the API showed the answer, and
// every person scripted to press 1 whose call was answered has the answer
// recorded. Link answers (a dozen people's) are posted twice: one answer
// each.
const (
	t19Voice       = "1s"
	t19Email       = "4s"
	t19AnswerSlack = time.Second
)

func runT19(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	box, err := sim.ServeSMTP("127.0.0.1:0")
	if err != nil {
		return res.fail("smtp: %v", err)
	}
	defer box.Close()
	srv := h.newServer("server-t19", filepath.Join(h.dir, "t19.db"), "--public-url", h.proxyURL, "--telnyx-texml-connection", "1")
	srv.env = []string{"CREWCAST_SMTP_URL=smtp://" + box.Addr(), "CREWCAST_EMAIL_FROM=crewcast@example.org"}
	if err := srv.start(ctx); err != nil {
		return res.fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()
	iterations := max(h.cfg.iterations, 1)
	var ids []string
	script := map[string]string{} // number → how they answer calls
	emailOf := map[string]string{}
	for i := 0; i < iterations && ctx.Err() == nil; i++ {
		to := h.numbers(h.randInt(3, 7))
		from := fmt.Sprintf("+1555010%04d", h.fromSeq.Add(1))
		text := fmt.Sprintf("chaos t19 #%d seed %d", h.textSeq.Add(1), h.cfg.seed)
		for k, num := range to {
			addr := fmt.Sprintf("p%s@example.org", strings.TrimPrefix(num, "+"))
			emailOf[num] = addr
			if _, err := doJSON(ctx, http.MethodPost, srv.api.base+"/v1/contacts", srv.api.key,
				map[string]any{"number": num, "name": fmt.Sprintf("t19 %d", k), "email": addr}, nil); err != nil {
				return res.fail("contact: %v", err)
			}
			script[num] = []string{"1", "none", "busy"}[h.randInt(0, 2)]
			if _, err := doJSON(ctx, http.MethodPost, h.simAPI.base+"/sim/voice/script", h.simAPI.token,
				map[string]string{"to": num, "answer": script[num]}, nil); err != nil {
				return res.fail("voice script: %v", err)
			}
		}
		body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual",
			"responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}},
			"followup":  map[string]any{"steps": []map[string]string{{"after": t19Voice, "channel": "voice"}, {"after": t19Email, "channel": "email"}}}}
		var g groupView
		if _, err := doJSON(ctx, http.MethodPost, srv.api.base+"/v1/groups", srv.api.key, body, &g); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("iteration %d: create group: %v", i, err))
			continue
		}
		h.reg.add(g, to)
		srv.groups = append(srv.groups, g.ID)
		ids = append(ids, g.ID)
		for _, num := range to {
			if h.randInt(0, 4) != 0 {
				continue
			}
			go func(num string, d time.Duration) {
				if sleep(ctx, d) != nil {
					return
				}
				_, _ = doJSON(ctx, http.MethodPost, h.simAPI.base+"/sim/inbound", h.simAPI.token, map[string]string{"from": num, "to": from, "text": "2"}, nil)
			}(num, h.randDur(200*time.Millisecond, 5*time.Second))
		}
		if err := sleep(ctx, h.randDur(100*time.Millisecond, 5*time.Second)); err != nil {
			break
		}
		srv.kill9()
		if err := srv.start(ctx); err != nil {
			return res.fail("iteration %d: restart: %v", i, err)
		}
	}
	// Let every ladder run out.
	deadline := time.Now().Add(40 * time.Second)
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
				res.problems = append(res.problems, fmt.Sprintf("%d recipients still had steps due 40s after the last kill", busy))
			}
			break
		}
		_ = sleep(ctx, 300*time.Millisecond)
	}
	h.quiesce(ctx, 2*time.Second, 20*time.Second)

	// Link answers posted twice: one answer. The first mail's first link
	// of everyone who has a mail and no answer yet.
	mails := map[string][]sim.Mail{}
	for _, m := range box.Mail() {
		for _, a := range m.To {
			mails[a] = append(mails[a], m)
		}
	}
	repliedAt := map[string]time.Time{}
	answered := map[string]string{}
	for _, g := range views {
		for _, r := range g.Recipients {
			if r.RepliedAt != nil {
				repliedAt[r.Number] = *r.RepliedAt
				answered[r.Number] = g.ID
			}
		}
	}
	posted := 0
	postedFor := map[string]bool{}
	for num, addr := range emailOf {
		// A dozen people: /a/ takes 30 requests per client at once.
		if _, ok := answered[num]; ok || len(mails[addr]) == 0 || len(mails[addr][0].Links) == 0 || posted == 12 {
			continue
		}
		for range 2 {
			if code, err := doJSON(ctx, http.MethodPost, mails[addr][0].Links[0], "", nil, nil); err != nil && code != http.StatusOK {
				res.problems = append(res.problems, fmt.Sprintf("post a link: %d %v", code, err))
			}
		}
		posted++
		postedFor[num] = true
	}
	ledger, err := h.simAPI.ledger(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	inGroups := map[string]bool{}
	for _, id := range ids {
		inGroups[id] = true
	}
	byNumber, _, _ := h.reg.snapshot()
	calls := map[string]int{}
	for _, s := range ledger {
		if s.Channel != "voice" || !inGroups[byNumber[s.To]] {
			continue
		}
		calls[s.To]++
		h.reg.addFollowups(byNumber[s.To], s.Text, []string{s.To}, 1) // the run's duplicate check counts calls apart
	}
	placed, mailed := 0, 0
	for num, n := range calls {
		placed += n
		if n > 1 {
			res.problems = append(res.problems, fmt.Sprintf("CALLED TWICE: %s got %d calls", num, n))
		}
	}
	for num, addr := range emailOf {
		ms := mails[addr]
		mailed += len(ms)
		if len(ms) > 1 {
			res.problems = append(res.problems, fmt.Sprintf("MAILED TWICE: %s got %d mails", addr, len(ms)))
		}
		if at, ok := repliedAt[num]; ok {
			for _, m := range ms {
				if m.At.After(at.Add(t19AnswerSlack)) {
					res.problems = append(res.problems, fmt.Sprintf("MAIL AFTER ANSWER: %s mailed at %s, answered at %s", addr,
						m.At.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano)))
				}
			}
		}
	}
	// Replies: at most one per person by link (twice posted), and a person
	// whose call was answered with 1 has an answer.
	time.Sleep(time.Second)
	linkAnswers, digits := 0, 0
	for _, id := range ids {
		g, err := srv.api.group(ctx, id)
		if err != nil {
			continue
		}
		for _, r := range g.Recipients {
			if calls[r.Number] == 1 && script[r.Number] == "1" && r.RepliedAt == nil {
				res.problems = append(res.problems, fmt.Sprintf("PRESS LOST: %s pressed 1 on their call and has no answer", r.Number))
			}
			if script[r.Number] == "1" && calls[r.Number] == 1 {
				digits++
			}
			if _, before := answered[r.Number]; !before && r.RepliedAt != nil {
				linkAnswers++
			}
		}
	}
	// Each link posted twice is one answer.
	for _, id := range ids {
		var rs struct {
			Replies []struct{ Number string } `json:"replies"`
		}
		if _, err := doJSON(ctx, http.MethodGet, srv.api.base+"/v1/replies?limit=500&group_id="+id, srv.api.key, nil, &rs); err != nil {
			res.problems = append(res.problems, "replies: "+err.Error())
			continue
		}
		per := map[string]int{}
		for _, r := range rs.Replies {
			per[r.Number]++
		}
		for num := range postedFor {
			if byNumber[num] == id && per[num] != 1 {
				res.problems = append(res.problems, fmt.Sprintf("LINK ANSWER: %s posted a link twice and has %d replies, want 1", num, per[num]))
			}
		}
	}
	if placed == 0 || mailed == 0 {
		res.problems = append(res.problems, fmt.Sprintf("%d calls and %d mails: the scenario exercised nothing", placed, mailed))
	}
	res.notes = append(res.notes, fmt.Sprintf("%d kills, %d groups, %d people, %d calls placed (%d pressed 1), %d mails, %d link answers posted twice (%d recorded), %d answered before",
		iterations, len(ids), len(emailOf), placed, digits, mailed, posted, linkAnswers, len(answered)))
	return res
}
