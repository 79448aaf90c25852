package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/crewcast/crewcast/store"
)

func TestDebugGroupJournalStamps(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createGroup("+15550100001", "+15550100002")
	e.sendAndDeliver(id, 0, true)

	for _, key := range []string{"send", "read"} {
		if resp, _ := e.do("GET", "/debug/groups/"+id+"/journal", "", key, nil); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s key: %d, want 403", key, resp.StatusCode)
		}
	}
	resp, body := e.do("GET", "/debug/groups/"+id+"/journal", "", "admin", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var out struct {
		Events []struct {
			Seq   uint64 `json:"seq"`
			Type  string `json:"type"`
			Epoch uint64 `json:"epoch"`
			Node  string `json:"node"`
			At    string `json:"at"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Events) < 4 {
		t.Fatalf("%d events, want the creation, claim, outcome and observation: %s", len(out.Events), body)
	}
	for i, ev := range out.Events {
		// The single node holds epoch 1 of every shard; the store's owner
		// name defaults to "local".
		if ev.Seq != uint64(i+1) || ev.Epoch != 1 || ev.Node != "local" || ev.Type == "" || ev.At == "" {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	if resp, _ := e.do("GET", "/debug/groups/nope/journal", "", "admin", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown group: %d, want 404", resp.StatusCode)
	}
}

func TestDebugCluster(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Node, c.AdvertiseURL = "node-1", "http://10.0.0.1:8080" })
	id := e.createGroup("+15550100001")
	if resp, _ := e.do("GET", "/debug/cluster", "", "read", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("read key: %d, want 403", resp.StatusCode)
	}
	resp, body := e.do("GET", "/debug/cluster?group="+id, "", "admin", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var out struct {
		Node  string `json:"node"`
		Nodes []struct {
			ID           string `json:"id"`
			AdvertiseURL string `json:"advertise_url"`
			Alive        bool   `json:"alive"`
			Shards       int    `json:"shards"`
		} `json:"nodes"`
		Leases []struct {
			Shard     int     `json:"shard"`
			Owner     string  `json:"owner"`
			Epoch     uint64  `json:"epoch"`
			ExpiresAt *string `json:"expires_at"`
		} `json:"leases"`
		Group *struct {
			ID    string `json:"id"`
			Shard int    `json:"shard"`
			Owner string `json:"owner"`
		} `json:"group"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Node != "node-1" || len(out.Leases) != store.NumShards {
		t.Fatalf("node %q, %d leases: %s", out.Node, len(out.Leases), body)
	}
	for _, l := range out.Leases {
		if l.Owner != "local" || l.Epoch != 1 || l.ExpiresAt != nil {
			t.Fatalf("lease %+v, want local's at epoch 1 without expiry", l)
		}
	}
	// This node (by its configured name) and the store's lease owner.
	if len(out.Nodes) != 2 || out.Nodes[0].ID != "local" || out.Nodes[0].Shards != store.NumShards || !out.Nodes[0].Alive ||
		out.Nodes[1].ID != "node-1" || out.Nodes[1].AdvertiseURL != "http://10.0.0.1:8080" || !out.Nodes[1].Alive {
		t.Fatalf("nodes %+v", out.Nodes)
	}
	if g := out.Group; g == nil || g.ID != id || g.Shard != store.ShardOf(id) || g.Owner != "local" {
		t.Fatalf("group %+v", out.Group)
	}
	if resp, _ := e.do("GET", "/debug/cluster?group=nope", "", "admin", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown group: %d, want 404", resp.StatusCode)
	}
}
