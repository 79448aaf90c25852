package sim_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
)

// Example runs the simulator in-process, as the demo provider does: sends
// go to its Handler, webhooks go to our own endpoint.
func Example() {
	events := make(chan string, 10)
	webhooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for _, ev := range []string{"message.sent", "message.finalized", "message.received"} {
			if strings.Contains(string(body), `"event_type":"`+ev+`"`) {
				events <- ev
			}
		}
	}))
	defer webhooks.Close()

	s, err := sim.New(sim.Config{
		Seed:             new(int64(7)),
		TelnyxWebhookURL: webhooks.URL + "/webhooks/telnyx",
		Faults:           sim.Faults{ReplyRate: 1, ReplyTexts: []string{"YES"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	api := httptest.NewServer(s.Handler())
	defer api.Close()
	defer s.Stop(context.Background())

	req, _ := http.NewRequest(http.MethodPost, api.URL+"/v2/messages",
		strings.NewReader(`{"from":"+15550100000","to":"+15550100001","text":"Crew call 7am"}`))
	req.Header.Set("Authorization", "Bearer "+s.Keys().TelnyxAPIKey)
	res, err := api.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, len(s.Ledger()))
	for range 3 {
		select {
		case ev := <-events:
			fmt.Println(ev)
		case <-time.After(5 * time.Second):
			fmt.Println("timeout")
		}
	}
	// Output:
	// 200 1
	// message.sent
	// message.finalized
	// message.received
}
