package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/tracker"
)

// Issue 27 item 4: without CREWCAST_HASH_KEY (the default) a person who
// replied STOP and was then erased must still never be texted again: the
// server generates a hash key on first start, keeps it in the database,
// and keeps the erased opt-out as its keyed hash, across a restart.
func TestErasedStopStaysWithoutConfiguredHashKey(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		to := numbers(2)
		srv1 := start(t, eng, sim.Faults{}, nil)
		id := createGroup(t, srv1, to)
		await(t, srv1, id, 20*time.Second, "complete", complete)
		if _, err := srv1.Sim().Inbound(ctx, to[0], testFrom, "STOP"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			sup, err := srv1.Store().Suppressed(ctx, []string{to[0]})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := sup[to[0]]; ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the STOP never put the number on the suppression list")
			}
			time.Sleep(20 * time.Millisecond)
		}
		code, b := apiDo(t, srv1, http.MethodPost, "/v1/erasure", map[string]string{"number": to[0]})
		var rep tracker.ErasureReport
		if code != http.StatusOK || json.Unmarshal(b, &rep) != nil || !rep.Erased || !rep.OptOutKept || rep.Replacement != "keyed_hash" {
			t.Fatalf("POST /v1/erasure without a configured hash key: %d %s", code, b)
		}
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := srv1.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}

		srv2 := start(t, eng, sim.Faults{}, nil)
		id2 := createGroup(t, srv2, to[:1])
		await(t, srv2, id2, 20*time.Second, "complete", complete)
		if d := deliveries(t, srv2, id2); d[to[0]].Status != crewcast.StatusOptedOut {
			t.Errorf("a new group to the erased person after a restart: %s, want opted_out", d[to[0]].Status)
		}
		if n := ledger(t, srv2)[to[0]]; n != 0 {
			t.Errorf("the erased person who sent STOP was texted %d time(s) after a restart", n)
		}
		// An operator sets CREWCAST_HASH_KEY later: the configured key
		// wins, and the opt-out kept under the stored key still holds.
		if err := srv2.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		srv3 := start(t, eng, sim.Faults{}, func(c *server.Config) { c.Retention.HashKey = []byte("set-later") })
		id3 := createGroup(t, srv3, to[:1])
		await(t, srv3, id3, 20*time.Second, "complete", complete)
		if d := deliveries(t, srv3, id3); d[to[0]].Status != crewcast.StatusOptedOut {
			t.Errorf("a new group to the erased person after CREWCAST_HASH_KEY was set: %s, want opted_out", d[to[0]].Status)
		}
	})
}
