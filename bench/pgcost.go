package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCost samples what a stretch of the cluster bench cost PostgreSQL and
// this process, read at once (pg_stat_database and pg_stat_wal reach the
// views only when a backend next reports, up to 10 s late, which blurs
// 2.5 s rounds):
//
//   - write transactions: the next transaction id (every transaction that
//     writes, a NOTIFY included, takes one; read-only ones do not);
//   - WAL bytes: the insert position;
//   - PostgreSQL CPU: utime+stime of the backends connected to the
//     bench's database (/proc; the server must run on this machine);
//   - this process's CPU (getrusage).
//
// Transaction ids and WAL are server-wide: other databases' work on a
// shared server is counted too (use a database of its own to keep it out).
type pgCost struct {
	conn *pgx.Conn
}

type costSample struct {
	xid, wal     int64
	backendTicks int64 // clock ticks (USER_HZ, 100 on Linux)
	selfCPU      time.Duration
}

func newPGCost(ctx context.Context, url string) (*pgCost, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	return &pgCost{conn: conn}, nil
}

func (p *pgCost) close() { _ = p.conn.Close(context.Background()) }

func (p *pgCost) sample(ctx context.Context) (costSample, error) {
	var s costSample
	var pids []int32
	err := p.conn.QueryRow(ctx, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
		pg_current_wal_insert_lsn() - '0/0'::pg_lsn,
		array(SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid())`).
		Scan(&s.xid, &s.wal, &pids)
	if err != nil {
		return s, fmt.Errorf("pg cost sample: %w", err)
	}
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone, or the server is elsewhere
		}
		// Fields after the command name (which may hold spaces): state is
		// field 3, utime 14, stime 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		s.backendTicks += u + st
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.selfCPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s, nil
}

// costTotals adds up the stretches of one side.
type costTotals struct {
	webhooks                 int
	xacts, wal, backendTicks int64
	selfCPU                  time.Duration
}

func (t *costTotals) add(before, after costSample, webhooks int) {
	t.webhooks += webhooks
	t.xacts += after.xid - before.xid
	t.wal += after.wal - before.wal
	// A backend that came or went between the samples is counted with
	// the CPU it had when seen: the pools keep their connections, so this
	// is rare.
	t.backendTicks += max(0, after.backendTicks-before.backendTicks)
	t.selfCPU += after.selfCPU - before.selfCPU
}

func (t costTotals) String() string {
	if t.webhooks == 0 {
		return "no webhooks"
	}
	w := float64(t.webhooks)
	return fmt.Sprintf("%d webhooks: %.3f write xacts, %.0f WAL bytes, %.0f µs PostgreSQL backend CPU, %.0f µs bench-process CPU per webhook",
		t.webhooks, float64(t.xacts)/w, float64(t.wal)/w, float64(t.backendTicks)*1e4/w, float64(t.selfCPU.Microseconds())/w)
}
