package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
)

type debugCluster struct {
	Node  string `json:"node"`
	Nodes []struct {
		ID           string `json:"id"`
		AdvertiseURL string `json:"advertise_url"`
		Alive        bool   `json:"alive"`
		Shards       int    `json:"shards"`
	} `json:"nodes"`
	Group *struct {
		ID    string `json:"id"`
		Owner string `json:"owner"`
	} `json:"group"`
}

func clusterView(t *testing.T, srv *server.Server, query string) debugCluster {
	t.Helper()
	code, body := apiDo(t, srv, "GET", "/debug/cluster"+query, nil)
	if code != http.StatusOK {
		t.Fatalf("/debug/cluster: %d %s", code, body)
	}
	var v debugCluster
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Two nodes on one PostgreSQL: they split the shards evenly, a group
// created on either lands on a shard that node holds, and a command sent
// to the other node is forwarded to the owner (with the cluster secret) or,
// without a secret, answered 503 with Retry-After.
func TestClusterCommandsReachTheOwner(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		if eng.name != "postgres" {
			t.Skip("several nodes need PostgreSQL; SQLite is one node (TestSecondServerOnOneSQLiteFileRefuses)")
		}
		testClusterCommands(t, eng)
	})
}

func testClusterCommands(t *testing.T, eng engine) {
	node := func(id, secret string) *server.Server {
		return start(t, eng, sim.Faults{}, func(c *server.Config) {
			c.Cluster = server.ClusterConfig{NodeID: id, LeaseTTL: 2 * time.Second, Secret: secret}
			// One send per 10 s: the groups below stay cancelable.
			c.SendRate = 0.1
		})
	}
	a := node("node-a", "s3cret")
	b := node("node-b", "s3cret")
	deadline := time.Now().Add(20 * time.Second)
	for {
		v := clusterView(t, a, "")
		if len(v.Nodes) == 2 && v.Nodes[0].Shards == 32 && v.Nodes[1].Shards == 32 && v.Nodes[0].Alive && v.Nodes[1].Alive {
			// Each node knows the others' advertise URLs (members table).
			if v.Nodes[0].AdvertiseURL != a.URL() || v.Nodes[1].AdvertiseURL != b.URL() {
				t.Fatalf("advertise URLs %+v, want %s and %s", v.Nodes, a.URL(), b.URL())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no even split: %+v", v.Nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, creator := range []*server.Server{a, b} {
		id := createGroup(t, creator, []string{"+15550100001", "+15550100002", "+15550100003"})
		v := clusterView(t, creator, "?group="+id)
		if v.Group == nil || v.Group.Owner != v.Node {
			t.Fatalf("group %s created on %s is owned by %+v", id, v.Node, v.Group)
		}
		other := a
		if creator == a {
			other = b
		}
		code, body := apiDo(t, other, "POST", "/v1/groups/"+id+"/cancel", nil)
		if code != http.StatusOK {
			t.Fatalf("cancel through the other node: %d %s", code, body)
		}
		code, body = apiDo(t, other, "GET", "/v1/groups/"+id, nil)
		var g struct {
			Status string `json:"status"`
		}
		// Only the owner's commit makes it canceled: the other node's
		// would be fenced (503).
		if code != http.StatusOK || json.Unmarshal(body, &g) != nil || g.Status != "canceled" {
			t.Fatalf("group after a forwarded cancel: %d %s", code, body)
		}
	}

	// A third node without the secret cannot forward: 503 + Retry-After.
	c := node("node-c", "")
	deadline = time.Now().Add(20 * time.Second)
	for {
		v := clusterView(t, c, "")
		if len(v.Nodes) == 3 && v.Nodes[2].Shards >= 21 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-c got no share: %+v", v.Nodes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	id := createGroup(t, a, []string{"+15550100003"})
	req, _ := http.NewRequest("POST", c.URL()+"/v1/groups/"+id+"/cancel", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("cancel through a node without the secret: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// An event stream opened on a node that does not own the group shows the
// owner's commits live (NOTIFY crewcast_changes), and resumes with
// Last-Event-ID on yet another node without a gap.
func TestClusterStreamOnAnyNode(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		if eng.name != "postgres" {
			t.Skip("several nodes need PostgreSQL; SQLite is one node (TestSecondServerOnOneSQLiteFileRefuses)")
		}
		node := func(id string) *server.Server {
			return start(t, eng, sim.Faults{}, func(c *server.Config) {
				c.Cluster = server.ClusterConfig{NodeID: id, LeaseTTL: 2 * time.Second, Secret: "s3cret"}
				c.SendRate = 0.1 // the group stays cancelable
			})
		}
		a, b := node("node-a"), node("node-b")
		deadline := time.Now().Add(20 * time.Second)
		for {
			v := clusterView(t, a, "")
			if len(v.Nodes) == 2 && v.Nodes[0].Shards == 32 && v.Nodes[1].Shards == 32 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no even split: %+v", v.Nodes)
			}
			time.Sleep(50 * time.Millisecond)
		}
		id := createGroup(t, a, []string{"+15550100001", "+15550100002", "+15550100003"})
		req, _ := http.NewRequest("GET", b.URL()+"/v1/groups/"+id+"/stream", nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		lines := make(chan string, 100)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		await := func(want string) string {
			t.Helper()
			lastID := ""
			timeout := time.After(10 * time.Second)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("stream ended before %q", want)
					}
					if strings.HasPrefix(l, "id: ") {
						lastID = strings.TrimPrefix(l, "id: ")
					}
					if strings.Contains(l, want) {
						return lastID
					}
				case <-timeout:
					t.Fatalf("no %q on node-b's stream within 10 s", want)
				}
			}
		}
		await(`"group.created"`)
		if code, body := apiDo(t, a, "POST", "/v1/groups/"+id+"/cancel", nil); code != http.StatusOK {
			t.Fatalf("cancel: %d %s", code, body)
		}
		canceledID := await(`"group.canceled"`)
		// Resume on the owner from before the cancel: it is replayed.
		seq, _ := strconv.Atoi(canceledID)
		req2, _ := http.NewRequest("GET", a.URL()+"/v1/groups/"+id+"/stream", nil)
		req2.Header.Set("Authorization", "Bearer "+adminKey)
		req2.Header.Set("Last-Event-ID", strconv.Itoa(seq-1))
		resp2, err := http.DefaultClient.Do(req2)
		if err != nil {
			t.Fatal(err)
		}
		defer resp2.Body.Close()
		sc := bufio.NewScanner(resp2.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "id: ") {
				if l != "id: "+canceledID {
					t.Fatalf("resume after %d began at %q, want id %s", seq-1, l, canceledID)
				}
				break
			}
		}
	})
}

