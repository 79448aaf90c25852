package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/store"
)

// benchFanout measures one group of fanoutN recipients sent through the
// simulator with pacing off (send rate 0) and no simulator delay or
// faults. crewcast runs the demo provider: the real Telnyx adapter sends
// over loopback HTTP to the in-process simulator, which posts signed
// message.sent and message.finalized webhooks back while the fan-out is
// still running, as Telnyx would.
//
// "Done" is the first moment the group's committed row shows no recipient
// pending or sending, i.e. every recipient is at least sent (each provider
// acceptance is committed, with its route, before it counts). The clock
// starts just before POST /v1/groups. With -fanout-receipts it also
// reports the rate until every receipt is applied; that figure is bounded
// by the simulator's eight webhook-posting workers as much as by crewcast.
func benchFanout(ctx context.Context, c config, rep harness.Reporter) error {
	cc, err := harness.Start(ctx, harness.Options{DB: filepath.Join(c.tmp, "fanout.db"), DemoFaults: sim.Faults{}})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	numbers := harness.Numbers(4_000_000, c.fanoutN)
	rep.Progress("fanout: one group of %d recipients", len(numbers))
	var (
		created, sent, final time.Duration
		row                  store.GroupRow
		id                   string
	)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := harness.Profiled(c.profile, "fanout", func() error {
		var err error
		if id, err = cc.CreateGroup(ctx, harness.SenderNumber, numbers, harness.GroupText); err != nil {
			return err
		}
		created = time.Since(start)
		row, err = cc.WaitGroup(wctx, id, harness.Settled)
		sent = time.Since(start)
		return err
	}); err != nil {
		return err
	}
	if c.fanoutReceipts {
		rep.Progress("fanout: all sent after %s; waiting for the delivery receipts", sent.Round(time.Millisecond))
		allFinal := func(r store.GroupRow) bool {
			return r.Counts[string(crewcast.StatusDelivered)]+r.Counts[string(crewcast.StatusFailed)] == len(numbers)
		}
		if _, err := cc.WaitGroup(wctx, id, allFinal); err != nil {
			return err
		}
		final = time.Since(start)
	}
	total := 0
	for _, s := range crewcast.AllStatuses {
		total += row.Counts[string(s)]
	}
	if total != len(numbers) {
		return fmt.Errorf("group has %d recipients, want %d", total, len(numbers))
	}
	rep.Progress("fanout: POST answered after %s; %d recipients sent after %s",
		created.Round(time.Millisecond), len(numbers), sent.Round(time.Millisecond))
	logStoreMetrics(ctx, cc, rep)
	rep.Result("fanout", float64(len(numbers))/sent.Seconds(), "recipients/s")
	rep.Result("fanout_post", harness.Ms(created), "ms")
	if c.fanoutReceipts {
		rep.Result("fanout_delivered", float64(len(numbers))/final.Seconds(), "recipients/s")
	}
	return nil
}
