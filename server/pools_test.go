package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// The demo serves both providers and registers a pool on both: a pool
// group through the API goes out over Telnyx and Twilio numbers, each
// person once, from the number their recipient record names; GET
// /v1/providers lists both configured with closed circuits; with Telnyx
// refusing, a new pool group goes through Twilio only.
func TestServerPoolGroupUsesBothProviders(t *testing.T) {
	eng := engine{name: "sqlite", db: t.TempDir() + "/crewcast.db"}
	srv := start(t, eng, sim.Faults{}, nil)
	if err := srv.EnsureDemoPool(context.Background()); err != nil {
		t.Fatal(err)
	}
	to := numbers(40)
	// Preview plans a pool group too; an unknown pool, or from and pool
	// both, is a field error on "pool" (400) at preview and create alike.
	if code, b := apiDo(t, srv, "POST", "/v1/groups/preview", map[string]any{"pool": server.DemoPool, "to": to, "text": "Pool call"}); code != http.StatusOK {
		t.Fatalf("preview pool group: %d %s", code, b)
	}
	for _, path := range []string{"/v1/groups/preview", "/v1/groups"} {
		for _, body := range []map[string]any{
			{"pool": "nope", "to": to[:1], "text": "x"},
			{"pool": server.DemoPool, "from": "+15550100000", "to": to[:1], "text": "x"},
		} {
			code, b := apiDo(t, srv, "POST", path, body)
			if code != http.StatusBadRequest || !strings.Contains(string(b), `"field":"pool"`) {
				t.Fatalf("%s %v: %d %s, want 400 naming the pool field", path, body, code, b)
			}
		}
	}
	// A pool with an unapproved 10DLC number is refused (sender_unregistered).
	if code, b := apiDo(t, srv, "POST", "/v1/senders", map[string]any{"number": "+15550100299", "provider": "twilio", "pool": "pending",
		"registration": map[string]any{"kind": "10dlc", "status": "pending"}}); code != http.StatusCreated {
		t.Fatalf("add sender: %d %s", code, b)
	}
	if code, b := apiDo(t, srv, "POST", "/v1/groups", map[string]any{"pool": "pending", "to": to[:1], "text": "x"}); code != http.StatusUnprocessableEntity ||
		!strings.Contains(string(b), "sender_unregistered") {
		t.Fatalf("pool with a pending 10DLC number: %d %s", code, b)
	}
	code, b := apiDo(t, srv, "POST", "/v1/groups", map[string]any{"pool": server.DemoPool, "to": to, "text": "Pool call"})
	if code != http.StatusCreated {
		t.Fatalf("create pool group: %d %s", code, b)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &created); err != nil {
		t.Fatal(err)
	}
	await(t, srv, created.ID, time.Minute, "complete", complete)
	by := map[string]int{}
	per := map[string]int{}
	for _, s := range srv.Sim().Ledger() {
		if s.Text == "Pool call" {
			by[s.Provider]++
			per[s.To]++
		}
	}
	if by["telnyx"] == 0 || by["twilio"] == 0 || by["telnyx"]+by["twilio"] != len(to) {
		t.Fatalf("sends by provider %v: want both, %d in all", by, len(to))
	}
	for n, c := range per {
		if c != 1 {
			t.Fatalf("%s texted %d times", n, c)
		}
	}
	code, b = apiDo(t, srv, "GET", "/v1/providers", nil)
	var ps struct {
		Providers []struct {
			Name       string `json:"name"`
			Configured bool   `json:"configured"`
			Circuit    string `json:"circuit"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(b, &ps); err != nil || code != 200 || len(ps.Providers) != 2 {
		t.Fatalf("providers: %d %s", code, b)
	}
	for _, p := range ps.Providers {
		if !p.Configured || p.Circuit != "closed" {
			t.Fatalf("provider %+v: want configured, closed", p)
		}
	}
	// A plain from that is no registered sender stays on --provider's
	// default: the example number goes through Telnyx.
	id := createGroup(t, srv, numbers(3))
	await(t, srv, id, time.Minute, "complete", complete)
	rows, _, err := srv.Store().ListDeliveries(context.Background(), store.DeliveryQuery{GroupID: id, Limit: 10})
	if err != nil || len(rows) != 3 {
		t.Fatalf("deliveries: %v %d", err, len(rows))
	}
	for _, s := range srv.Sim().Ledger() {
		if s.Text != "Pool call" && s.Provider != "telnyx" {
			t.Fatalf("a plain from went through %s, want the default telnyx: %+v", s.Provider, s)
		}
	}
}