// An erasure asked on one node changes a group another node owns on that
// owner (issue 20, docs/design.md §9): the owner's actor commits the person's
// pending send as opted_out and rewrites the group, every journal event
// stays stamped by the owner, and the person's number, and everything a
// template rendered from their contact, is gone from the group and from
// every table.
func TestClusterErasureRunsOnTheOwner(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		if eng.name != "postgres" {
			t.Skip("several nodes need PostgreSQL; SQLite is one node (TestSecondServerOnOneSQLiteFileRefuses)")
		}
		node := func(id string) *server.Server {
			return start(t, eng, sim.Faults{}, func(c *server.Config) {
				c.Cluster = server.ClusterConfig{NodeID: id, LeaseTTL: 2 * time.Second, Secret: "s3cret"}
				c.SendRate = 0.1 // one send per 10 s: the person's send is still pending
			})
		}
		a, b := node("node-a"), node("node-b")
		awaitEvenSplit(t, a)
		const who, other = erasedNumber, "+15550100001"
		// The person is a saved contact sent a template with their name
		// and field: the owner's rewrite must take all of it.
		contactID := saveErasedPerson(t, a)
		id := createTemplateGroup(t, b, []string{other, who}, nil)
		if _, body := apiDo(t, a, "GET", "/v1/groups/"+id, nil); !strings.Contains(string(body), erasedText) {
			t.Fatalf("the group does not show the person's rendered text before the erasure: %s", body)
		}
		if v := clusterView(t, a, "?group="+id); v.Group == nil || v.Group.Owner != "node-b" {
			t.Fatalf("group %s is owned by %+v, want node-b", id, v.Group)
		}
		code, body := apiDo(t, a, "POST", "/v1/erasure", map[string]string{"number": who})
		if code != http.StatusOK {
			t.Fatalf("erasure on the node that does not own the group: %d %s", code, body)
		}
		var rep struct {
			Erased bool `json:"erased"`
			Groups int  `json:"groups"`
		}
		if json.Unmarshal(body, &rep) != nil || !rep.Erased || rep.Groups != 1 {
			t.Fatalf("erasure report: %s", body)
		}
		code, body = apiDo(t, a, "GET", "/v1/groups/"+id+"/recipients", nil)
		if code != http.StatusOK || strings.Contains(string(body), who) || !strings.Contains(string(body), other) {
			t.Fatalf("recipients after the erasure: %d %s", code, body)
		}
		var recips struct {
			Data []struct {
				Number string `json:"number"`
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &recips); err != nil {
			t.Fatal(err)
		}
		for _, r := range recips.Data {
			if r.Number != other && r.Status != "opted_out" {
				t.Fatalf("the erased person's send: %+v (want opted_out: the owner stopped it)", r)
			}
		}
		// Every commit of the group, the erasure's included, is the owner's.
		code, body = apiDo(t, a, "GET", "/debug/groups/"+id+"/journal", nil)
		var journal struct {
			Events []struct {
				Type string `json:"type"`
				Node string `json:"node"`
			} `json:"events"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &journal) != nil {
			t.Fatalf("journal: %d %s", code, body)
		}
		suppressed := false
		for _, e := range journal.Events {
			if e.Node != "node-b" {
				t.Fatalf("event %s committed by %s, not the owner", e.Type, e.Node)
			}
			suppressed = suppressed || e.Type == "recipient.suppressed"
		}
		if !suppressed {
			t.Fatalf("no recipient.suppressed in %s", body)
		}
		// Nothing derived from the person is left, on either node or in
		// any table.
		hits := append(apiTraces(t, a, []string{id}, erasedValues(contactID)), apiTraces(t, b, []string{id}, erasedValues(contactID))...)
		if hits = append(hits, postgresTraces(t, eng, erasedValues(contactID))...); len(hits) > 0 {
			t.Fatalf("after the erasure the person's values are still kept:\n%s", strings.Join(hits, "\n"))
		}
		// The node-to-node route refuses a caller without the secret.
		req, _ := http.NewRequest("POST", b.URL()+"/cluster/v1/groups/"+id+"/erasure", strings.NewReader(`{"number":"`+other+`","replacement":"x"}`))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("node-to-node erasure without the secret: %d", resp.StatusCode)
		}
	})
}
