package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// runT12 is issue 15's T12: three nodes; node 1 reaches PostgreSQL through
// a TCP proxy. While node 1 fans out a paced group, the harness blackholes
// that link. Node 1 must fence itself within the lease TTL (its log says
// so), another node must take the group over and finish it; then the link
// heals and node 1 rejoins and takes its share again. Nobody is sent
// twice, no event is committed at a lower epoch after a higher one, no
// acknowledged webhook is lost.
func runT12(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	cl, err := startCluster(ctx, h, &res, "t12", true)
	if err != nil {
		if cl == nil {
			return scenarioResult{notes: []string{err.Error()}}
		}
		return res.fail("%v", err)
	}
	defer cl.teardown()
	n1, n2 := cl.nodes[0], cl.nodes[1]
	h.proxy.setUpstream(n2.p.url) // webhooks keep being acknowledged
	g, _, err := n1.newGroup(ctx, "t12", 300, "")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	if v, err := n1.api.cluster(ctx, g.ID); err != nil || v.Group == nil || v.Group.Owner != n1.name {
		return res.fail("group %s should be owned by %s: %+v %v", g.ID, n1.name, v.Group, err)
	}
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		return res.fail("%v", err)
	}
	logOff := n1.logSize()
	head := headSeq(ctx, n2, g.ID)
	cl.proxy.setBlackhole(true)
	cut := time.Now()
	// Node 1 fences itself, on its own, within the TTL.
	fenced := time.Duration(0)
	for time.Since(cut) < 2*t8TTL {
		if strings.Contains(n1.logSince(logOff), "fencing this node's shards") {
			fenced = time.Since(cut)
			break
		}
		_ = sleep(ctx, 20*time.Millisecond)
	}
	switch {
	case fenced == 0:
		res.problems = append(res.problems, fmt.Sprintf("%s did not fence itself within %s of the partition; log %s", n1.name, 2*t8TTL, n1.logPath))
	case fenced > t8TTL:
		res.problems = append(res.problems, fmt.Sprintf("%s fenced itself %s after the partition, past the TTL %s", n1.name, fenced, t8TTL))
	}
	takeover, err := firstCommitBy(ctx, n2, g.ID, n1.name, head, cut, 2*t8TTL+5*time.Second)
	if err != nil {
		res.problems = append(res.problems, "takeover: "+err.Error())
	}
	_ = sleep(ctx, time.Until(cut.Add(2*t8TTL)))
	cl.proxy.setBlackhole(false)
	healed := time.Now()
	// Node 1 rejoins and gets its share back.
	rejoined := time.Duration(0)
	for time.Since(healed) < 30*time.Second {
		v, err := n2.api.cluster(ctx, "")
		if err == nil {
			for _, n := range v.Nodes {
				if n.ID == n1.name && n.Alive && n.Shards >= 21 {
					rejoined = time.Since(healed)
				}
			}
		}
		if rejoined > 0 {
			break
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
	if rejoined == 0 {
		res.problems = append(res.problems, fmt.Sprintf("%s did not get its share back within 30 s of the heal", n1.name))
	}
	views, err := n2.drain(ctx, []string{g.ID}, 120*time.Second, false)
	if err != nil {
		res.problems = append(res.problems, err.Error())
	}
	probs, fin := n2.finalCheck(ctx, []string{g.ID})
	res.problems = append(res.problems, probs...)
	evs, err := n2.api.stamps(ctx, g.ID)
	stale := 0
	if err != nil {
		res.problems = append(res.problems, "journal stamps: "+err.Error())
	} else if stale = staleWrites(evs); stale > 0 {
		res.problems = append(res.problems, fmt.Sprintf("%d events committed at a lower epoch after a higher one", stale))
	}
	res.notes = append(res.notes, fmt.Sprintf("T12 partition: fenced after %s, taken over after %s, rejoined %s after the heal; stale_writes=%d lost=%d, %d acknowledged webhooks, %d unconfirmed [%s], lease TTL %s",
		fenced.Round(time.Millisecond), takeover.Round(time.Millisecond), rejoined.Round(time.Millisecond), stale, fin.lost, fin.acked, fin.unconfirmed, statusCounts(views), t8TTL))
	return res
}
