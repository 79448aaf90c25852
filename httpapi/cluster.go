package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	neturl "net/url"
	"sort"
	"strings"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
)

// Cluster views for operators and audits (docs/design.md §9, §10 "Several nodes").

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

// debugCluster answers GET /debug/cluster: this node, the members (alive
// by their heartbeats) and the nodes that hold leases, each with its count
// of live leases, and every lease; ?group=ID adds where that group's actor
// lives. A single node has no members table: a node holding a live lease
// (or one without expiry) counts as alive.
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
	if a.cfg.ClusterNodes != nil {
		for _, m := range a.cfg.ClusterNodes() {
			n := node(m.ID)
			n.AdvertiseURL, n.Alive = m.AdvertiseURL, m.Alive
		}
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
			n.Shards++
			if a.cfg.ClusterNodes == nil {
				n.Alive = true // no members table: a live lease is the sign of life
			}
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

// GroupRouter says where a group's commands run when crewcast is one of
// several nodes (tracker.Tracker implements it).
type GroupRouter interface {
	// GroupOwner returns local when this node holds the group's shard, else
	// the advertise URL of the node that does ("" while it is moving).
	GroupOwner(ctx context.Context, id string) (url string, local bool, err error)
}

// forwardedHeader carries the cluster secret on a command forwarded from
// another node, so that the owner never forwards it again.
const forwardedHeader = "X-Crewcast-Forwarded"

// clientAddrHeader carries, on a forwarded command, the address the
// client's request came from: the owner audits the command (docs/design.md §14,
// "from which address") and would otherwise see the forwarding node's.
// It is believed only on a request that carries the cluster secret.
const clientAddrHeader = "X-Crewcast-Client-Addr"

// movingRetryAfter is the Retry-After (seconds) while a group's shard moves.
const movingRetryAfter = "1"

// isGroupCommand reports whether a route changes one existing group: those
// run on the node that owns the group (docs/design.md §9).
func isGroupCommand(rt route) bool {
	return rt.Method == http.MethodPost && strings.HasPrefix(rt.Pattern, "/v1/groups/{id}/")
}

// forwardToOwner runs a group command on its owner: it answers true when it
// answered the request (forwarded, or 503 while the shard moves) and false
// when the command runs here. The forwarded request keeps its credentials
// (the owner authorizes it again) and carries the cluster secret.
func (a *api) forwardToOwner(w http.ResponseWriter, r *http.Request) (bool, error) {
	id := r.PathValue("id")
	url, local, err := a.cfg.Router.GroupOwner(r.Context(), id)
	if err != nil {
		return true, err
	}
	if local {
		return false, nil
	}
	moving := func() error {
		e := newError(http.StatusServiceUnavailable, codeUnavailable, "the group is moving between nodes, try again")
		e.Header = http.Header{"Retry-After": {movingRetryAfter}}
		return e
	}
	if url == "" || a.cfg.ClusterSecret == "" {
		return true, moving()
	}
	if a.trustedForward(r) {
		// Forwarded here by a node that thought we own it: never bounce.
		return true, moving()
	}
	target, err := neturl.Parse(url)
	if err != nil {
		return true, fmt.Errorf("owner's advertise URL %q: %w", url, err)
	}
	var proxyErr error
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Set(forwardedHeader, a.cfg.ClusterSecret)
			pr.Out.Header.Set(clientAddrHeader, a.clientAddr(pr.In)) // never what the client claimed
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { proxyErr = err },
	}
	p.ServeHTTP(w, r)
	if proxyErr != nil {
		a.log.Warn("forward to owner failed", "err", proxyErr)
		return true, moving()
	}
	return true, nil
}

// trustedForward reports whether r was forwarded by a node of this
// cluster (constant-time compare of the secret).
func (a *api) trustedForward(r *http.Request) bool {
	got := r.Header.Get(forwardedHeader)
	return got != "" && a.cfg.ClusterSecret != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.ClusterSecret)) == 1
}
