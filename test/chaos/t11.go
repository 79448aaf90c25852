package main

import (
	"context"
	"fmt"
	"time"
)

// runT11 is docs/testing.md T11, the ambiguous send: the simulator records the
// send and never answers (accept_timeout), so the server's provider call
// times out (--provider-timeout 3s).
//
//	(a) with the send's webhooks dropped, the recipient stays unconfirmed
//	    with exactly one send, long past the timeout: never resent by itself;
//	    an operator's resolve not_delivered is the only way to a second send,
//	    and resolve delivered sends nothing;
//	(b) with the webhooks flowing, the orphan webhook proves the send went
//	    out and the reconciler moves the recipient on, still with one send.
func runT11(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	srv, err := h.mainServer(ctx)
	if err != nil {
		return res.fail("start server: %v", err)
	}
	defer func() {
		if err := h.simAPI.setFaults(ctx, map[string]any{"script": nil, "drop_rate": 0}); err != nil {
			res.problems = append(res.problems, "reset faults: "+err.Error())
		}
	}()

	// (a) ambiguous, no webhooks.
	ambig := h.peekNumbers(3)
	script := map[string]string{}
	for _, n := range ambig {
		script[n] = "accept_timeout"
	}
	if err := h.simAPI.setFaults(ctx, map[string]any{"script": script, "drop_rate": 1}); err != nil {
		return res.fail("set faults: %v", err)
	}
	ga, to, err := srv.newGroup(ctx, "t11 ambiguous", 3, "1h")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	if fmt.Sprint(to) != fmt.Sprint(ambig) {
		return res.fail("numbers %v, scripted %v", to, ambig)
	}
	views, err := srv.drain(ctx, []string{ga.ID}, 20*time.Second, false)
	if err != nil {
		return res.fail("ambiguous sends did not resolve: %v", err)
	}
	if err := h.simAPI.setFaults(ctx, map[string]any{"script": nil, "drop_rate": 0}); err != nil {
		return res.fail("reset faults: %v", err)
	}
	for _, r := range views[0].Recipients {
		if r.Status != "unconfirmed" {
			res.problems = append(res.problems, fmt.Sprintf("(a) %s is %s after the provider timeout; want unconfirmed", r.Number, r.Status))
		}
	}
	// Long past the timeout, nothing is resent by itself.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return res.fail("%v", err)
	}
	counts, err := h.ledgerCounts(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	for _, n := range to {
		if c := counts[ga.ID+"|"+n]; c != 1 {
			res.problems = append(res.problems, fmt.Sprintf("(a) %s has %d sends 5s after the timeout; want 1 (recorded, never resent)", n, c))
		}
	}
	// The operator decides: not_delivered allows one new attempt,
	// delivered sends nothing.
	h.reg.allowResend(ga.ID, to[0])
	if err := srv.api.resolve(ctx, ga.ID, to[0], "not_delivered"); err != nil {
		return res.fail("resolve not_delivered: %v", err)
	}
	if err := srv.api.resolve(ctx, ga.ID, to[1], "delivered"); err != nil {
		return res.fail("resolve delivered: %v", err)
	}
	views, err = srv.drain(ctx, []string{ga.ID}, 60*time.Second, true)
	if err != nil {
		return res.fail("after resolve: %v", err)
	}
	counts, err = h.ledgerCounts(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	want := map[string]struct {
		sends  int
		status []string
	}{
		to[0]: {2, []string{"sent", "delivered"}},
		to[1]: {1, []string{"delivered"}},
		to[2]: {1, []string{"unconfirmed"}},
	}
	for _, r := range views[0].Recipients {
		w := want[r.Number]
		ok := false
		for _, s := range w.status {
			ok = ok || r.Status == s
		}
		if c := counts[ga.ID+"|"+r.Number]; c != w.sends || !ok {
			res.problems = append(res.problems, fmt.Sprintf("(a) after resolve: %s has %d sends and status %s; want %d and %v", r.Number, c, r.Status, w.sends, w.status))
		}
	}
	res.notes = append(res.notes, "(a) accept timeout, no webhooks: unconfirmed, 1 send; resolve not_delivered → 2nd send; resolve delivered → none")

	// (b) ambiguous, webhooks flowing: the reconciler resolves it.
	amb := h.peekNumbers(2)
	script = map[string]string{}
	for _, n := range amb {
		script[n] = "accept_timeout"
	}
	if err := h.simAPI.setFaults(ctx, map[string]any{"script": script}); err != nil {
		return res.fail("set faults: %v", err)
	}
	gb, _, err := srv.newGroup(ctx, "t11 reconciled", 2, "1h")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	views, err = srv.drain(ctx, []string{gb.ID}, 30*time.Second, true)
	if err != nil {
		return res.fail("(b) %v", err)
	}
	// Reconciliation runs after the timeout makes the recipient
	// unconfirmed; give it a few sweeps' worth of time.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if views, err = srv.drain(ctx, []string{gb.ID}, 5*time.Second, true); err == nil && allStatus(views[0], "delivered") {
			break
		}
		_ = sleep(ctx, 500*time.Millisecond) // polling an external process
	}
	counts, err = h.ledgerCounts(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	for _, r := range views[0].Recipients {
		if c := counts[gb.ID+"|"+r.Number]; c != 1 || r.Status != "delivered" {
			res.problems = append(res.problems, fmt.Sprintf("(b) %s has %d sends and status %s; want 1 send, delivered by reconciliation", r.Number, c, r.Status))
		}
	}
	res.notes = append(res.notes, "(b) accept timeout, webhooks flowing: reconciled to delivered from the orphan webhooks, 1 send")
	probs, _ := srv.finalCheck(ctx, []string{ga.ID, gb.ID})
	res.problems = append(res.problems, probs...)
	return res
}

func allStatus(g groupView, status string) bool {
	for _, r := range g.Recipients {
		if r.Status != status {
			return false
		}
	}
	return true
}
