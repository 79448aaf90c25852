package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/tracker"
)

// Retention and erasure through the API (issue 20): a pass on request,
// its report in GET /v1/retention and in metrics; erasure of a known, an
// unknown and a malformed number.
func TestRetentionAndErasureThroughTheAPI(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		srv := start(t, eng, sim.Faults{}, func(c *server.Config) { c.Retention.HashKey = []byte("k") })
		code, b := apiDo(t, srv, http.MethodGet, "/v1/retention", nil)
		var st tracker.RetentionStatus
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil || st.Last != nil || st.Interval != "off" || !st.Policy.HashKeySet {
			t.Fatalf("GET /v1/retention before a pass: %d %s", code, b)
		}
		if !strings.Contains(string(b), `"last":null`) {
			t.Fatalf("last must be null before the first pass: %s", b)
		}
		code, b = apiDo(t, srv, http.MethodPost, "/v1/retention/run", nil)
		var run tracker.RetentionRun
		if code != http.StatusOK || json.Unmarshal(b, &run) != nil || run.Trigger != "api" || run.FinishedAt.IsZero() {
			t.Fatalf("POST /v1/retention/run: %d %s", code, b)
		}
		code, b = apiDo(t, srv, http.MethodGet, "/v1/retention", nil)
		if code != http.StatusOK || json.Unmarshal(b, &st) != nil || st.Last == nil || st.Runs != 1 || st.Last.Trigger != "api" {
			t.Fatalf("GET /v1/retention after a pass: %d %s", code, b)
		}
		if v := counterValue(t, srv, "crewcast_retention_last_run_timestamp_seconds"); v < float64(run.StartedAt.Unix()) {
			t.Fatalf("retention metric = %v", v)
		}
		if v := counterValue(t, srv, "crewcast_retention_runs"); v != 1 {
			t.Fatalf("crewcast_retention_runs = %v", v)
		}

		to := numbers(2)
		id := createGroup(t, srv, to)
		await(t, srv, id, 20*time.Second, "complete", complete)
		if code, b := apiDo(t, srv, http.MethodPost, "/v1/suppressions", map[string]string{"number": to[0]}); code/100 != 2 {
			t.Fatalf("POST /v1/suppressions: %d %s", code, b)
		}
		code, b = apiDo(t, srv, http.MethodPost, "/v1/erasure", map[string]string{"number": to[0]})
		var rep tracker.ErasureReport
		if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || !rep.Erased || rep.Groups != 1 || rep.Replacement != "keyed_hash" || !rep.OptOutKept {
			t.Fatalf("POST /v1/erasure: %d %s", code, b)
		}
		if strings.Contains(string(b), to[0]) {
			t.Fatalf("the answer names the number in clear: %s", b)
		}
		// The erasure is audited by its keyed hash, never the number.
		if code, b := apiDo(t, srv, http.MethodGet, "/v1/audit?action=person.erased", nil); code != http.StatusOK ||
			!strings.Contains(string(b), `"person.erased"`) || !strings.Contains(string(b), rep.Subject) || strings.Contains(string(b), to[0]) {
			t.Fatalf("GET /v1/audit after erasure: %d %s", code, b)
		}
		if d := deliveries(t, srv, id); len(d) != 2 || d[to[1]].Number != to[1] {
			t.Fatalf("deliveries after erasure: %+v", d)
		} else if _, ok := d[to[0]]; ok {
			t.Fatalf("the erased number is still a delivery: %+v", d)
		}
		code, b = apiDo(t, srv, http.MethodPost, "/v1/erasure", map[string]string{"number": to[0]})
		if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || rep.Erased || !strings.Contains(rep.Message, "nothing to erase") {
			t.Fatalf("second erasure: %d %s", code, b)
		}
		if code, b = apiDo(t, srv, http.MethodPost, "/v1/erasure", map[string]string{"number": "12"}); code != http.StatusUnprocessableEntity {
			t.Fatalf("malformed number: %d %s", code, b)
		}
		// The kept opt-out is listed only as its hash, and an operator can
		// lift it by the number.
		code, b = apiDo(t, srv, http.MethodGet, "/v1/suppressions", nil)
		if code != http.StatusOK || strings.Contains(string(b), to[0]) || !strings.Contains(string(b), rep.Subject) {
			t.Fatalf("GET /v1/suppressions after erasure: %d %s", code, b)
		}
		if code, b = apiDo(t, srv, http.MethodDelete, "/v1/suppressions/"+url.PathEscape(to[0]), nil); code != http.StatusNoContent {
			t.Fatalf("DELETE the erased person's suppression: %d %s", code, b)
		}
		code, b = apiDo(t, srv, http.MethodGet, "/v1/suppressions", nil)
		if code != http.StatusOK || strings.Contains(string(b), rep.Subject) {
			t.Fatalf("GET /v1/suppressions after lifting: %d %s", code, b)
		}
	})
}
