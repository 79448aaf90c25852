package tracker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Pools and sticky senders on the sending side (docs/design.md §16; the
// decisions are group/pool.go's). A person's sticky number in a pool is a
// route "p:<pool>:<person>" → number (no expiry), written in the commit
// that assigns it: the create of a pool group, and a failover.

func stickyKey(pool, person string) string { return "p:" + pool + ":" + person }

// poolView is what a group actor reads of pools, providers and circuits.
type poolView interface {
	poolSenders(pool string) []group.PoolSender
	numberHealthy(number string) bool
	providerOfNumber(number string) string
	providerName(recorded string) string
	watchPool(groupID string, on bool)
}

func (t *Tracker) poolSenders(pool string) []group.PoolSender { return t.provs.pool(pool) }

func (t *Tracker) numberHealthy(number string) bool {
	return t.circuits.healthy(t.provs.forFrom(number).Name())
}

func (t *Tracker) providerOfNumber(number string) string { return t.provs.forFrom(number).Name() }

func (t *Tracker) providerName(recorded string) string { return t.provs.nameOf(recorded) }

// ProviderMetrics, when the Metrics implement it, hears each provider's
// circuit open (up false) and close (up true): crewcast_provider_up.
type ProviderMetrics interface {
	ProviderUp(provider string, up bool)
}

// poolGroups are the pool groups active on this node, kicked when a
// circuit opens or closes so their recipients fail over (or come back)
// without waiting for their retry.
type poolGroups struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func (t *Tracker) watchPool(groupID string, on bool) {
	t.pools.mu.Lock()
	defer t.pools.mu.Unlock()
	if t.pools.ids == nil {
		t.pools.ids = map[string]struct{}{}
	}
	if on {
		t.pools.ids[groupID] = struct{}{}
	} else {
		delete(t.pools.ids, groupID)
	}
}

// circuitChanged kicks every active pool group.
func (t *Tracker) circuitChanged(provider, state string) {
	if m, ok := t.cfg.Metrics.(ProviderMetrics); ok {
		m.ProviderUp(provider, state != CircuitOpen)
	}
	t.pools.mu.Lock()
	ids := make([]string, 0, len(t.pools.ids))
	for id := range t.pools.ids {
		ids = append(ids, id)
	}
	t.pools.mu.Unlock()
	for _, id := range ids {
		t.kick(id)
	}
}

// provName is the provider name a send's result records.
func (e *groupEnv) provName(made string) string {
	if made == "" {
		return e.cfg.Provider
	}
	return made
}

// kickPool claims what is due in a pool group: first the failover of
// recipients whose number is unhealthy, then claims within each number's
// pacing. Called by kick before its own checks, because recipients waiting
// for a retry are not claimable yet but may fail over now.
func (a *groupActor) kickPool(c *actor.Context[groupMsg], now time.Time) {
	e := a.env
	g := a.g
	// Watched while it may still send, so a circuit's change reaches it
	// even hibernated (the kick activates it).
	e.pools.watchPool(a.key, g.Status == crewcast.GroupSending || g.Status == crewcast.GroupPaused)
	pool := e.pools.poolSenders(g.Pool)
	healthy, someDown := healthOf(pool, e.pools.numberHealthy)
	if !someDown {
		// Nothing to fail over: skip the walk over the recipients.
	} else if ch, ok := g.Failover(now, pool, healthy, "its number's provider is unavailable (circuit open)"); ok {
		a.emit(ch)
		for _, x := range ch.Changes {
			a.eff.Routes = append(a.eff.Routes, store.Route{Key: stickyKey(g.Pool, g.Recipients[x.Index].Number), Value: x.From})
		}
	}
	if !g.HasClaimable(now) {
		if len(a.pending) > 0 {
			_ = a.flush(c)
		}
		return
	}
	room := e.cfg.MaxBacklog - e.sends.backlog()
	if room <= 0 {
		if len(a.pending) > 0 {
			_ = a.flush(c)
		}
		e.room.wait(a.key)
		return
	}
	limit := min(room, e.cfg.ClaimBatch)
	if !a.suppressBeforeClaim(c.Context(), now, limit) {
		c.Schedule(time.Second, msgKick{})
		return
	}
	var wait time.Duration
	dry := map[string]bool{}
	cl, ok := g.ClaimWhere(now, limit, func(i int) bool {
		from := g.FromFor(i)
		if dry[from] {
			return false
		}
		if n, w := e.pacer.take(from, 1, now); n == 0 {
			dry[from] = true
			if wait == 0 || w < wait {
				wait = w
			}
			return false
		}
		return true
	})
	if !ok {
		if len(a.pending) > 0 {
			_ = a.flush(c)
		}
		if wait > 0 {
			a.kickLater(c, now, wait)
		}
		return
	}
	a.emit(cl)
	a.eff.Claim = a.claimedNumbers(cl)
	if err := a.flush(c); err != nil {
		return
	}
	if g.HasClaimable(now) {
		if wait > 0 {
			a.kickLater(c, now, wait)
		} else {
			c.Self().Tell(msgKick{})
		}
	}
}

// failoverDue reports whether a pool group has a pending recipient whose
// number is unhealthy while another provider's number of the pool is not.
func (a *groupActor) failoverDue() bool {
	g := a.g
	if g == nil || g.Pool == "" || g.Status != crewcast.GroupSending {
		return false
	}
	pool := a.env.pools.poolSenders(g.Pool)
	healthy, someDown := healthOf(pool, a.env.pools.numberHealthy)
	if !someDown {
		return false
	}
	_, ok := g.Failover(time.Time{}, pool, healthy, "")
	return ok
}

// healthOf reads each pool number's health once: a lookup for the
// decisions that ask per recipient, and whether any number is unhealthy.
// A number no longer in the pool is asked when first met.
func healthOf(pool []group.PoolSender, healthy func(string) bool) (func(string) bool, bool) {
	by := make(map[string]bool, len(pool))
	down := false
	for _, s := range pool {
		by[s.Number] = healthy(s.Number)
		down = down || !by[s.Number]
	}
	return func(n string) bool {
		h, ok := by[n]
		if !ok {
			h = healthy(n)
			by[n] = h
		}
		return h
	}, down
}

// stickyRoutes are the routes a pool group's create writes: each person's
// sticky number.
func stickyRoutes(c group.Created) []store.Route {
	if c.Pool == "" {
		return nil
	}
	out := make([]store.Route, 0, len(c.Recipients))
	for i, r := range c.Recipients {
		if i < len(c.Senders) && !r.Suppressed {
			out = append(out, store.Route{Key: stickyKey(c.Pool, r.Number), Value: c.Senders[i]})
		}
	}
	return out
}

// planPool checks a pool group's request before Plan and names the pool's
// first number as the group's From (its escalations and confirmations go
// from it; Plan validates it like any from).
func (t *Tracker) planPool(req *group.Request) ([]group.PoolSender, error) {
	if req.Pool == "" {
		return nil, nil
	}
	if req.From != "" {
		return nil, &ValidationError{Fields: []group.FieldError{{Field: "pool", Message: "give from or pool, not both"}}, Total: 1}
	}
	if req.Mode == crewcast.ModeGroupMMS {
		return nil, &ValidationError{Fields: []group.FieldError{{Field: "pool", Message: "a group MMS is sent from one number: give from"}}, Total: 1}
	}
	pool := t.provs.pool(req.Pool)
	if len(pool) == 0 {
		return nil, &ValidationError{Fields: []group.FieldError{{Field: "pool", Message: fmt.Sprintf("no registered sender of this server's providers is in pool %q", req.Pool), Input: req.Pool}}, Total: 1}
	}
	req.From = pool[0].Number
	return pool, nil
}

// assignPool gives each recipient of a planned pool group their number:
// sticky numbers and open groups read from the routes (group/pool.go
// AssignSenders decides).
func (t *Tracker) assignPool(ctx context.Context, created *group.Created, pool []group.PoolSender, name string) error {
	people := make([]string, len(created.Recipients))
	keys := make([]string, 0, len(people)*(len(pool)+1))
	for i, r := range created.Recipients {
		people[i] = r.Number
		keys = append(keys, stickyKey(name, r.Number))
		for _, s := range pool {
			keys = append(keys, convKey(s.Number, r.Number))
		}
	}
	routes, err := t.readRoutes(ctx, keys)
	if err != nil {
		return err
	}
	sticky := map[string]string{}
	busy := map[string]map[string]bool{}
	open := map[string]bool{} // group id → still open, read once each
	for _, person := range people {
		if r, ok := routes[stickyKey(name, person)]; ok {
			sticky[person] = r.Value
		}
		for _, s := range pool {
			r, ok := routes[convKey(s.Number, person)]
			if !ok {
				continue
			}
			o, seen := open[r.Value]
			if !seen {
				row, err := t.st.GetGroup(ctx, r.Value)
				o = err == nil && !groupDone(row.Status)
				open[r.Value] = o
			}
			if o {
				if busy[person] == nil {
					busy[person] = map[string]bool{}
				}
				busy[person][s.Number] = true
			}
		}
	}
	created.Pool = name
	created.Senders = group.AssignSenders(people, pool, sticky, busy, t.numberHealthy)
	return nil
}

// groupDone reports a group status that no reply reopens.
func groupDone(s crewcast.GroupStatus) bool {
	return s == crewcast.GroupComplete || s == crewcast.GroupCanceled
}

// readRoutes reads many routes, in one query where the engine can.
func (t *Tracker) readRoutes(ctx context.Context, keys []string) (map[string]store.Route, error) {
	if br, ok := t.st.(store.RouteBatchReader); ok {
		out := map[string]store.Route{}
		for len(keys) > 0 {
			n := min(len(keys), 500)
			got, err := br.GetRoutes(ctx, keys[:n])
			if err != nil {
				return nil, err
			}
			for k, v := range got {
				out[k] = v
			}
			keys = keys[n:]
		}
		return out, nil
	}
	out := map[string]store.Route{}
	for _, k := range keys {
		r, err := t.st.GetRoute(ctx, k)
		if err == nil {
			out[k] = r
		} else if !errors.Is(err, actor.ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}

// pacePoolFollowups keeps the follow-ups of a pool group whose number has a
// token now (follow-up send ids name their recipient and step, so any of
// them may wait for the next kick), and the wait for the first refused.
func pacePoolFollowups(p sendPacer, g *group.Group, sends []group.FollowupSend, now time.Time) ([]group.FollowupSend, time.Duration) {
	kept := sends[:0:0]
	var wait time.Duration
	dry := map[string]bool{}
	for _, s := range sends {
		from := g.FromFor(s.Index)
		if dry[from] {
			continue
		}
		if n, w := p.take(from, 1, now); n == 0 {
			dry[from] = true
			if wait == 0 || w < wait {
				wait = w
			}
			continue
		}
		kept = append(kept, s)
	}
	return kept, wait
}
