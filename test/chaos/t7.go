package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

// runT7 is docs/testing.md T7 on PostgreSQL: during fan-out the harness
// terminates the server's backends (once, then in a burst of five 30 ms
// apart, so that some land inside a COMMIT), kills the server with -9 and
// restarts it, then terminates its backends again. No acknowledged webhook
// may be lost, no recipient sent twice, and every group must finish.
func runT7(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	admin, err := pgx.Connect(ctx, h.cfg.pgURL)
	if err != nil {
		return scenarioResult{notes: []string{"no PostgreSQL at CREWCAST_TEST_POSTGRES: " + err.Error()}}
	}
	defer admin.Close(context.Background())
	dbName := fmt.Sprintf("chaos_%d_%d", os.Getpid(), time.Now().Unix())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		return res.fail("create database: %v", err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := admin.Exec(dctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)"); err != nil {
			res.notes = append(res.notes, "drop database "+dbName+": "+err.Error())
		}
	}
	defer drop()
	u, err := url.Parse(h.cfg.pgURL)
	if err != nil {
		return res.fail("parse %s: %v", h.cfg.pgURL, err)
	}
	u.Path = "/" + dbName
	srv := h.newServer("server-t7", u.String(), "--send-rate", "20")
	if err := srv.start(ctx); err != nil {
		return res.fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()
	terminate := func() (int, error) {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, dbName).Scan(&n)
		return n, err
	}
	var ids []string
	for range 2 {
		g, _, err := srv.newGroup(ctx, "t7", 100, "")
		if err != nil {
			return res.fail("create group: %v", err)
		}
		ids = append(ids, g.ID)
	}
	total := 0
	steps := []struct {
		at   time.Duration
		what string
	}{
		{800 * time.Millisecond, "terminate"},
		{1500 * time.Millisecond, "burst"},
		{2300 * time.Millisecond, "kill"},
		{3200 * time.Millisecond, "terminate"},
	}
	start := time.Now()
	for _, st := range steps {
		if err := sleep(ctx, time.Until(start.Add(st.at))); err != nil {
			return res.fail("%v", err)
		}
		switch st.what {
		case "terminate", "burst":
			times := 1
			if st.what == "burst" {
				times = 5
			}
			for range times {
				n, err := terminate()
				if err != nil {
					return res.fail("terminate backends: %v", err)
				}
				total += n
				_ = sleep(ctx, 30*time.Millisecond)
			}
			if !srv.p.Alive() {
				return res.fail("the server exited when its backends were terminated; log %s:\n%s", srv.logPath, tail(srv.logPath, 20))
			}
		case "kill":
			if err := srv.restart(ctx); err != nil {
				return res.fail("restart: %v", err)
			}
		}
	}
	res.notes = append(res.notes, fmt.Sprintf("terminated %d backends in 7 rounds, one kill -9 and restart, database %s", total, dbName))
	if total == 0 {
		res.problems = append(res.problems, "no backend was terminated: the condition had no effect")
	}
	views, err := srv.drain(ctx, ids, 90*time.Second, false)
	if err != nil {
		res.problems = append(res.problems, err.Error())
	}
	probs, fin := srv.finalCheck(ctx, ids)
	res.problems = append(res.problems, probs...)
	res.notes = append(res.notes, fmt.Sprintf("%d acknowledged webhooks, %d lost, %d unconfirmed [%s]", fin.acked, fin.lost, fin.unconfirmed, statusCounts(views)))
	return res
}
