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
)

// Issue 32 item 4: recipients the carrier filtered (30007), refused for an
// unregistered sender (30034) or could not reach (30003) each show their own
// error_class with plain-language detail and a link, in the group, in the
// deliveries report (also filtered by class) and in the summary's counts.
// Sent through the real Twilio adapter to the simulator's Twilio API.
func TestCarrierTruthThroughTheAPI(t *testing.T) {
	// Serial: it waits for "complete", which needs the 30034 report to
	// arrive after the group stopped sending (a sender-blaming report
	// pauses a sending group, group.applyObserved); under the load of
	// parallel tests it once arrived first and the group paused.
	forEachEngine(t, func(t *testing.T, eng engine) {
		to := numbers(4)
		want := map[string]struct{ code, class, words string }{
			to[0]: {"30007", "filtered", "spam"},
			to[1]: {"30034", "unregistered", "not registered"},
			to[2]: {"30003", "unreachable", "unreachable"},
		}
		faults := sim.Faults{DelayMS: [2]int{0, 5}, Script: map[string]string{to[3]: "deliver"}}
		for n, w := range want {
			faults.Script[n] = "fail:" + w.code
		}
		seed := int64(5)
		sm, err := sim.New(sim.Config{Seed: &seed, Faults: faults, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		simURL, err := sm.Start(context.Background(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sm.Stop(context.Background()) })
		k := sm.Keys()
		srv := start(t, eng, sim.Faults{}, func(c *server.Config) {
			c.Provider, c.TwilioAPIBase = server.ProviderTwilio, simURL
			c.TwilioAccountSID, c.TwilioAuthToken = k.TwilioAccountSID, k.TwilioAuthToken
		})
		id := createGroup(t, srv, to)
		await(t, srv, id, 20*time.Second, "complete", complete)

		type rec struct {
			Number      string `json:"number"`
			Status      string `json:"status"`
			ErrorCode   string `json:"error_code"`
			ErrorClass  string `json:"error_class"`
			ErrorDetail string `json:"error_detail"`
			ErrorURL    string `json:"error_url"`
		}
		check := func(where string, rs []rec) {
			t.Helper()
			seen := 0
			for _, r := range rs {
				w, ok := want[r.Number]
				if !ok {
					continue
				}
				seen++
				if r.Status != "failed" || r.ErrorCode != w.code || r.ErrorClass != w.class ||
					!strings.Contains(r.ErrorDetail, w.words) || r.ErrorURL != "https://www.twilio.com/docs/api/errors/"+w.code {
					t.Errorf("%s: %+v, want failed %s class %s with detail saying %q and the code's page", where, r, w.code, w.class, w.words)
				}
			}
			if seen != len(want) {
				t.Errorf("%s: %d of the %d failed recipients listed", where, seen, len(want))
			}
		}
		get := func(path string, v any) {
			t.Helper()
			code, b := apiDo(t, srv, http.MethodGet, path, nil)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", path, code, b)
			}
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("GET %s: %v: %s", path, err, b)
			}
		}
		var g struct{ Recipients []rec }
		get("/v1/groups/"+id, &g)
		check("group", g.Recipients)
		var d struct{ Deliveries []rec }
		get("/v1/reports/deliveries?group_id="+id, &d)
		check("deliveries", d.Deliveries)
		for _, class := range []string{"filtered", "unregistered", "unreachable"} {
			var f struct{ Deliveries []rec }
			get("/v1/reports/deliveries?group_id="+id+"&error_class="+class, &f)
			if len(f.Deliveries) != 1 || f.Deliveries[0].ErrorClass != class {
				t.Errorf("deliveries?error_class=%s = %+v, want the one recipient", class, f.Deliveries)
			}
		}
		var c struct{ Deliveries []rec }
		get("/v1/reports/deliveries?group_id="+id+"&error_class=carrier", &c)
		if len(c.Deliveries) != 0 {
			t.Errorf("deliveries?error_class=carrier = %+v, want none: each failure has a carrier verdict", c.Deliveries)
		}
		var s struct {
			ByStatus      map[string]int `json:"by_status"`
			ByErrorClass  map[string]int `json:"by_error_class"`
			TopErrorCodes []struct {
				Code, Class string
				Count       int
			} `json:"top_error_codes"`
		}
		get("/v1/reports/summary?group_id="+id, &s)
		for _, class := range []string{"filtered", "unregistered", "unreachable"} {
			if s.ByErrorClass[class] != 1 {
				t.Errorf("summary by_error_class = %v, want %s: 1", s.ByErrorClass, class)
			}
		}
		if s.ByErrorClass["carrier"] != 0 || s.ByStatus["failed"] != 3 {
			t.Errorf("summary %+v: carrier 0 and 3 failed wanted", s)
		}
		for _, tc := range s.TopErrorCodes {
			if w := want[to[map[string]int{"30007": 0, "30034": 1, "30003": 2}[tc.Code]]]; tc.Class != w.class {
				t.Errorf("top_error_codes %+v: class %q, want %q", tc, tc.Class, w.class)
			}
		}
	})
}
