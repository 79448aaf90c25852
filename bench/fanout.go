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
// The clock starts just before POST /v1/groups and stops at the first
// moment the group's committed row shows no recipient pending or sending.
// The rate, fanout, counts only the recipients the provider accepted, read
// from the simulator's ledger at that moment (tallyFanout); those that
// failed, stayed unconfirmed or were not to be sent (opted out with
// -fanout-stops) are reported beside it, and the run fails unless the four
// add up to the recipients and agree with crewcast's rows. With
// -fanout-receipts it also reports the delivered recipients per second
// until every recipient is final; that figure is bounded by the
// simulator's eight webhook-posting workers as much as by crewcast.
func benchFanout(ctx context.Context, c config, rep harness.Reporter) error {
	cc, err := harness.Start(ctx, harness.Options{DB: filepath.Join(c.tmp, "fanout.db"), DemoFaults: sim.Faults{}})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	numbers := harness.Numbers(4_000_000, c.fanoutN)
	for _, n := range numbers[:min(c.fanoutStops, len(numbers))] {
		if _, err := cc.Sim.Inbound(ctx, n, harness.SenderNumber, "STOP"); err != nil {
			return fmt.Errorf("fanout: STOP from %s: %w", n, err)
		}
	}
	rep.Progress("fanout: one group of %d recipients", len(numbers))
	var (
		created, sent, final time.Duration
		delivered            int
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
		_, err = cc.WaitGroup(wctx, id, harness.Settled)
		sent = time.Since(start)
		return err
	}); err != nil {
		return err
	}
	rows, err := cc.Deliveries(ctx, id)
	if err != nil {
		return err
	}
	tally, err := tallyFanout(rows, cc.Sim.Ledger(), len(numbers))
	if err != nil {
		return fmt.Errorf("fanout: %w", err)
	}
	if c.fanoutReceipts {
		rep.Progress("fanout: none pending or sending after %s; waiting for the delivery receipts", sent.Round(time.Millisecond))
		allFinal := func(r store.GroupRow) bool {
			n := 0
			for s, k := range r.Counts {
				if crewcast.Status(s).Final() {
					n += k
				}
			}
			return n == len(numbers)
		}
		finalRow, err := cc.WaitGroup(wctx, id, allFinal)
		if err != nil {
			return err
		}
		final = time.Since(start)
		delivered = finalRow.Counts[string(crewcast.StatusDelivered)]
	}
	rep.Progress("fanout: POST answered after %s; none pending or sending after %s: %d of %d recipients accepted by the provider",
		created.Round(time.Millisecond), sent.Round(time.Millisecond), tally.accepted, len(numbers))
	logStoreMetrics(ctx, cc, rep)
	rep.Result("fanout", float64(tally.accepted)/sent.Seconds(), "recipients/s")
	rep.Count("fanout_accepted", tally.accepted, "recipients")
	rep.Count("fanout_failed", tally.failed, "recipients")
	rep.Count("fanout_unconfirmed", tally.unconfirmed, "recipients")
	rep.Count("fanout_other", tally.other, "recipients")
	rep.Result("fanout_post", harness.Ms(created), "ms")
	if c.fanoutReceipts {
		rep.Result("fanout_delivered", float64(delivered)/final.Seconds(), "recipients/s")
	}
	return nil
}

// fanoutTally is what became of each recipient of the fan-out group.
type fanoutTally struct {
	accepted    int // the provider accepted the send: its ledger has it
	failed      int // not accepted; crewcast has it failed
	unconfirmed int // not accepted; crewcast has it unconfirmed
	other       int // not accepted; opted out, canceled, scheduled
}

// tallyFanout classifies the group's committed rows against the
// simulator's ledger (only its rows from harness.SenderNumber with
// harness.GroupText are this group's sends). It fails when they do not
// agree: a ledger row for a number not in the group, a number accepted
// twice, a recipient crewcast has as accepted (sent, delivered, unknown)
// that the provider never accepted, an accepted one crewcast has as not
// to be sent, one still pending or sending, or a total other than
// recipients.
func tallyFanout(rows []store.DeliveryRow, ledger []sim.Send, recipients int) (fanoutTally, error) {
	status := make(map[string]crewcast.Status, len(rows))
	for _, r := range rows {
		status[r.Number] = r.Status
	}
	if len(status) != recipients || len(rows) != recipients {
		return fanoutTally{}, fmt.Errorf("%d delivery rows (%d numbers) for %d recipients", len(rows), len(status), recipients)
	}
	accepted := map[string]bool{}
	for _, l := range ledger {
		if l.From != harness.SenderNumber || l.Text != harness.GroupText {
			continue
		}
		if _, ok := status[l.To]; !ok {
			return fanoutTally{}, fmt.Errorf("the provider accepted a send to %s, not a recipient", l.To)
		}
		if accepted[l.To] {
			return fanoutTally{}, fmt.Errorf("the provider accepted %s twice", l.To)
		}
		accepted[l.To] = true
	}
	var t fanoutTally
	for number, s := range status {
		switch {
		case s == crewcast.StatusPending || s == crewcast.StatusSending:
			return t, fmt.Errorf("%s is still %s", number, s)
		case accepted[number]:
			if s == crewcast.StatusOptedOut || s == crewcast.StatusCanceled || s == crewcast.StatusScheduled {
				return t, fmt.Errorf("%s is %s, yet the provider accepted a send to it", number, s)
			}
			t.accepted++
		case s == crewcast.StatusSent || s == crewcast.StatusDelivered || s == crewcast.StatusUnknown:
			return t, fmt.Errorf("%s is %s, but the provider has no send to it", number, s)
		case s == crewcast.StatusFailed:
			t.failed++
		case s == crewcast.StatusUnconfirmed:
			t.unconfirmed++
		default:
			t.other++
		}
	}
	if sum := t.accepted + t.failed + t.unconfirmed + t.other; sum != recipients {
		return t, fmt.Errorf("%d accepted + %d failed + %d unconfirmed + %d other = %d, for %d recipients",
			t.accepted, t.failed, t.unconfirmed, t.other, sum, recipients)
	}
	return t, nil
}
