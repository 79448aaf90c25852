package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/group"
)

// benchE2E measures the time from posting a status webhook to receiving,
// on the group's event stream (GET /v1/groups/{id}/stream, SSE over
// loopback), the change it caused: verified, made durable, routed,
// applied by the group actor, committed (SQLite, synchronous=FULL) and
// published. One group of e2eCount recipients is created and sent first;
// then one message.finalized "delivered" webhook per recipient is posted
// at a fixed rate, each on its own schedule (open loop), and latency is
// counted from each webhook's scheduled time.
func benchE2E(ctx context.Context, c config, rep harness.Reporter) error {
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	cc, err := harness.Start(ctx, harness.Options{DB: filepath.Join(c.tmp, "e2e.db"), Signer: signer})
	if err != nil {
		return err
	}
	defer stopCrewcast(cc, rep)
	targets, err := cc.SentGroups(ctx, 1, c.e2eCount, 3_000_000)
	if err != nil {
		return err
	}
	groupID := targets[0].GroupID
	row, err := cc.Store().GetGroup(ctx, groupID)
	if err != nil {
		return err
	}
	hooks, err := harness.SignStatuses(signer, targets, len(targets), "e2e", "delivered")
	if err != nil {
		return err
	}
	index := make(map[string]int, len(targets))
	for i, t := range targets {
		index[t.MessageID] = i
	}

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := harness.OpenStream(sctx, cc.Client, cc.URL+"/v1/groups/"+groupID+"/stream?after="+strconv.FormatUint(row.Seq, 10))
	if err != nil {
		return err
	}
	defer stream.Close()

	var (
		mu      sync.Mutex
		sentAt  = make([]time.Time, len(targets))
		lat     harness.Samples
		seen    = make([]bool, len(targets))
		allDone = make(chan struct{})
		readErr error
	)
	go func() {
		defer close(allDone)
		got := 0
		for got < len(targets) {
			ev, err := stream.Next()
			if err != nil {
				readErr = err
				return
			}
			now := time.Now()
			if ev.Event != "change" {
				continue
			}
			var change struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &change); err != nil {
				readErr = fmt.Errorf("stream event: %w", err)
				return
			}
			if change.Type != group.TypeObserved {
				continue
			}
			var obs group.Observed
			if err := json.Unmarshal(change.Data, &obs); err != nil {
				readErr = fmt.Errorf("stream event data: %w", err)
				return
			}
			i, ok := index[obs.MessageID]
			if !ok || obs.Status != "delivered" {
				continue
			}
			mu.Lock()
			if !seen[i] {
				seen[i] = true
				got++
				lat = append(lat, now.Sub(sentAt[i]))
			}
			mu.Unlock()
		}
	}()

	rep.Progress("e2e: %d webhooks at %.0f/s to one group's event stream", len(hooks), c.e2eRate)
	client := harness.NewClient(64)
	defer client.CloseIdleConnections()
	if err := postPaced(ctx, client, cc, hooks, c.e2eRate, c.profile, "e2e", func(n int, at time.Time) {
		mu.Lock()
		sentAt[n] = at
		mu.Unlock()
	}); err != nil {
		return err
	}
	select {
	case <-allDone:
	case <-time.After(time.Minute):
		cancel()
		<-allDone
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lat) < len(targets) {
		return fmt.Errorf("only %d of %d changes reached the stream (%v)", len(lat), len(targets), readErr)
	}
	_, err = rep.Latency("e2e", "", lat, 0.5, 0.99, 1)
	return err
}

// postPaced posts hooks to cc's webhook endpoint at rate (harness.Paced),
// under the CPU profiler as profile when profileDir is set, calling sent
// with each webhook's index and start time. It fails when any post did.
func postPaced(ctx context.Context, client *http.Client, cc *harness.Crewcast, hooks []harness.Webhook, rate float64,
	profileDir, profile string, sent func(n int, at time.Time)) error {
	var errs int
	var first error
	if err := harness.Profiled(profileDir, profile, func() error {
		errs, first = harness.Paced(ctx, len(hooks), rate, sent, func(ctx context.Context, n int) error {
			return harness.PostWebhook(ctx, client, cc.WebhookURL(), hooks[n])
		})
		return nil
	}); err != nil {
		return err
	}
	if errs > 0 {
		return fmt.Errorf("%d webhooks failed, first: %v", errs, first)
	}
	return nil
}
