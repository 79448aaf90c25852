package server_test

import (
	"context"
	"encoding/json"
	"net/http"
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
