package tracker

import (
	"sort"
	"sync/atomic"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
)

// Both providers at once (docs/design.md §16): every configured provider by
// name, and the registered senders that say which provider a number sends
// through. A from that is no registered sender (or whose provider this
// server has no credentials for) goes through Config.Provider, the default.

// senderInfo is what the send path knows of one registered sender.
type senderInfo struct {
	provider string
	pool     string
}

// senderDir is the registered senders, replaced whole on each reload.
type senderDir struct {
	byNumber map[string]senderInfo
	pools    map[string][]group.PoolSender // pool → its numbers, by number
}

func newSenderDir(ss map[string]senderInfo) *senderDir {
	d := &senderDir{byNumber: ss, pools: map[string][]group.PoolSender{}}
	for n, s := range ss {
		if s.pool != "" {
			d.pools[s.pool] = append(d.pools[s.pool], group.PoolSender{Number: n, Provider: s.provider})
		}
	}
	for _, p := range d.pools {
		sort.Slice(p, func(i, j int) bool { return p[i].Number < p[j].Number })
	}
	return d
}

// providerSet holds the configured providers and the sender directory.
type providerSet struct {
	def    crewcast.Provider
	byName map[string]crewcast.Provider
	dir    atomic.Pointer[senderDir]
}

func newProviderSet(def crewcast.Provider, others map[string]crewcast.Provider) *providerSet {
	ps := &providerSet{def: def, byName: map[string]crewcast.Provider{def.Name(): def}}
	for name, p := range others {
		if p != nil {
			ps.byName[name] = p
		}
	}
	ps.dir.Store(newSenderDir(nil))
	return ps
}

// forFrom is the provider that sends from a number.
func (ps *providerSet) forFrom(from string) crewcast.Provider {
	if s, ok := ps.dir.Load().byNumber[from]; ok {
		if p, ok := ps.byName[s.provider]; ok {
			return p
		}
	}
	return ps.def
}

// named is the provider of that name, or the default for "" or a name this
// server has no credentials for.
func (ps *providerSet) named(name string) crewcast.Provider {
	if p, ok := ps.byName[name]; ok {
		return p
	}
	return ps.def
}

// nameOf is the name routes and metrics use for a recorded provider ("" is
// the default one, as journals written before §16 say).
func (ps *providerSet) nameOf(name string) string {
	if name == "" {
		return ps.def.Name()
	}
	return name
}

// pool lists a pool's numbers whose provider this server can send through.
func (ps *providerSet) pool(name string) []group.PoolSender {
	var out []group.PoolSender
	for _, s := range ps.dir.Load().pools[name] {
		if _, ok := ps.byName[s.Provider]; ok {
			out = append(out, s)
		}
	}
	return out
}

// Providers lists the names of the configured providers, sorted.
func (t *Tracker) Providers() []string {
	out := make([]string, 0, len(t.provs.byName))
	for n := range t.provs.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
