package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"time"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/webhookout"
)

// benchWebhookOut measures outbound webhooks (docs/design.md §13) to a local
// endpoint that answers 204 at once, on SQLite:
//
//   - webhook_out_rate: webhookN events already in the outbox, delivered
//     (signed, sent, answered and recorded) from the worker's start until
//     the endpoint has them all;
//   - webhook_out_lag_p50, _p99, _max: events committed one per store commit (the
//     commit path the group actor uses, Effects.Outbox) at webhookRate per
//     second, from the commit's return to the endpoint's receipt.
func benchWebhookOut(ctx context.Context, c config, rep harness.Reporter) error {
	recv := newHookSink()
	srv := httptest.NewServer(recv)
	defer srv.Close()

	st, err := server.OpenStore(ctx, filepath.Join(c.tmp, "webhookout.db"), "", time.Now, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	secret, err := webhookout.NewHMACSecret()
	if err != nil {
		return err
	}
	sealer, err := webhookout.NewSealer("bench sealing key, not a secret")
	if err != nil {
		return err
	}
	sealed, err := sealer.Seal("ep_bench", secret)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := st.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "ep_bench", URL: srv.URL + "/hooks",
		Events: []string{"*"}, Signing: store.SigningHMAC, Secret: sealed, CreatedAt: now, UpdatedAt: now}); err != nil {
		return err
	}

	// Rate: a backlog delivered as fast as it goes.
	rep.Progress("webhookout: %d events queued, delivering", c.webhookN)
	for i := 0; i < c.webhookN; i += 1000 {
		var rows []store.OutboxRow
		for j := i; j < min(i+1000, c.webhookN); j++ {
			rows = append(rows, benchRow(fmt.Sprintf("msg_rate_%d", j), time.Now()))
		}
		if err := st.AppendOutbox(ctx, rows); err != nil {
			return err
		}
	}
	w := webhookout.New(webhookout.Config{Store: st, Sealer: sealer, AllowPrivate: true})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); w.Run(wctx) }()
	defer func() { stop(); <-done }()
	if err := harness.Profiled(c.profile, "webhookout", func() error {
		return recv.waitFor(ctx, c.webhookN, 5*time.Minute, w.Kick)
	}); err != nil {
		return err
	}
	elapsed := time.Since(start)
	rep.Result("webhook_out_rate", float64(c.webhookN)/elapsed.Seconds(), "events/s")

	// Lag: paced commits, each kicking the worker as the tracker does.
	rep.Progress("webhookout: %d commits at %.0f/s", c.webhookLagCount, c.webhookRate)
	var mu sync.Mutex
	committed := map[string]time.Time{}
	errs, first := harness.Paced(ctx, c.webhookLagCount, c.webhookRate, func(int, time.Time) {}, func(ctx context.Context, n int) error {
		id := fmt.Sprintf("msg_lag_%d", n)
		res, err := st.Commit(ctx, []actor.Unit{{Key: fmt.Sprintf("bench-%d", n), Events: []actor.Event{{Type: "bench.event", Data: []byte("{}")}},
			Effects: []any{store.Effects{Outbox: []store.OutboxRow{benchRow(id, time.Now())}}}}})
		if err == nil {
			err = res[0]
		}
		if err != nil {
			return err
		}
		mu.Lock()
		committed[id] = time.Now()
		mu.Unlock()
		w.Kick()
		return nil
	})
	if errs > 0 {
		return fmt.Errorf("webhookout: %d commits failed: %w", errs, first)
	}
	if err := recv.waitFor(ctx, c.webhookN+c.webhookLagCount, 2*time.Minute, w.Kick); err != nil {
		return err
	}
	var lags harness.Samples
	recv.mu.Lock()
	for id, at := range committed {
		lags = append(lags, max(recv.at[id].Sub(at), 0))
	}
	recv.mu.Unlock()
	_, err = rep.Latency("webhook_out_lag", "", lags, 0.5, 0.99, 1)
	return err
}

func benchRow(id string, at time.Time) store.OutboxRow {
	return store.OutboxRow{MsgID: id, Type: webhookout.RecipientUpdated, GroupID: "g_bench", Seq: 1, CreatedAt: at,
		Payload: []byte(`{"type":"recipient.updated","timestamp":"` + at.UTC().Format(time.RFC3339Nano) +
			`","data":{"group_id":"g_bench","seq":1,"recipient":{"number":"+15550100001","status":"delivered"}}}`)}
}

// hookSink is the local endpoint: it records when each webhook-id first
// arrived and answers 204.
type hookSink struct {
	mu     sync.Mutex
	at     map[string]time.Time
	change chan struct{}
}

func newHookSink() *hookSink {
	return &hookSink{at: map[string]time.Time{}, change: make(chan struct{}, 1)}
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("webhook-id")
	h.mu.Lock()
	if _, ok := h.at[id]; !ok {
		h.at[id] = time.Now()
	}
	h.mu.Unlock()
	select {
	case h.change <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitFor waits until n distinct webhooks arrived, kicking the worker
// whenever one does.
func (h *hookSink) waitFor(ctx context.Context, n int, timeout time.Duration, kick func()) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		h.mu.Lock()
		got := len(h.at)
		h.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-h.change:
		case <-tick.C:
			kick()
		case <-deadline.C:
			return fmt.Errorf("webhookout: %d of %d webhooks arrived within %s", got, n, timeout)
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("webhookout: %d of %d webhooks arrived", got, n))
		}
	}
}
