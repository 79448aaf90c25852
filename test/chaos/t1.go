package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// mainSendRate is the main server's --send-rate: slow enough that a
// fan-out of a few dozen recipients lasts seconds and can be killed
// in the middle.
// crewcast's pacer allows a burst of one second's worth at once.
const mainSendRate = 20

// mainServer returns the SQLite server T1, T2, T5 and T11 share, starting
// it on first use.
func (h *harness) mainServer(ctx context.Context) (*server, error) {
	if h.main != nil && h.main.p != nil && h.main.p.Alive() {
		return h.main, nil
	}
	if h.main == nil {
		h.main = h.newServer("server-main", filepath.Join(h.dir, "main.db"), "--send-rate", fmt.Sprint(mainSendRate))
	}
	return h.main, h.main.start(ctx)
}

// stopMain stops the shared server before a scenario that needs its own.
func (h *harness) stopMain() error {
	if h.main == nil {
		return nil
	}
	return h.main.stop()
}

// killKind is where a T1 iteration kills the server.
type killKind int

const (
	killRandom      killKind = iota // at a random moment of the fan-out
	killBeforeCall                  // claims committed, provider not yet called
	killAfterAccept                 // provider accepted, crewcast has not recorded it
)

func (k killKind) String() string {
	return [...]string{"random", "after-claim/before-call", "after-accept/before-record"}[k]
}

// runT1 is docs/testing.md T1: kill -9 during fan-out, at random moments and at
// the two fixed points, restart, drain, and check that no acknowledged
// webhook is lost, no recipient is sent twice, and recipients in flight at
// the kill are unconfirmed and never resent.
func runT1(ctx context.Context, h *harness) scenarioResult {
	res := scenarioResult{ran: true}
	srv, err := h.mainServer(ctx)
	if err != nil {
		res.problems = append(res.problems, "start server: "+err.Error())
		return res
	}
	var allIDs []string
	kinds := map[killKind]int{}
	for i := 0; i < h.cfg.iterations && ctx.Err() == nil; i++ {
		kind := killKind(i % 3)
		probs, ids, err := t1Iteration(ctx, h, srv, i, kind)
		allIDs = append(allIDs, ids...)
		if err != nil {
			res.problems = append(res.problems, fmt.Sprintf("iteration %d (%s): %v", i, kind, err))
			if srv.p == nil || !srv.p.Alive() {
				if err := srv.start(ctx); err != nil {
					res.problems = append(res.problems, "restart server: "+err.Error())
					return res
				}
			}
			continue
		}
		for _, p := range probs {
			res.problems = append(res.problems, fmt.Sprintf("iteration %d (%s): %s", i, kind, p))
		}
		kinds[kind]++
		h.mu.Lock()
		h.iterations++
		h.mu.Unlock()
	}
	probs, fin := srv.finalCheck(ctx, allIDs)
	res.problems = append(res.problems, probs...)
	res.notes = append(res.notes, fmt.Sprintf("final check: %d acknowledged webhooks about these groups, %d lost, %d unconfirmed", fin.acked, fin.lost, fin.unconfirmed))
	res.notes = append(res.notes, fmt.Sprintf("%d iterations: %d random, %d after-claim/before-call, %d after-accept/before-record kills; %d groups",
		h.iterations, kinds[killRandom], kinds[killBeforeCall], kinds[killAfterAccept], len(allIDs)))
	return res
}

