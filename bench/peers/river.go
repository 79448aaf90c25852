package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/tracker"
)

// compareRiver processes the same webhooks on PostgreSQL two ways, one
// after the other in this process:
//   - crewcast with its PostgreSQL store: verify, make durable in the
//     inbox, answer 200, route to the group actor, which commits the
//     journal event, the recipient and group rows and the inbox
//     acknowledgement (group commit across actors).
//   - River (riverpgxv5): a net/http handler verifies the same signature,
//     decodes the webhook, inserts one River job (one transaction) and
//     answers 200; a River worker updates the recipient's row.
//
// Each side gets riverN signed message.finalized "delivered" webhooks, one
// per recipient (real groups, sent through the simulator, on crewcast's
// side; as many recipient rows on River's), posted by riverClients
// keep-alive clients. Throughput is riverN divided by the time from the
// first POST until the last recipient row change is committed (crewcast:
// the tracker publishes the committed change; River: the worker's UPDATE
// returned). River's side does not deduplicate webhooks by event id and
// its completion bookkeeping after the UPDATE is not waited for, both in
// River's favour.
func compareRiver(ctx context.Context, c config, rep harness.Reporter) error {
	if c.pgURL == "" {
		return errors.New("needs CREWCAST_TEST_POSTGRES (a postgres:// URL)")
	}
	suffix := fmt.Sprint(os.Getpid())
	crewSchema, riverSchema := "bench_crewcast_"+suffix, "bench_river_"+suffix
	admin, err := pgx.Connect(ctx, c.pgURL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, s := range []string{crewSchema, riverSchema} {
			if _, err := admin.Exec(cctx, `DROP SCHEMA IF EXISTS "`+s+`" CASCADE`); err != nil {
				rep.Progress("river: drop schema %s: %v", s, err)
			}
		}
		_ = admin.Close(cctx)
	}()
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}

	rep.Progress("river: crewcast on PostgreSQL, %d webhooks", c.riverN)
	ours, err := riverCrewcast(ctx, c, rep, signer, crewSchema)
	if err != nil {
		return fmt.Errorf("crewcast side: %w", err)
	}
	rep.Progress("river: crewcast processed %.0f webhooks/s (acknowledged %.0f/s)", ours.rate(), ours.ackRate())

	rep.Progress("river: River on PostgreSQL, %d webhooks", c.riverN)
	theirs, err := riverRiver(ctx, c, signer, admin, riverSchema)
	if err != nil {
		return fmt.Errorf("river side: %w", err)
	}
	rep.Progress("river: River processed %.0f webhooks/s (acknowledged %.0f/s)", theirs.rate(), theirs.ackRate())

	rep.Result("river_crewcast", ours.rate(), "webhooks/s")
	rep.Result("river_river", theirs.rate(), "webhooks/s")
	rep.Result("river_ratio", ours.rate()/theirs.rate(), "ratio")
	rep.Result("river_ack_ratio", ours.ackRate()/theirs.ackRate(), "ratio")
	return nil
}

// sideResult is one side's timing.
type sideResult struct {
	n           int
	acked, done time.Duration // from the first POST to the last 200 / the last change
}

func (r sideResult) rate() float64    { return float64(r.n) / r.done.Seconds() }
func (r sideResult) ackRate() float64 { return float64(r.n) / r.acked.Seconds() }

// postAll posts every webhook with c.riverClients clients and returns
// when the last was answered 200, or the first failure.
func postAll(ctx context.Context, clients int, url string, hooks []harness.Webhook) (time.Duration, error) {
	client := harness.NewClient(clients)
	defer client.CloseIdleConnections()
	next := harness.NewCounter(len(hooks))
	start := time.Now()
	res := harness.RunClosed(ctx, clients, 0, 24*time.Hour, next.Next, func(ctx context.Context, n int) error {
		return harness.PostWebhook(ctx, client, url, hooks[n])
	})
	if res.Errors > 0 {
		return 0, fmt.Errorf("%d webhooks failed, first: %v", res.Errors, res.FirstError)
	}
	if res.OK != len(hooks) {
		return 0, fmt.Errorf("%d of %d webhooks answered", res.OK, len(hooks))
	}
	return time.Since(start), nil
}

