package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/store"
)

// benchCallout measures a callout that fills (docs/architecture.md, "Waves
// and exact quotas") on SQLite: a group of calloutN people needing
// calloutNeed, in waves of calloutWave (every hour, so only wave 1 goes).
// Once wave 1 is out, calloutNeed-1 people of it answer YES through the
// simulator (committed, unmeasured); then the last YES is injected and
// callout_fill_ms is the time from its injection until the commit that
// makes everyone not texted not_needed is visible in the store (the
// webhook, its inbox commit, the settle wait of the exact quota, the
// selection and the not_needed commit). Sending is unpaced.
func benchCallout(ctx context.Context, c config, rep harness.Reporter) error {
	n, need, wave := c.calloutN, c.calloutNeed, c.calloutWave
	cc, err := harness.Start(ctx, harness.Options{DB: filepath.Join(c.tmp, "callout.db"), DemoFaults: sim.Faults{}})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	numbers := harness.Numbers(7_000_000, n)
	body, err := json.Marshal(map[string]any{"from": harness.SenderNumber, "to": numbers, "text": "Callout: north gate by 7",
		"responses": []map[string]string{{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "Cannot", "ack": "no"}},
		"quorum":    map[string]any{"response": "1", "count": need}, "waves": map[string]any{"size": wave, "every": "1h"}})
	if err != nil {
		return err
	}
	var created struct {
		ID string `json:"id"`
	}
	rep.Progress("callout: %d people, need %d, waves of %d", n, need, wave)
	if err := post(ctx, cc, "/v1/groups?recipients=0", "application/json", body, &created); err != nil {
		return err
	}
	id := created.ID
	if _, err := waitCounts(ctx, cc, id, func(c map[string]int) bool { return c["delivered"] == wave }); err != nil {
		return err
	}
	for _, num := range numbers[:need-1] {
		if _, err := cc.Sim.Inbound(ctx, num, harness.SenderNumber, "1"); err != nil {
			return err
		}
	}
	if _, err := waitCounts(ctx, cc, id, func(c map[string]int) bool { return c["selected"] == need-1 }); err != nil {
		return err
	}
	start := time.Now()
	if err := harness.Profiled(c.profile, "callout_fill", func() error {
		if _, err := cc.Sim.Inbound(ctx, numbers[need-1], harness.SenderNumber, "1"); err != nil {
			return err
		}
		if _, err := waitCounts(ctx, cc, id, func(c map[string]int) bool { return c["responses.1"] == need }); err != nil {
			return err
		}
		rep.Progress("callout: the last YES committed after %s", time.Since(start).Round(time.Millisecond))
		_, err := waitCounts(ctx, cc, id, func(c map[string]int) bool { return c["not_needed"] == n-wave })
		return err
	}); err != nil {
		return err
	}
	took := time.Since(start)
	row, err := cc.Store().GetGroup(ctx, id)
	if err != nil {
		return err
	}
	if row.Counts["selected"] != need {
		return fmt.Errorf("callout: %d selected, want %d", row.Counts["selected"], need)
	}
	rep.Progress("callout: filled, %d not needed, in %s", n-wave, took.Round(time.Millisecond))
	rep.Result("callout_fill_ms", harness.Ms(took), "ms")
	return nil
}

func waitCounts(ctx context.Context, cc *harness.Crewcast, id string, done func(map[string]int) bool) (store.GroupRow, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return cc.WaitGroup(ctx, id, func(r store.GroupRow) bool { return done(r.Counts) })
}
