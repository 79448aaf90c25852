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

// benchCluster measures cluster_ingest_ratio_3v1 (issue 15): durable
// webhook ingest through three nodes on one PostgreSQL (round robin, so two
// thirds land on a node that does not own the group and reach the owner
// through the shared inbox and NOTIFY) divided by ingest through one node
// on the same PostgreSQL, in the same run, with the same clients. Both are
// saturated on this machine, so the ratio is the cost of routing, not
// scaling. (cluster_failover_p99 and cluster_handoff_p99 come from the
// chaos scenario T8, which needs real processes to SIGSTOP.)
func benchCluster(ctx context.Context, c config, rep harness.Reporter) error {
	url := os.Getenv("CREWCAST_TEST_POSTGRES")
	if url == "" {
		url = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
	}
	signer, err := harness.NewSigner()
	if err != nil {
		return err
	}
	rate := func(nodes int) (float64, error) {
		schema, drop, err := benchSchema(ctx, url)
		if err != nil {
			return 0, err
		}
		defer drop()
		secret := "bench-cluster-secret"
		var ccs []*harness.Crewcast
		defer func() {
			for _, cc := range ccs {
				stopCrewcast(cc, rep)
			}
		}()
		for i := range nodes {
			cc, err := harness.Start(ctx, harness.Options{DB: url, Schema: schema, Signer: signer,
				Cluster: server.ClusterConfig{NodeID: fmt.Sprintf("bench-%d", i+1), LeaseTTL: 5 * time.Second, Secret: secret}})
			if err != nil {
				return 0, err
			}
			ccs = append(ccs, cc)
		}
		if err := waitEvenSplit(ctx, ccs); err != nil {
			return 0, err
		}
		targets, err := ccs[0].SentGroups(ctx, max(1, c.ingestGroups/2), c.ingestSize, 3_000_000)
		if err != nil {
			return 0, err
		}
		hooks, err := harness.SignStatuses(signer, targets, c.ingestMax/2, fmt.Sprintf("cluster%d", nodes), "delivered")
		if err != nil {
			return 0, err
		}
		client := harness.NewClient(c.ingestClients)
		defer client.CloseIdleConnections()
		var rr atomic.Int64
		distinct := harness.NewCounter(len(hooks))
		rep.Progress("cluster: ingest through %d node(s), %d clients, %s", nodes, c.ingestClients, c.ingestWindow)
		var res harness.ClosedResult
		if err := harness.Profiled(c.profile, fmt.Sprintf("cluster-%dnode", nodes), func() error {
			res = harness.RunClosed(ctx, c.ingestClients, c.ingestWarmup, c.ingestWindow, distinct.Next, func(ctx context.Context, n int) error {
				cc := ccs[int(rr.Add(1))%len(ccs)]
				return harness.PostWebhook(ctx, client, cc.WebhookURL(), hooks[n%len(hooks)])
			})
			return nil
		}); err != nil {
			return 0, err
		}
		if res.Errors > 0 {
			return 0, fmt.Errorf("%d nodes: %d errors, first: %v", nodes, res.Errors, res.FirstError)
		}
		// Everything acknowledged must reach its group (the owner).
		if err := waitInboxDrained(ctx, ccs[0].Store(), 2*time.Minute); err != nil {
			return 0, fmt.Errorf("%d nodes: %w", nodes, err)
		}
		return res.Rate(), nil
	}
	one, err := rate(1)
	if err != nil {
		return err
	}
	three, err := rate(3)
	if err != nil {
		return err
	}
	rep.Result("cluster_ingest_1node", one, "req/s")
	rep.Result("cluster_ingest_3nodes", three, "req/s")
	rep.Result("cluster_ingest_ratio_3v1", three/one, "ratio")
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