// waitDone waits for done or gives up after limit.
func waitDone(ctx context.Context, done <-chan struct{}, limit time.Duration, what func() string) error {
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(limit):
		return fmt.Errorf("not done after %s: %s", limit, what())
	}
}

func riverCrewcast(ctx context.Context, c config, rep harness.Reporter, signer *harness.Signer, schema string) (sideResult, error) {
	cc, err := harness.Start(ctx, harness.Options{DB: c.pgURL, Schema: schema, Signer: signer})
	if err != nil {
		return sideResult{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cc.Stop(sctx); err != nil {
			rep.Progress("river: stop crewcast: %v", err)
		}
	}()
	size := min(c.riverN, 1000)
	groups := (c.riverN + size - 1) / size
	targets, err := cc.SentGroups(ctx, groups, size, 5_000_000)
	if err != nil {
		return sideResult{}, err
	}
	targets = targets[:c.riverN]
	hooks, err := harness.SignStatuses(signer, targets, len(targets), "river-crewcast", "delivered")
	if err != nil {
		return sideResult{}, err
	}
	want := make(map[string]bool, len(targets))
	for _, t := range targets {
		want[t.MessageID] = true
	}
	sub := cc.Server.Tracker().Hub().Subscribe("")
	defer sub.Close()
	var applied atomic.Int64
	done := make(chan struct{})
	go countObserved(sub, want, &applied, done)
	start := time.Now()
	acked, err := postAll(ctx, c.riverClients, cc.WebhookURL(), hooks)
	if err != nil {
		return sideResult{}, err
	}
	if err := waitDone(ctx, done, 2*time.Minute, func() string {
		return fmt.Sprintf("%d of %d changes committed", applied.Load(), len(targets))
	}); err != nil {
		return sideResult{}, err
	}
	return sideResult{n: len(targets), acked: acked, done: time.Since(start)}, nil
}

// countObserved counts committed "delivered" observations of the wanted
// message ids and closes done when all were seen.
func countObserved(sub *tracker.Subscription, want map[string]bool, applied *atomic.Int64, done chan struct{}) {
	for change := range sub.C {
		for _, ev := range change.Events {
			if ev.Type != group.TypeObserved {
				continue
			}
			var obs group.Observed
			if json.Unmarshal(ev.Data, &obs) != nil || obs.Status != "delivered" || !want[obs.MessageID] {
				continue
			}
			delete(want, obs.MessageID)
			applied.Add(1)
			if len(want) == 0 {
				close(done)
				return
			}
		}
	}
}

// statusArgs is one webhook's job.
type statusArgs struct {
	EventID   string    `json:"event_id"`
	MessageID string    `json:"message_id"`
	Number    string    `json:"number"`
	Status    string    `json:"status"`
	At        time.Time `json:"at"`
}

// Kind names the job kind.
func (statusArgs) Kind() string { return "webhook_status" }

// statusWorker applies a status job to the recipient row.
type statusWorker struct {
	river.WorkerDefaults[statusArgs]
	pool    *pgxpool.Pool
	table   string
	applied *atomic.Int64
	n       int64
	done    chan struct{}
}

// Work updates the recipient, forward only: a late status never
// overwrites delivered.
func (w *statusWorker) Work(ctx context.Context, job *river.Job[statusArgs]) error {
	a := job.Args
	tag, err := w.pool.Exec(ctx, `UPDATE `+w.table+` SET status = $2, delivered_at = $3, updated_at = $3
		WHERE message_id = $1 AND status <> 'delivered'`, a.MessageID, a.Status, a.At)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 && w.applied.Add(1) == w.n {
		close(w.done)
	}
	return nil
}

func riverRiver(ctx context.Context, c config, signer *harness.Signer, admin *pgx.Conn, schema string) (sideResult, error) {
	table := `"` + schema + `".recipients`
	if _, err := admin.Exec(ctx, `CREATE SCHEMA "`+schema+`"`); err != nil {
		return sideResult{}, err
	}
	if _, err := admin.Exec(ctx, `CREATE TABLE `+table+` (
		message_id TEXT PRIMARY KEY, number TEXT NOT NULL, status TEXT NOT NULL,
		delivered_at TIMESTAMPTZ, updated_at TIMESTAMPTZ NOT NULL)`); err != nil {
		return sideResult{}, err
	}
	targets := make([]harness.Target, c.riverN)
	rows := make([][]any, c.riverN)
	now := time.Now()
	for i := range targets {
		targets[i] = harness.Target{Number: fmt.Sprintf("+1557%07d", i), MessageID: fmt.Sprintf("40385f64-5717-4562-b3fc-%012d", i)}
		rows[i] = []any{targets[i].MessageID, targets[i].Number, "sent", now}
	}
	if _, err := admin.CopyFrom(ctx, pgx.Identifier{schema, "recipients"}, []string{"message_id", "number", "status", "updated_at"},
		pgx.CopyFromRows(rows)); err != nil {
		return sideResult{}, err
	}

	pcfg, err := pgxpool.ParseConfig(c.pgURL)
	if err != nil {
		return sideResult{}, err
	}
	pcfg.MaxConns = int32(c.riverWorkers + 8)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return sideResult{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	mig, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: quietLogger()})
	if err != nil {
		return sideResult{}, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return sideResult{}, fmt.Errorf("migrate river: %w", err)
	}
	var applied atomic.Int64
	done := make(chan struct{})
	workers := river.NewWorkers()
	river.AddWorker(workers, &statusWorker{pool: pool, table: table, applied: &applied, n: int64(c.riverN), done: done})
	client, err := river.NewClient(driver, &river.Config{
		Schema: schema, Logger: quietLogger(), Workers: workers,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.riverWorkers}},
	})
	if err != nil {
		return sideResult{}, err
	}
	if err := client.Start(ctx); err != nil {
		return sideResult{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()

	url, stop, err := serveRiverWebhooks(signer, client)
	if err != nil {
		return sideResult{}, err
	}
	defer stop()
	hooks, err := harness.SignStatuses(signer, targets, len(targets), "river-river", "delivered")
	if err != nil {
		return sideResult{}, err
	}
	start := time.Now()
	acked, err := postAll(ctx, c.riverClients, url, hooks)
	if err != nil {
		return sideResult{}, err
	}
	if err := waitDone(ctx, done, 2*time.Minute, func() string {
		return fmt.Sprintf("%d of %d rows updated", applied.Load(), c.riverN)
	}); err != nil {
		return sideResult{}, err
	}
	return sideResult{n: c.riverN, acked: acked, done: time.Since(start)}, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// serveRiverWebhooks serves POST /webhooks/telnyx the River way: verify
// the Telnyx signature as crewcast does, decode, insert one job, answer
// 200 only after the insert committed.
func serveRiverWebhooks(signer *harness.Signer, client *river.Client[pgx.Tx]) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	// One Verifier, as crewcast's adapter keeps: the package-level
	// telnyx.Verify expands the key on every call.
	verifier, err := telnyx.NewVerifier(signer.PublicKey())
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhooks/telnyx", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if err := verifier.Verify(r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var env struct {
			Data struct {
				ID      string `json:"id"`
				Payload struct {
					ID string `json:"id"`
					To []struct {
						PhoneNumber string `json:"phone_number"`
						Status      string `json:"status"`
					} `json:"to"`
				} `json:"payload"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &env); err != nil || len(env.Data.Payload.To) == 0 {
			http.Error(w, "malformed", http.StatusBadRequest)
			return
		}
		to := env.Data.Payload.To[0]
		if _, err := client.Insert(r.Context(), statusArgs{EventID: env.Data.ID, MessageID: env.Data.Payload.ID,
			Number: to.PhoneNumber, Status: to.Status, At: time.Now()}, nil); err != nil {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}\n")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, IdleTimeout: 60 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String() + "/webhooks/telnyx", func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}, nil
}
