package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/crewcast/crewcast/store"
)

// ownerAt is a GroupRouter that says another node owns every group.
type ownerAt struct{ url string }

func (o ownerAt) GroupOwner(context.Context, string) (string, bool, error) { return o.url, false, nil }

// The audit line says from which address a change came (docs/design.md §14).
// A group command sent to a node that does not own the group is forwarded
// to the owner, which audits it: the forwarder passes the client's
// address along, and the owner believes it only from a node that carries
// the cluster secret. Failed before the change: the owner recorded the
// forwarding node's address.
func TestForwardedCommandKeepsTheClientAddress(t *testing.T) {
	// The forwarder's side: the owner receives the client's address.
	var mu sync.Mutex
	var got http.Header
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"not_found","message":"group not found"}}`))
	}))
	defer owner.Close()
	e := newEnv(t, func(c *Config) { c.Router, c.ClusterSecret = ownerAt{owner.URL}, "s3cret" })
	if r, b := e.do("POST", "/v1/groups/grp_x/cancel", "", "send", map[string]string{clientAddrHeader: "192.0.2.66"}); r.StatusCode != http.StatusNotFound {
		t.Fatalf("forwarded cancel: %d %s", r.StatusCode, b)
	}
	mu.Lock()
	if got.Get(forwardedHeader) != "s3cret" || got.Get(clientAddrHeader) != "127.0.0.1" {
		t.Errorf("owner got %s=%q %s=%q, want the secret and the client's own address (not one it claimed)",
			forwardedHeader, got.Get(forwardedHeader), clientAddrHeader, got.Get(clientAddrHeader))
	}
	mu.Unlock()

	// The owner's side: the address is taken from a trusted node only.
	e = newEnv(t, func(c *Config) { c.ClusterSecret = "s3cret" })
	for _, c := range []struct{ secret, number, want string }{
		{"s3cret", "+15550100071", "192.0.2.5"},
		{"wrong", "+15550100072", "127.0.0.1"},
		{"", "+15550100073", "127.0.0.1"},
	} {
		h := map[string]string{clientAddrHeader: "192.0.2.5"}
		if c.secret != "" {
			h[forwardedHeader] = c.secret
		}
		if r, b := e.do("POST", "/v1/suppressions", `{"number":"`+c.number+`"}`, "send", h); r.StatusCode != http.StatusCreated {
			t.Fatalf("suppress: %d %s", r.StatusCode, b)
		}
		entries, _, err := e.st.ListAudit(context.Background(), store.AuditQuery{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Actor.IP != c.want {
			t.Errorf("secret %q: audit %+v, want ip %s", c.secret, entries, c.want)
		}
	}
}
