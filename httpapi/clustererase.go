package httpapi

import (
	"context"
	"net/http"

	"github.com/crewcast/crewcast/store"
)

// Node-to-node erasure (docs/design.md §6, §9): an erasure asked on one node runs
// each group's step on the node that owns the group, through this route.
// It is not part of the public API: only a caller carrying the cluster
// secret (X-Crewcast-Forwarded, compared in constant time) is served, and
// it is mounted only on cluster nodes.

// ClusterErasurePath is the route a node calls on a group's owner;
// {id} is the group.
const ClusterErasurePath = "/cluster/v1/groups/{id}/erasure"

// GroupEraser runs one group's step of an erasure on this node, the
// group's owner (tracker.Tracker implements it).
type GroupEraser interface {
	EraseInGroup(ctx context.Context, id, number, replacement string) (store.ErasedCounts, error)
}

// ClusterErasure is the body of a ClusterErasurePath call.
type ClusterErasure struct {
	Number      string `json:"number"`
	Replacement string `json:"replacement"`
}

// ClusterErasureResult is its answer.
type ClusterErasureResult struct {
	Changed store.ErasedCounts `json:"changed"`
}

// clusterErase serves ClusterErasurePath: 403 without the cluster secret,
// 503 with Retry-After when this node does not own the group (the caller
// asks the owner again).
func (a *api) clusterErase(w http.ResponseWriter, r *http.Request) {
	const label = "POST " + ClusterErasurePath
	fail := func(err error) { a.writeError(w, r, label, err) }
	ge, ok := a.cfg.Router.(GroupEraser)
	if !ok {
		fail(notFound("route"))
		return
	}
	if !a.trustedForward(r) {
		fail(newError(http.StatusForbidden, codeForbidden, "node-to-node route: the cluster secret is required"))
		return
	}
	var body ClusterErasure
	if err := decodeJSON(w, r, 4<<10, &body); err != nil {
		fail(err)
		return
	}
	counts, err := ge.EraseInGroup(r.Context(), r.PathValue("id"), body.Number, body.Replacement)
	if err != nil {
		e, _ := publicError(err)
		if e.Status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", movingRetryAfter)
		}
		fail(err)
		return
	}
	writeJSON(w, http.StatusOK, ClusterErasureResult{Changed: counts})
}
