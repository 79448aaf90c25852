package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/crewcast/crewcast/httpapi"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/postgres"
	"github.com/crewcast/crewcast/tracker"
)

// Several nodes on one PostgreSQL (docs/design.md §9). A server is one node of a
// cluster when its database is PostgreSQL and it was given a node id or an
// advertise URL; otherwise it is a single node exactly as before (it holds
// every shard without expiry).

// ClusterConfig is the part of Config for several nodes.
type ClusterConfig struct {
	// NodeID names this node in leases and the nodes table (default: host
	// name plus a random suffix).
	NodeID string
	// AdvertiseURL is how the other nodes reach this one.
	AdvertiseURL string
	// LeaseTTL is the shard lease time to live (default 10 s).
	LeaseTTL time.Duration
	// Secret authenticates node-to-node calls (CREWCAST_CLUSTER_SECRET):
	// group commands forwarded to their owner. Without it, a command for a
	// group owned by another node is answered 503 instead of forwarded.
	Secret string
}

func (c ClusterConfig) enabled() bool { return c.NodeID != "" || c.AdvertiseURL != "" }

func (c ClusterConfig) withDefaults() (ClusterConfig, error) {
	if c.NodeID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "node"
		}
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return c, err
		}
		c.NodeID = host + "-" + hex.EncodeToString(b[:])
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 10 * time.Second
	}
	return c, nil
}

// openClusterStore opens PostgreSQL holding no lease: the tracker's lease
// keeper takes them.
func (s *Server) openClusterStore(ctx context.Context) (store.Store, error) {
	cfg := s.cfg
	if !isPostgresURL(cfg.DB) {
		return nil, errors.New("several nodes need PostgreSQL (--db postgres://…); SQLite runs exactly one node")
	}
	cc, err := cfg.Cluster.withDefaults()
	if err != nil {
		return nil, err
	}
	if cc.AdvertiseURL == "" {
		cc.AdvertiseURL = s.url // the listen address: right on one machine
	}
	s.cfg.Cluster = cc
	// A node paused mid-commit must not hold its lease rows locked past
	// the lease: PostgreSQL ends its transaction after half the TTL.
	return postgres.Open(ctx, postgres.Config{URL: cfg.DB, Schema: cfg.DBSchema, Now: cfg.Clock.Now, Logger: cfg.Logger,
		Owner: cc.NodeID, Leased: true, IdleInTxLimit: cc.LeaseTTL / 2})
}

// startCluster runs the lease keeper of a started tracker.
func (s *Server) startCluster() error {
	cc := s.cfg.Cluster
	leases, ok1 := s.st.(store.ExpiringLeases)
	members, ok2 := s.st.(store.Membership)
	if !ok1 || !ok2 {
		return fmt.Errorf("store %s cannot hold expiring leases", s.st.Engine())
	}
	notifier, _ := s.st.(store.Notifier) // webhooks for another node's group wake it at once
	if cc.Secret == "" {
		s.cfg.Logger.Warn("CREWCAST_CLUSTER_SECRET is not set: commands for groups another node owns are answered 503 instead of forwarded")
	}
	return s.tr.StartCluster(tracker.ClusterConfig{Node: cc.NodeID, AdvertiseURL: cc.AdvertiseURL, TTL: cc.LeaseTTL,
		Leases: leases, Members: members, Notifier: notifier, EraseRemote: s.eraseRemote})
}

// clusterClient calls other nodes (an erasure's step on a group's owner).
var clusterClient = &http.Client{Timeout: 60 * time.Second}

// eraseRemote runs one group's erasure step on its owner (docs/design.md §6, §9),
// authenticated by the cluster secret. A 503 (the shard is moving, or the
// owner is not reachable) is tracker.ErrUnavailable: the tracker asks again.
func (s *Server) eraseRemote(ctx context.Context, ownerURL, groupID, number, replacement string) (store.ErasedCounts, error) {
	secret := s.cfg.Cluster.Secret
	if secret == "" {
		return nil, fmt.Errorf("%w: CREWCAST_CLUSTER_SECRET is not set: another node's group cannot be erased from here", tracker.ErrUnavailable)
	}
	body, err := json.Marshal(httpapi.ClusterErasure{Number: number, Replacement: replacement})
	if err != nil {
		return nil, err
	}
	path := strings.Replace(httpapi.ClusterErasurePath, "{id}", url.PathEscape(groupID), 1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(ownerURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Crewcast-Forwarded", secret)
	resp, err := clusterClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: erase on the group's owner: %w", tracker.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return nil, fmt.Errorf("%w: the group's owner answered 503", tracker.ErrUnavailable)
	case resp.StatusCode != http.StatusOK:
		// The answer is crewcast's own error body: no number in it.
		return nil, fmt.Errorf("erase on the group's owner: %d %s", resp.StatusCode, raw)
	}
	var out httpapi.ClusterErasureResult
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("erase on the group's owner: %w", err)
	}
	return out.Changed, nil
}

// groupRouter is the tracker when this server is a cluster node: group
// commands then run on their owner (nil for a single node).
func (s *Server) groupRouter() httpapi.GroupRouter {
	if !s.cfg.Cluster.enabled() {
		return nil
	}
	return s.tr
}

// clusterNodes lists the members for /debug/cluster (nil for a single node).
func (s *Server) clusterNodes() func() []store.Node {
	if !s.cfg.Cluster.enabled() {
		return nil
	}
	return s.tr.ClusterNodes
}
