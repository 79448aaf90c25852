package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/store"
)

// benchIngest measures signed Telnyx webhooks over loopback HTTP, each
// acknowledged only once durable (SQLite, synchronous=FULL), against the
// ceiling of a bare net/http handler that reads the same bodies and
// answers 200, with the same clients in the same run. A third server, the
// verified ceiling, also checks each signature and decodes each body with
// crewcast's Telnyx adapter before answering: the share of the ceiling
// left once the work no durable design can skip is done
// (ingest_verified_ratio) bounds what ingest_ratio can reach.
//
// The webhooks are message.finalized "delivered" events for the message
// ids of real groups (ingestGroups × ingestSize recipients, sent through
// the simulator first), so every one is routed to its group and
// acknowledged in the group's commit behind the scenes; each event id is
// used once. The first webhook for a recipient changes it to delivered;
// later ones for the same recipient are new events that change nothing
// but are still made durable, routed and acknowledged.
func benchIngest(ctx context.Context, c config, rep harness.Reporter) error {
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	cc, err := harness.Start(ctx, harness.Options{DB: filepath.Join(c.tmp, "ingest.db"), Signer: signer})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	targets, err := cc.SentGroups(ctx, c.ingestGroups, c.ingestSize, 2_000_000)
	if err != nil {
		return err
	}
	rep.Progress("ingest: %d groups × %d recipients sent; signing %d webhooks", c.ingestGroups, c.ingestSize, c.ingestMax)
	hooks, err := harness.SignStatuses(signer, targets, c.ingestMax, "ingest", "delivered")
	if err != nil {
		return err
	}

	ceiling, stopCeiling, err := startCeiling(nil)
	if err != nil {
		return err
	}
	defer stopCeiling()
	// The verified ceiling does, before answering, the part of crewcast's
	// work no durable design can skip: check the signature and decode the
	// body, with crewcast's own Telnyx adapter.
	adapter, err := telnyx.New(telnyx.Config{APIKey: "bench", PublicKey: signer.PublicKeyBase64()})
	if err != nil {
		return err
	}
	verified, stopVerified, err := startCeiling(func(r *http.Request, body []byte) error {
		_, err := adapter.ParseWebhook(crewcast.WebhookRequest{Header: r.Header, Body: body})
		return err
	})
	if err != nil {
		return err
	}
	defer stopVerified()

	client := harness.NewClient(c.ingestClients)
	defer client.CloseIdleConnections()
	post := func(url string) func(ctx context.Context, n int) error {
		return func(ctx context.Context, n int) error {
			return harness.PostWebhook(ctx, client, url, hooks[n%len(hooks)])
		}
	}

	rep.Progress("ingest: ceiling (bare net/http), %d clients, %s", c.ingestClients, c.ingestWindow)
	cycle := harness.NewCounter(0) // the ceiling does not deduplicate: bodies are reused
	ceil := harness.RunClosed(ctx, c.ingestClients, c.ingestWarmup, c.ingestWindow, cycle.Next, post(ceiling))
	if ceil.Errors > 0 {
		return fmt.Errorf("ceiling: %d errors, first: %v", ceil.Errors, ceil.FirstError)
	}
	client.CloseIdleConnections()

	rep.Progress("ingest: verified ceiling (net/http + signature check + decode), %d clients, %s", c.ingestClients, c.ingestWindow)
	vceil := harness.RunClosed(ctx, c.ingestClients, c.ingestWarmup, c.ingestWindow, cycle.Next, post(verified))
	if vceil.Errors > 0 {
		return fmt.Errorf("verified ceiling: %d errors, first: %v", vceil.Errors, vceil.FirstError)
	}
	client.CloseIdleConnections()

	rep.Progress("ingest: crewcast (durable), %d clients, %s", c.ingestClients, c.ingestWindow)
	distinct := harness.NewCounter(len(hooks))
	var dur harness.ClosedResult
	if err := harness.Profiled(c.profile, "ingest", func() error {
		dur = harness.RunClosed(ctx, c.ingestClients, c.ingestWarmup, c.ingestWindow, distinct.Next, post(cc.WebhookURL()))
		return nil
	}); err != nil {
		return err
	}
	if dur.Errors > 0 {
		return fmt.Errorf("durable: %d errors, first: %v", dur.Errors, dur.FirstError)
	}
	if dur.Exhausted {
		rep.Progress("ingest: NOTE the %d prepared webhooks ran out before the window ended; the rate is over %s", len(hooks), dur.Elapsed.Round(time.Millisecond))
	}
	logStoreMetrics(ctx, cc, rep)
	drainStart := time.Now()
	if err := waitInboxDrained(ctx, cc.Store(), 2*time.Minute); err != nil {
		return err
	}
	return reportIngest(rep, dur, ceil, vceil, time.Since(drainStart))
}

// reportIngest prints the ingest scenario's figures.
func reportIngest(rep harness.Reporter, dur, ceil, vceil harness.ClosedResult, drain time.Duration) error {
	rep.Result("ingest_durable", dur.Rate(), "req/s")
	rep.Result("ingest_ceiling", ceil.Rate(), "req/s")
	rep.Result("ingest_ratio", dur.Rate()/ceil.Rate(), "ratio")
	if _, err := rep.Latency("ingest", "", dur.Latency, 0.5, 0.99); err != nil {
		return err
	}
	if _, err := rep.Latency("ingest_ceiling", "", ceil.Latency, 0.99); err != nil {
		return err
	}
	rep.Result("ingest_verified_ceiling", vceil.Rate(), "req/s")
	rep.Result("ingest_verified_ratio", vceil.Rate()/ceil.Rate(), "ratio")
	rep.Result("ingest_route_backlog_drain", drain.Seconds(), "s")
	return nil
}

// startCeiling serves the ceiling: read the whole body, run check (when
// not nil; an error answers 400), answer 200 with the same small JSON
// crewcast answers, with crewcast's server timeouts.
func startCeiling(check func(r *http.Request, body []byte) error) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
			if err != nil {
				http.Error(w, "bad body", http.StatusBadRequest)
				return
			}
			if check != nil {
				if err := check(r, body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "{}\n")
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String() + "/webhooks/telnyx", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// waitInboxDrained waits until every acknowledged webhook has been
// applied by its group (no unprocessed inbox entry is left).
func waitInboxDrained(ctx context.Context, st store.Store, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		left, err := st.PendingInbox(ctx, store.InboxRef{}, 1)
		if err != nil {
			return fmt.Errorf("inbox not drained: %w", err)
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("inbox not drained within %s", limit)
		}
	}
}

func stopCrewcast(cc *harness.Crewcast, rep harness.Reporter) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cc.Stop(ctx); err != nil {
		rep.Progress("stop crewcast: %v", err)
	}
}

// logStoreMetrics prints crewcast's own commit and webhook figures from
// /metrics, so a slow run shows where its time went.
func logStoreMetrics(ctx context.Context, cc *harness.Crewcast, rep harness.Reporter) {
	m, err := harness.ScrapeMetrics(ctx, cc.Client, cc.URL+"/metrics")
	if err != nil {
		rep.Progress("metrics: %v", err)
		return
	}
	batches := m["crewcast_store_commit_batch_units_count"]
	if batches > 0 {
		rep.Progress("store commits: %.0f batches, %.1f units/batch, %.1f ms/commit",
			batches, m["crewcast_store_commit_batch_units_sum"]/batches,
			1000*m["crewcast_store_commit_duration_seconds_sum"]/m["crewcast_store_commit_duration_seconds_count"])
	}
}