// t1Iteration runs one kill: it returns the problems the checks found, the
// groups it created, and an error when the iteration itself could not run.
func t1Iteration(ctx context.Context, h *harness, srv *server, i int, kind killKind) ([]string, []string, error) {
	// The first after-claim/before-call kill holds the groups' very first
	// sends: nothing reaches the provider, so no webhook will come back to
	// wake the groups after the restart — crewcast must resume them by
	// itself.
	fromStart := kind == killBeforeCall && i == 1
	if fromStart {
		h.gate.setMode(gateHoldBefore)
	}
	ngroups := h.randInt(1, 2)
	var ids []string
	largest := 0
	for range ngroups {
		n := h.randInt(30, 80)
		largest = max(largest, n)
		g, _, err := srv.newGroup(ctx, fmt.Sprintf("t1 iter %d", i), n, "")
		if err != nil {
			return nil, ids, fmt.Errorf("create group: %w", err)
		}
		ids = append(ids, g.ID)
	}
	fanout := time.Duration(max(largest-mainSendRate, 1)) * time.Second / mainSendRate
	var held []heldSend
	switch kind {
	case killRandom:
		// Up to a little past the fan-out, so some kills land while only
		// webhooks are in flight.
		if err := sleep(ctx, h.randDur(20*time.Millisecond, fanout*6/5)); err != nil {
			return nil, ids, err
		}
		srv.kill9()
	default:
		delay := h.randDur(0, fanout/2)
		if fromStart {
			delay = 0
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, ids, err
		}
		mode := gateHoldBefore
		if kind == killAfterAccept {
			mode = gateHoldAfter
		}
		h.gate.setMode(mode)
		want := h.randInt(1, 6)
		got := h.gate.waitHeld(ctx, want, 10*time.Second)
		srv.kill9()
		held = h.gate.releaseAll()
		var heldTo []string
		for _, hs := range held {
			heldTo = append(heldTo, hs.To...)
		}
		h.logf("T1 %d: killed with %d sends held: %v", i+1, len(held), heldTo)
		if got == 0 {
			return nil, ids, fmt.Errorf("no send reached the gate within 10s")
		}
	}
	if err := srv.start(ctx); err != nil {
		return nil, ids, fmt.Errorf("restart: %w", err)
	}
	views, derr := srv.drain(ctx, ids, 30*time.Second, false)
	// Orphan webhooks of sends accepted at the kill may still be on their
	// way; they can turn unconfirmed recipients into sent ones.
	h.quiesce(ctx, 2*time.Second, 30*time.Second)
	cr, err := srv.check(ctx, ids, true, false)
	if err != nil {
		return nil, ids, fmt.Errorf("check: %w", err)
	}
	// Lost webhooks are judged by the final check, after sweeps had time.
	var problems []string
	for _, p := range cr.problems {
		if !strings.HasPrefix(p, "LOST:") {
			problems = append(problems, p)
		}
	}
	if derr != nil {
		problems = append(problems, derr.Error())
	}
	counts, err := h.ledgerCounts(ctx)
	if err != nil {
		return nil, ids, err
	}
	byNumber, _, _ := h.reg.snapshot()
	statusOf := map[string]recipientView{}
	for _, g := range views {
		for _, r := range g.Recipients {
			statusOf[r.Number] = r
		}
	}
	for _, hs := range held {
		for _, to := range hs.To {
			gid, ok := byNumber[to]
			if !ok {
				problems = append(problems, fmt.Sprintf("held send to %s of no chaos group", to))
				continue
			}
			n, r := counts[gid+"|"+to], statusOf[to]
			switch {
			case kind == killBeforeCall && (n != 0 || r.Status != "unconfirmed"):
				problems = append(problems, fmt.Sprintf("FIXED POINT before-call: %s has %d sends and status %s; want 0 sends, unconfirmed", to, n, r.Status))
			case kind == killAfterAccept && n != 1:
				problems = append(problems, fmt.Sprintf("FIXED POINT after-accept: %s has %d sends; want exactly 1", to, n))
			}
		}
	}
	label := kind.String()
	if fromStart {
		label += " (first sends)"
	}
	h.logf("T1 %d/%d kill=%s held=%d groups=%d acked=%d not-yet-reflected=%d [%s] problems=%d",
		i+1, h.cfg.iterations, label, len(held), len(ids), cr.acked, cr.lost, statusCounts(views), len(problems))
	return problems, ids, nil
}
