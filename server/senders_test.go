package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
)

// A served crewcast refuses a group from an unapproved 10DLC sender
// (sender_unregistered) unless it runs with AllowUnregistered, and lists
// its senders as healthy for the providers it is configured with (the
// demo: both, docs/design.md §16).
func TestServerSendersAndRegistrationGate(t *testing.T) {
	t.Parallel() // its own server and database
	for _, allow := range []bool{false, true} {
		eng := engine{name: "sqlite", db: t.TempDir() + "/crewcast.db"}
		srv := start(t, eng, sim.Faults{}, func(c *server.Config) { c.AllowUnregistered = allow })
		{
			for _, s := range []map[string]any{
				{"number": "+15550100090", "provider": "telnyx", "registration": map[string]any{"kind": "10dlc", "status": "pending"}},
				{"number": "+15550100091", "provider": "twilio"},
			} {
				if code, b := apiDo(t, srv, "POST", "/v1/senders", s); code != http.StatusCreated {
					t.Fatalf("add sender: %d %s", code, b)
				}
			}
			code, b := apiDo(t, srv, "GET", "/v1/senders", nil)
			var list struct {
				Senders []struct {
					Number  string `json:"number"`
					Healthy bool   `json:"healthy"`
				} `json:"senders"`
			}
			if err := json.Unmarshal(b, &list); err != nil || code != 200 || len(list.Senders) != 2 ||
				!list.Senders[0].Healthy || !list.Senders[1].Healthy {
				t.Fatalf("senders: %d %s (the demo has both providers)", code, b)
			}
		}
		body := map[string]any{"from": "+15550100090", "to": []string{"+15550109001"}, "text": "Shift open"}
		code, b := apiDo(t, srv, "POST", "/v1/groups", body)
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		switch {
		case !allow && (code != http.StatusUnprocessableEntity || e.Error.Code != "sender_unregistered"):
			t.Fatalf("create from a pending 10DLC sender: %d %s", code, b)
		case allow && code != http.StatusCreated:
			t.Fatalf("create with AllowUnregistered: %d %s", code, b)
		}
	}
}
