package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/crewcast/crewcast/bench/internal/harness"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// clusterRounds is how many times each side of cluster_ingest_ratio_3v1 is
// measured, the sides taking turns (1, 3, 3, 1, 1, 3, ...): the machine is
// shared, and its load drifts by 2-3x within a minute, so two windows
// taken 20 s apart compared the load as much as the routing.
const clusterRounds = 4

// benchCluster measures cluster_ingest_ratio_3v1 (issue 15): durable
// webhook ingest through three nodes on one PostgreSQL (round robin, so two
// thirds land on a node that does not own the group and reach the owner
// through the shared inbox and a NOTIFY) divided by ingest through one node
// on the same PostgreSQL, in the same run, with the same clients. Both are
// saturated on this machine, so the ratio is the cost of routing, not
// scaling. Both set-ups run side by side (their own schemas); each is
// measured clusterRounds times in turn, for ingestWindow/clusterRounds
// each, its inbox drained (every acknowledged webhook applied by its
// group) before the other side's turn, and each side's rate is its OK
// requests over its measured time. (cluster_failover_p99 and
// cluster_handoff_p99 come from the chaos scenario T8, which needs real
// processes to SIGSTOP; with fewer than 100 samples it names them _max.)
func benchCluster(ctx context.Context, c config, rep harness.Reporter) error {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		url = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
	}
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	type side struct {
		nodes    int
		ccs      []*harness.Crewcast
		hooks    []harness.Webhook
		distinct *harness.Counter
		rr       atomic.Int64
		ok       int
		elapsed  time.Duration
		rates    []float64
		cost     costTotals
	}
	var cleanup []func()
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}()
	setup := func(nodes int) (*side, error) {
		schema, drop, err := benchSchema(ctx, url)
		if err != nil {
			return nil, err
		}
		cleanup = append(cleanup, drop)
		sd := &side{nodes: nodes}
		cleanup = append(cleanup, func() {
			for _, cc := range sd.ccs {
				stopCrewcast(cc, rep)
			}
		})
		secret := "bench-cluster-secret"
		for i := range nodes {
			cc, err := harness.Start(ctx, harness.Options{DB: url, Schema: schema, Signer: signer,
				Cluster: server.ClusterConfig{NodeID: fmt.Sprintf("bench-%d", i+1), LeaseTTL: 5 * time.Second, Secret: secret}})
			if err != nil {
				return nil, err
			}
			sd.ccs = append(sd.ccs, cc)
		}
		if err := waitEvenSplit(ctx, sd.ccs); err != nil {
			return nil, err
		}
		targets, err := sd.ccs[0].SentGroups(ctx, max(1, c.ingestGroups/2), c.ingestSize, 3_000_000)
		if err != nil {
			return nil, err
		}
		if sd.hooks, err = harness.SignStatuses(signer, targets, c.ingestMax/2, fmt.Sprintf("cluster%d", nodes), "delivered"); err != nil {
			return nil, err
		}
		sd.distinct = harness.NewCounter(len(sd.hooks))
		return sd, nil
	}
	one, err := setup(1)
	if err != nil {
		return err
	}
	three, err := setup(3)
	if err != nil {
		return err
	}
	var pc *pgCost
	if c.pgCost {
		if pc, err = newPGCost(ctx, url); err != nil {
			return err
		}
		defer pc.close()
	}
	client := harness.NewClient(c.ingestClients)
	defer client.CloseIdleConnections()
	window := max(c.ingestWindow/clusterRounds, time.Second)
	warmup := min(c.ingestWarmup, window/2)
	measure := func(sd *side, round int) error {
		rep.Progress("cluster: round %d, ingest through %d node(s), %d clients, %s", round+1, sd.nodes, c.ingestClients, window)
		var res harness.ClosedResult
		var before costSample
		used := sd.distinct.Used()
		if pc != nil {
			if before, err = pc.sample(ctx); err != nil {
				return err
			}
		}
		if err := harness.Profiled(c.profile, fmt.Sprintf("cluster-%dnode-%d", sd.nodes, round+1), func() error {
			res = harness.RunClosed(ctx, c.ingestClients, warmup, window, sd.distinct.Next, func(ctx context.Context, n int) error {
				cc := sd.ccs[int(sd.rr.Add(1))%len(sd.ccs)]
				return harness.PostWebhook(ctx, client, cc.WebhookURL(), sd.hooks[n])
			})
			return nil
		}); err != nil {
			return err
		}
		if res.Errors > 0 {
			return fmt.Errorf("%d nodes: %d errors, first: %v", sd.nodes, res.Errors, res.FirstError)
		}
		if res.Exhausted {
			rep.Progress("cluster: %d nodes: the %d signed webhooks ran out in round %d; the window ended early (raise -ingest-max)", sd.nodes, len(sd.hooks), round+1)
		}
		sd.ok += res.OK
		sd.elapsed += res.Elapsed
		sd.rates = append(sd.rates, res.Rate())
		// Everything acknowledged must reach its group (the owner), and
		// before the other side's turn, so it does not share the machine
		// with this side's backlog.
		if err := waitInboxDrained(ctx, sd.ccs[0].Store(), 2*time.Minute); err != nil {
			return fmt.Errorf("%d nodes: %w", sd.nodes, err)
		}
		if pc != nil {
			// From the first request to the drained inbox: everything the
			// round's webhooks cost.
			after, err := pc.sample(ctx)
			if err != nil {
				return err
			}
			sd.cost.add(before, after, sd.distinct.Used()-used)
		}
		return nil
	}
	for round := range clusterRounds {
		order := []*side{one, three}
		if round%2 == 1 {
			order = []*side{three, one}
		}
		for _, sd := range order {
			if err := measure(sd, round); err != nil {
				return err
			}
		}
	}
	rate := func(sd *side) float64 {
		if sd.elapsed <= 0 {
			return 0
		}
		return float64(sd.ok) / sd.elapsed.Seconds()
	}
	rep.Progress("cluster: rounds through 1 node %.0f req/s, through 3 nodes %.0f req/s", one.rates, three.rates)
	if pc != nil {
		rep.Progress("cluster: cost through 1 node: %s", one.cost)
		rep.Progress("cluster: cost through 3 nodes: %s", three.cost)
	}
	rep.Result("cluster_ingest_1node", rate(one), "req/s")
	rep.Result("cluster_ingest_3nodes", rate(three), "req/s")
	rep.Result("cluster_ingest_ratio_3v1", rate(three)/rate(one), "ratio")
	return nil
}

// waitEvenSplit waits until the nodes hold the 64 shards within ±1.
func waitEvenSplit(ctx context.Context, ccs []*harness.Crewcast) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		leases, err := ccs[0].Store().ListLeases(ctx)
		if err == nil {
			held := map[string]int{}
			now := time.Now()
			for _, l := range leases {
				if l.ExpiresAt.After(now) {
					held[l.Owner]++
				}
			}
			even := len(held) == len(ccs)
			for _, n := range held {
				even = even && n >= store.NumShards/len(ccs) && n <= store.NumShards/len(ccs)+1
			}
			if even {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("cluster: no even split of the shards within 30 s")
}

// benchSchema names a fresh PostgreSQL schema and returns how to drop it.
func benchSchema(ctx context.Context, url string) (string, func(), error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	schema := "crewcast_bench_" + hex.EncodeToString(b[:])
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(dctx, url)
		if err != nil {
			return
		}
		defer conn.Close(dctx)
		_, _ = conn.Exec(dctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	}
	return schema, drop, nil
}
