package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// t18View is what T18 reads of a callout.
type t18View struct {
	ID     string         `json:"id"`
	Status string         `json:"status"`
	Counts map[string]any `json:"counts"`
	Quorum struct {
		Count int     `json:"count"`
		MetAt *string `json:"met_at"`
	} `json:"quorum"`
	Waves struct {
		Sent   int     `json:"sent"`
		NextAt *string `json:"next_at"`
	} `json:"waves"`
	Recipients []struct {
		Number   string `json:"number"`
		Status   string `json:"status"`
		Response string `json:"response"`
		Wave     int    `json:"wave"`
		Selected bool   `json:"selected"`
		Standby  bool   `json:"standby"`
	} `json:"recipients"`
}

// t18Group is one callout of T18 and its auto-reply texts.
type t18Group struct {
	id, confirmed, filled string
	need                  int
}

// runT18 kills -9 the server while callouts fill (docs/architecture.md,
// "Waves and exact quotas"): each iteration creates a callout of 8–12
// people needing 2–3, in waves of 3 every second, with a confirmed_text
// and a filled_text of its own; people of the first two waves answer
// through the simulator, several YES in the same instant; the server is
// killed at a random moment of the first three seconds and restarted.
// At the end, per callout: no more than `count` selected, exactly `count`
// when at least that many said yes; nobody who is not_needed got any
// message; and the run's duplicate check holds each person to one first
// message, one confirmed_text and one filled_text.
func runT18(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	srv, err := h.mainServer(ctx)
	if err != nil {
		return res.fail("start server: %v", err)
	}
	var groups []t18Group
	var answers sync.WaitGroup
	for i := 0; i < max(h.cfg.iterations, 1) && ctx.Err() == nil; i++ {
		g, to, from, err := t18Create(ctx, h, srv.api)
		if err != nil {
			res.problems = append(res.problems, fmt.Sprintf("iteration %d: create callout: %v", i, err))
			continue
		}
		srv.groups = append(srv.groups, g.id)
		groups = append(groups, g)
		t18Answer(ctx, h, &answers, to[:min(6, len(to))], from)
		if err := sleep(ctx, h.randDur(100*time.Millisecond, 3*time.Second)); err != nil {
			break
		}
		srv.kill9()
		if err := srv.start(ctx); err != nil {
			return res.fail("iteration %d: restart: %v", i, err)
		}
	}
	answers.Wait()
	views := t18Settle(ctx, srv.api, groups, &res)
	h.quiesce(ctx, 2*time.Second, 20*time.Second)
	ledger, err := h.simAPI.ledger(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	got := map[string]int{}
	for _, s := range ledger {
		if strings.Contains(s.Text, "chaos t18 ") {
			got[s.To]++
		}
	}
	selected, standby, notNeeded := 0, 0, 0
	for k, v := range views {
		yes, sel := 0, 0
		for _, r := range v.Recipients {
			if r.Response == "1" && r.Status != "opted_out" {
				yes++
			}
			if r.Selected {
				sel++
			}
			if r.Standby {
				standby++
			}
			if r.Status == "not_needed" {
				notNeeded++
				if got[r.Number] > 0 {
					res.problems = append(res.problems, fmt.Sprintf("NOT NEEDED BUT TEXTED: %s of %s got %d messages", r.Number, v.ID, got[r.Number]))
				}
			}
		}
		selected += sel
		need := groups[k].need
		if sel > need || (yes >= need && sel != need) {
			res.problems = append(res.problems, fmt.Sprintf("SELECTION: %s selected %d of %d needed (%d said yes)", v.ID, sel, need, yes))
		}
	}
	res.notes = append(res.notes, fmt.Sprintf("%d callouts, %d selected, %d standby, %d not needed, %d ledger rows",
		len(views), selected, standby, notNeeded, len(ledgerRowsOf(ledger, "chaos t18 "))))
	if selected == 0 {
		res.problems = append(res.problems, "nobody was selected: the scenario exercised nothing")
	}
	return res
}

// t18Create posts one callout and registers its texts for the duplicate
// check.
func t18Create(ctx context.Context, h *harness, a api) (t18Group, []string, string, error) {
	n, need := h.randInt(8, 12), h.randInt(2, 3)
	to := h.numbers(n)
	from := fmt.Sprintf("+1555010%04d", h.fromSeq.Add(1))
	seq := h.textSeq.Add(1)
	text := fmt.Sprintf("chaos t18 #%d seed %d", seq, h.cfg.seed)
	g := t18Group{confirmed: "On: " + text, filled: "Full: " + text, need: need}
	body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual",
		"responses":      []map[string]string{{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "No", "ack": "no"}},
		"quorum":         map[string]any{"response": "1", "count": need},
		"waves":          map[string]any{"size": 3, "every": "1s"},
		"confirmed_text": g.confirmed, "filled_text": g.filled}
	var v groupView
	if _, err := doJSON(ctx, http.MethodPost, a.base+"/v1/groups", a.key, body, &v); err != nil {
		return g, nil, "", err
	}
	g.id = v.ID
	h.reg.add(v, to)
	h.reg.addFollowups(v.ID+"/confirmed", g.confirmed, to, 1)
	h.reg.addFollowups(v.ID+"/filled", g.filled, to, 1)
	return g, to, from, nil
}

// t18Answer has people answer through the simulator: most YES, some NO,
// in bursts that land in the same instant.
func t18Answer(ctx context.Context, h *harness, wg *sync.WaitGroup, people []string, from string) {
	at := h.randDur(300*time.Millisecond, 2500*time.Millisecond)
	for k, num := range people {
		if k%2 == 0 {
			at = h.randDur(300*time.Millisecond, 2500*time.Millisecond) // a burst of two at the same moment
		}
		text := "1"
		if h.randInt(0, 3) == 0 {
			text = "2"
		}
		wg.Add(1)
		go func(num, text string, d time.Duration) {
			defer wg.Done()
			if sleep(ctx, d) != nil {
				return
			}
			_, _ = doJSON(ctx, http.MethodPost, h.simAPI.base+"/sim/inbound", h.simAPI.token, map[string]string{"from": num, "to": from, "text": text}, nil)
		}(num, text, at)
	}
}

// t18Settle waits until no callout has a wave due or a send pending, and
// returns their views in the order of groups.
func t18Settle(ctx context.Context, a api, groups []t18Group, res *scenarioResult) []t18View {
	deadline := time.Now().Add(40 * time.Second)
	for {
		views := make([]t18View, 0, len(groups))
		busy := 0
		for _, g := range groups {
			var v t18View
			if _, err := doJSON(ctx, http.MethodGet, a.base+"/v1/groups/"+g.id, a.key, nil, &v); err != nil {
				busy++
				views = append(views, v)
				continue
			}
			if v.Waves.NextAt != nil {
				busy++
			}
			for _, r := range v.Recipients {
				if r.Status == "pending" || r.Status == "sending" {
					busy++
				}
			}
			views = append(views, v)
		}
		if busy == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if busy > 0 {
				res.problems = append(res.problems, fmt.Sprintf("%d callouts or recipients still busy 40s after the last kill", busy))
			}
			return views
		}
		_ = sleep(ctx, 300*time.Millisecond) // polling an external process
	}
}
