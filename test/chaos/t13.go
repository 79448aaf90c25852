package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// runT13 is issue 15's T13: three nodes, paced groups fanning out,
// webhooks streaming in; every node in turn is stopped with SIGTERM
// (webhooks go to another node meanwhile) and started again, and must get
// its share of the shards back before the next one goes. Every group must
// finish; no acknowledged webhook lost, nobody sent twice, no stale write,
// nothing left unconfirmed (each stop hands its shards off gracefully).
// Meanwhile SSE clients read the all-groups stream and each group's
// stream, each from a different node, reconnecting to the next node with
// Last-Event-ID when theirs goes away: each must receive every journal
// event of every group, in order (gap-free across nodes).
func runT13(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	cl, err := startCluster(ctx, h, &res, "t13", false)
	if err != nil {
		if cl == nil {
			return scenarioResult{notes: []string{err.Error()}}
		}
		return res.fail("%v", err)
	}
	defer cl.teardown()
	var ids []string
	for i, s := range cl.nodes {
		g, _, err := s.newGroup(ctx, fmt.Sprintf("t13-%d", i), 200, "")
		if err != nil {
			return res.fail("create group: %v", err)
		}
		ids = append(ids, g.ID)
	}
	var addrMu sync.Mutex
	addrs := make([]api, len(cl.nodes))
	for i, s := range cl.nodes {
		addrs[i] = s.api
	}
	nodes := func() []api {
		addrMu.Lock()
		defer addrMu.Unlock()
		return slices.Clone(addrs)
	}
	fctx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	followers := []*follower{newFollower("/v1/stream", nodes)}
	for _, id := range ids {
		followers = append(followers, newFollower(streamPath(id), nodes))
	}
	var following sync.WaitGroup
	for i, f := range followers {
		following.Go(func() { f.run(fctx, i) })
	}
	var restarts []time.Duration
	for i, s := range cl.nodes {
		other := cl.nodes[(i+1)%len(cl.nodes)]
		h.proxy.setUpstream(other.p.url)
		began := time.Now()
		if err := s.stop(); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("SIGTERM %s: %v", s.name, err))
		}
		if err := s.start(ctx); err != nil {
			return res.fail("restart %s: %v", s.name, err)
		}
		addrMu.Lock()
		addrs[i] = s.api
		addrMu.Unlock()
		back := false
		for time.Since(began) < 30*time.Second {
			v, err := other.api.cluster(ctx, "")
			if err == nil {
				for _, n := range v.Nodes {
					if n.ID == s.name && n.Alive && n.Shards >= 21 {
						back = true
					}
				}
			}
			if back {
				break
			}
			_ = sleep(ctx, 100*time.Millisecond)
		}
		if !back {
			res.problems = append(res.problems, fmt.Sprintf("%s did not get its share back within 30 s of its restart", s.name))
		}
		restarts = append(restarts, time.Since(began))
	}
	reader := cl.nodes[0]
	views, err := reader.drain(ctx, ids, 120*time.Second, false)
	if err != nil {
		res.problems = append(res.problems, err.Error())
	}
	probs, fin := reader.finalCheck(ctx, ids)
	res.problems = append(res.problems, probs...)
	stale := 0
	for _, id := range ids {
		if evs, err := reader.api.stamps(ctx, id); err != nil {
			res.problems = append(res.problems, "journal stamps: "+err.Error())
		} else if n := staleWrites(evs); n > 0 {
			stale += n
			res.problems = append(res.problems, fmt.Sprintf("group %s: %d stale writes", id, n))
		}
	}
	// The streams: wait until every follower has the last event of every
	// group, then compare with the journals.
	heads := map[string]uint64{}
	for _, id := range ids {
		if evs, err := reader.api.stamps(ctx, id); err == nil && len(evs) > 0 {
			heads[id] = evs[len(evs)-1].Seq
		}
	}
	want := func(k int) map[string]uint64 { // what follower k must have
		if k == 0 {
			return heads
		}
		return map[string]uint64{ids[k-1]: heads[ids[k-1]]}
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		behind := false
		for k, f := range followers {
			behind = behind || !f.caughtUp(want(k))
		}
		if !behind {
			break
		}
		_ = sleep(ctx, 100*time.Millisecond)
	}
	stopFollowing()
	following.Wait()
	var streamNotes []string
	for k, f := range followers {
		probs, n, dups := f.check(want(k))
		res.problems = append(res.problems, probs...)
		streamNotes = append(streamNotes, fmt.Sprintf("%s %d events %d reconnects %d duplicates", f.path, n, f.reconnects, dups))
		for _, e := range f.errs {
			res.notes = append(res.notes, "stream "+f.path+": "+e)
		}
	}
	res.notes = append(res.notes, "T13 streams: "+strings.Join(streamNotes, "; "))
	if fin.unconfirmed > 0 {
		res.problems = append(res.problems, fmt.Sprintf("%d recipients unconfirmed after graceful restarts (each stop should hand off cleanly)", fin.unconfirmed))
	}
	res.notes = append(res.notes, fmt.Sprintf("T13 rolling restart of 3 nodes (stop → share back: %v): stale_writes=%d lost=%d, %d acknowledged webhooks, %d unconfirmed [%s]",
		restarts, stale, fin.lost, fin.acked, fin.unconfirmed, statusCounts(views)))
	return res
}
