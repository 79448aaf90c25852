package group

import (
	"slices"
	"strconv"
	"time"

	"github.com/crewcast/crewcast"
)

// Pools and sticky senders (docs/design.md §16), the pure part: which pool
// number each recipient of a pool group is texted from, the failover of a
// recipient whose number's provider is unhealthy, and the claims a pool
// group makes within each number's pacing. The tracker (tracker/pools.go)
// reads the senders, the sticky numbers and the circuits and feeds them in.

// TypeSenderChanged is the journal type of SenderChanged.
const TypeSenderChanged = "recipient.sender_changed"

// PoolSender is one number of a pool and its provider.
type PoolSender struct {
	Number   string
	Provider string
}

// SenderChange moves one recipient to another pool number.
type SenderChange struct {
	Index  int    `json:"i"`
	From   string `json:"from"`
	Was    string `json:"was,omitempty"`
	Reason string `json:"reason"`
}

// SenderChanged records recipients of a pool group moved to another number
// of the pool (failover): only recipients not in flight, whose last attempt
// (if any) certainly did not go out, so the next claim is safe.
type SenderChanged struct {
	At      time.Time      `json:"at"`
	Changes []SenderChange `json:"changes"`
}

// Type implements Event.
func (SenderChanged) Type() string { return TypeSenderChanged }

// FromFor is the number recipient i is texted from: their pool number in a
// pool group, else the group's From.
func (g *Group) FromFor(i int) string {
	if i >= 0 && i < len(g.Recipients) && g.Recipients[i].From != "" {
		return g.Recipients[i].From
	}
	return g.From
}

// AssignSenders picks the pool number of each of numbers (§16): the
// person's sticky number when it is healthy and they have no open group
// from it; else the least-loaded healthy number they have no open group
// from; else (every healthy number is busy for them) the sticky number if
// healthy, so reply codes tell the groups apart; else the least-loaded
// healthy number; else, with no healthy number at all, the sticky or the
// least-loaded number (the sends retry on their schedule). Load counts
// this group's own assignments; ties go to the pool's order. sticky maps a
// person to their sticky number; busy[person][number] says that person has
// an open group from number.
func AssignSenders(numbers []string, pool []PoolSender, sticky map[string]string,
	busy map[string]map[string]bool, healthy func(number string) bool) []string {
	if len(pool) == 0 {
		return nil
	}
	load := make(map[string]int, len(pool))
	inPool := make(map[string]bool, len(pool))
	for _, s := range pool {
		inPool[s.Number] = true
	}
	least := func(ok func(string) bool) string {
		best, bestLoad := "", 0
		for _, s := range pool {
			if !ok(s.Number) {
				continue
			}
			if best == "" || load[s.Number] < bestLoad {
				best, bestLoad = s.Number, load[s.Number]
			}
		}
		return best
	}
	out := make([]string, len(numbers))
	for k, n := range numbers {
		st := sticky[n]
		if !inPool[st] {
			st = ""
		}
		free := func(s string) bool { return healthy(s) && !busy[n][s] }
		var pick string
		switch {
		case st != "" && free(st):
			pick = st
		default:
			if pick = least(free); pick == "" {
				switch {
				case st != "" && healthy(st):
					pick = st
				default:
					if pick = least(healthy); pick == "" {
						if pick = st; pick == "" {
							pick = least(func(string) bool { return true })
						}
					}
				}
			}
		}
		out[k] = pick
		load[pick]++
	}
	return out
}

// Failover moves the recipients of a pool group whose number is unhealthy
// to a healthy number of the pool on another provider (least-loaded first),
// and makes them claimable now. Only a pending recipient moves: one never
// claimed, or whose last attempt certainly was not sent (a retry or a
// rate-limited send); a recipient in flight, unconfirmed or in any other
// status keeps its number, so an ambiguous attempt is never sent again
// through another provider. False when nobody moves.
func (g *Group) Failover(now time.Time, pool []PoolSender, healthy func(number string) bool, reason string) (SenderChanged, bool) {
	if g.Pool == "" || g.Status != crewcast.GroupSending || len(pool) == 0 {
		return SenderChanged{}, false
	}
	provOf := make(map[string]string, len(pool))
	for _, s := range pool {
		provOf[s.Number] = s.Provider
	}
	load := make(map[string]int, len(pool))
	for _, r := range g.Recipients {
		if r.From != "" {
			load[r.From]++
		}
	}
	var out SenderChanged
	for i, r := range g.Recipients {
		if r.Status != crewcast.StatusPending || r.From == "" || healthy(r.From) {
			continue
		}
		best, bestLoad := "", 0
		for _, s := range pool {
			if !healthy(s.Number) || s.Provider == provOf[r.From] {
				continue
			}
			if best == "" || load[s.Number] < bestLoad {
				best, bestLoad = s.Number, load[s.Number]
			}
		}
		if best == "" {
			continue // nowhere to go: retries on its schedule
		}
		load[r.From]--
		load[best]++
		out.Changes = append(out.Changes, SenderChange{Index: i, From: best, Was: r.From, Reason: reason})
	}
	out.At = now
	return out, len(out.Changes) > 0
}

// ClaimWhere is Claim for a pool group: up to limit claimable recipients in
// index order that admit accepts (the caller's pacing per number), with
// send ids that continue the group's sequence.
func (g *Group) ClaimWhere(now time.Time, limit int, admit func(i int) bool) (Claimed, bool) {
	if g.Status != crewcast.GroupSending || g.Mode == crewcast.ModeGroupMMS {
		return Claimed{}, false
	}
	c := Claimed{At: now}
	next := g.Sends
	for i, r := range g.Recipients {
		if limit > 0 && len(c.Sends) >= limit {
			break
		}
		if g.claimable(r, now) && admit(i) {
			next++
			c.Sends = append(c.Sends, Send{ID: "s" + strconv.Itoa(next), Indices: []int{i}})
		}
	}
	return c, len(c.Sends) > 0
}

// ClaimableFroms lists the distinct numbers of the claimable recipients.
func (g *Group) ClaimableFroms(now time.Time) []string {
	var out []string
	if g.Status != crewcast.GroupSending {
		return nil
	}
	for i, r := range g.Recipients {
		if g.claimable(r, now) {
			if f := g.FromFor(i); !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

func (g *Group) applyPoolEvent(e Event) (bool, error) {
	v, ok := e.(SenderChanged)
	if !ok {
		return false, nil
	}
	if err := g.checkIndices(v.Type(), poolEventIndices(v)); err != nil {
		return true, err
	}
	for _, ch := range v.Changes {
		r := g.Recipients[ch.Index]
		if r.Status != crewcast.StatusPending {
			continue // moved on meanwhile: nothing to fail over
		}
		r.From = ch.From
		r.RetryAt = time.Time{} // the last attempt certainly did not go out
		g.markDirty(ch.Index)
	}
	g.touch(v.At)
	return true, nil
}

func newPoolEvent(typ string) Event {
	if typ == TypeSenderChanged {
		return &SenderChanged{}
	}
	return nil
}

func derefPoolEvent(e Event) Event {
	if v, ok := e.(*SenderChanged); ok {
		return *v
	}
	return e
}

func poolEventIndices(e Event) []int {
	if v, ok := e.(SenderChanged); ok {
		out := make([]int, len(v.Changes))
		for k, c := range v.Changes {
			out[k] = c.Index
		}
		return out
	}
	return nil
}
