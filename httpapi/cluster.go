package httpapi

import (
	"errors"
	"net/http"
	"sort"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Cluster views for operators and audits (design §9, §10 "Several nodes").

type clusterNodeJSON struct {
	ID           string `json:"id"`
	AdvertiseURL string `json:"advertise_url"`
	Alive        bool   `json:"alive"`
	Shards       int    `json:"shards"`
}

type leaseJSON struct {
	Shard     int        `json:"shard"`
	Owner     string     `json:"owner"`
	Epoch     uint64     `json:"epoch"`
	ExpiresAt *time.Time `json:"expires_at"` // null: held without expiry (one node)
}

type clusterGroupJSON struct {
	ID    string `json:"id"`
	Shard int    `json:"shard"`
	Owner string `json:"owner"`
}

type clusterJSON struct {
	Node   string            `json:"node"`
	Nodes  []clusterNodeJSON `json:"nodes"`
	Leases []leaseJSON       `json:"leases"`
	Group  *clusterGroupJSON `json:"group,omitempty"`
}

// debugCluster answers GET /debug/cluster: this node, the nodes that hold
// leases (alive while a lease of theirs has not expired, or held without
// expiry), and every lease; ?group=ID adds where that group's actor lives.
func (a *api) debugCluster(w http.ResponseWriter, r *http.Request) error {
	leases, err := a.store.ListLeases(r.Context())
	if err != nil {
		return err
	}
	now := a.cfg.Now()
	out := clusterJSON{Node: a.cfg.Node, Leases: make([]leaseJSON, 0, len(leases))}
	nodes := map[string]*clusterNodeJSON{}
	node := func(id string) *clusterNodeJSON {
		n := nodes[id]
		if n == nil {
			n = &clusterNodeJSON{ID: id}
			nodes[id] = n
		}
		return n
	}
	if a.cfg.Node != "" {
		self := node(a.cfg.Node)
		self.Alive, self.AdvertiseURL = true, a.cfg.AdvertiseURL
	}
	for _, l := range leases {
		lj := leaseJSON{Shard: l.Shard, Owner: l.Owner, Epoch: l.Epoch}
		live := l.ExpiresAt.IsZero() || l.ExpiresAt.After(now)
		if !l.ExpiresAt.IsZero() {
			t := l.ExpiresAt.UTC()
			lj.ExpiresAt = &t
		}
		out.Leases = append(out.Leases, lj)
		n := node(l.Owner)
		if live {
			n.Alive = true
			n.Shards++
		}
	}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, *n)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].ID < out.Nodes[j].ID })
	if id := r.URL.Query().Get("group"); id != "" {
		if _, err := a.store.GetGroup(r.Context(), id); err != nil {
			if errors.Is(err, actor.ErrNotFound) {
				return notFound("group")
			}
			return err
		}
		g := &clusterGroupJSON{ID: id, Shard: store.ShardOf(id)}
		for _, l := range leases {
			if l.Shard == g.Shard && (l.ExpiresAt.IsZero() || l.ExpiresAt.After(now)) {
				g.Owner = l.Owner
			}
		}
		out.Group = g
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type journalStampJSON struct {
	Seq   uint64    `json:"seq"`
	Type  string    `json:"type"`
	Epoch uint64    `json:"epoch"`
	Node  string    `json:"node"`
	At    time.Time `json:"at"`
}

// debugGroupJournal answers GET /debug/groups/{id}/journal: the epoch and
// node that committed each of the group's journal events, so an audit can
// prove that epochs never decrease along seq (no stale owner wrote).
func (a *api) debugGroupJournal(w http.ResponseWriter, r *http.Request) error {
	audit, ok := a.store.(store.JournalAudit)
	if !ok {
		return newError(http.StatusNotFound, codeNotFound, "not available on this server")
	}
	id := r.PathValue("id")
	stamps, err := audit.JournalStamps(r.Context(), id)
	if err != nil {
		return err
	}
	if len(stamps) == 0 {
		return notFound("group")
	}
	out := struct {
		Events []journalStampJSON `json:"events"`
	}{Events: make([]journalStampJSON, len(stamps))}
	for i, s := range stamps {
		out.Events[i] = journalStampJSON{Seq: s.Seq, Type: s.Type, Epoch: s.Epoch, Node: s.Node, At: s.At.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
