package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// soakSample is one T10 measurement of the server process.
type soakSample struct {
	at         time.Duration // since the soak began
	rssKB      int64
	threads    int64
	fds        int
	goroutines int64
	walBytes   int64
	dbBytes    int64   // the database file (without the WAL)
	recipients int     // recipients created so far (for dbBytes per recipient)
	acked      int     // webhooks acknowledged in the window
	p99MS      int64   // their p99 acknowledgement latency
	load1      float64 // the machine's 1-minute load average (context for latency)
}

// soakBounds are what T10 holds the server to. Groups stay in memory
// until their idle timeout (2 min), so within a short soak memory grows
// with the groups sent; the RSS bound allows for that and catches a leak
// of another order. Goroutines (idle actors hold none), descriptors and
// the write-ahead log must stay flat.
var soakBounds = struct {
	windowP99MS     int64
	p99MS           int64
	rssFactor       float64
	rssSlackKB      int64
	goroutineFactor float64
	goroutineSlack  int64
	fdSlack         int
	walBytes        int64
	// dbBytesPerRecipient bounds the database file's size over the
	// recipients sent: each costs its journal events, delivery row, routes,
	// two inbox rows and its share of a snapshot (about 2.5 KB measured by
	// BenchmarkWriteAmplification, docs/performance.md).
	dbBytesPerRecipient int64
	minWindowSamples    int
}{windowP99MS: 2000, p99MS: 1000, rssFactor: 2, rssSlackKB: 96 << 10, goroutineFactor: 1.5, goroutineSlack: 50, fdSlack: 30, walBytes: 64 << 20,
	dbBytesPerRecipient: 4096, minWindowSamples: 3}

// runT10 is docs/testing.md T10: measure peak throughput with one unpaced
// group, then for the soak duration send groups at half that rate,
// sampling the server's RSS, threads, file descriptors, goroutines, WAL
// size and p99 acknowledgement latency every 5 s; fail when any of them
// grows past soakBounds, a window's p99 reaches the provider's 2 s
// budget, or the whole soak's p99 reaches 1 s.
func runT10(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	if err := h.stopMain(); err != nil {
		res.notes = append(res.notes, "stopping the shared server: "+err.Error())
	}
	db := filepath.Join(h.dir, "soak.db")
	srv := h.newServer("server-t10", db, "--send-rate", "0")
	if err := srv.start(ctx); err != nil {
		return res.fail("start server: %v", err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			res.problems = append(res.problems, "stop server: "+err.Error())
		}
	}()

	// Peak: one unpaced group, from create to every recipient final.
	const peakN = 400
	t0 := time.Now()
	gp, _, err := srv.newGroup(ctx, "t10 peak", peakN, "")
	if err != nil {
		return res.fail("create group: %v", err)
	}
	if _, err := srv.drain(ctx, []string{gp.ID}, 60*time.Second, false); err != nil {
		return res.fail("peak group: %v", err)
	}
	peak := float64(peakN) / time.Since(t0).Seconds()
	perSec := max(1, int(math.Round(peak/2)))
	res.notes = append(res.notes, fmt.Sprintf("peak %.0f recipients/s (1 send + 2 webhooks each); soak at %d/s for %s", peak, perSec, h.cfg.soak))
	h.logf("T10: peak %.0f recipients/s; soaking at %d/s for %s", peak, perSec, h.cfg.soak)

	ids := []string{gp.ID}
	recipients := peakN
	var samples []soakSample
	var soakLat []time.Duration
	begin := time.Now()
	lastSample := begin
	create := time.NewTicker(time.Second)
	defer create.Stop()
	sample := time.NewTicker(5 * time.Second)
	defer sample.Stop()
	end := time.NewTimer(h.cfg.soak)
	defer end.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			return res.fail("%v", ctx.Err())
		case <-end.C:
			break loop
		case <-create.C:
			g, _, err := srv.newGroup(ctx, "t10 soak", perSec, "")
			if err != nil {
				return res.fail("create group during soak: %v", err)
			}
			ids = append(ids, g.ID)
			recipients += perSec
		case now := <-sample.C:
			s, err := measure(ctx, srv, db)
			if err != nil {
				return res.fail("measure: %v", err)
			}
			s.at, s.recipients = now.Sub(begin), recipients
			var lat []time.Duration
			for _, r := range h.proxy.records() {
				if r.acked() && !r.At.Before(lastSample) && r.At.Before(now) {
					lat = append(lat, r.Latency)
				}
			}
			s.acked, s.p99MS = len(lat), p99MS(lat)
			soakLat = append(soakLat, lat...)
			lastSample = now
			samples = append(samples, s)
			h.logf("T10 %5.0fs rss=%dMB threads=%d fds=%d goroutines=%d wal=%dKB db=%dMB acked=%d p99=%dms load=%.1f",
				s.at.Seconds(), s.rssKB>>10, s.threads, s.fds, s.goroutines, s.walBytes>>10, s.dbBytes>>20, s.acked, s.p99MS, s.load1)
		}
	}
	res.notes = append(res.notes, soakTable(samples)...)
	res.problems = append(res.problems, judgeSoak(samples)...)
	p99 := p99MS(soakLat)
	res.notes = append(res.notes, fmt.Sprintf("soak p99 acknowledgement latency %d ms over %d webhooks", p99, len(soakLat)))
	if p99 >= soakBounds.p99MS {
		res.problems = append(res.problems, fmt.Sprintf("soak p99 acknowledgement latency %d ms (bound < %d ms)", p99, soakBounds.p99MS))
	}
	if _, err := srv.drain(ctx, ids, 90*time.Second, false); err != nil {
		res.problems = append(res.problems, "after the soak: "+err.Error())
	}
	probs, fin := srv.finalCheck(ctx, ids)
	res.problems = append(res.problems, probs...)
	res.notes = append(res.notes, fmt.Sprintf("%d groups, %d acknowledged webhooks, %d lost", len(ids), fin.acked, fin.lost))
	return res
}

// measure reads the server's process figures.
func measure(ctx context.Context, srv *server, db string) (soakSample, error) {
	var s soakSample
	pid := srv.p.Pid()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			s.rssKB = n
		case "Threads":
			s.threads = n
		}
	}
	_ = f.Close()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	s.goroutines = int64(srv.api.metric(ctx, "go_goroutines"))
	if fi, err := os.Stat(db + "-wal"); err == nil {
		s.walBytes = fi.Size()
	}
	if fi, err := os.Stat(db); err == nil {
		s.dbBytes = fi.Size()
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			s.load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return s, nil
}

// minOf is the least of f over xs.
func minOf(xs []soakSample, f func(soakSample) int64) int64 {
	m := f(xs[0])
	for _, x := range xs[1:] {
		m = min(m, f(x))
	}
	return m
}

// judgeSoak compares the last third of the samples with the first third.
func judgeSoak(ss []soakSample) []string {
	b := soakBounds
	if len(ss) < b.minWindowSamples {
		return []string{fmt.Sprintf("only %d samples; the soak must last at least %ds", len(ss), 5*b.minWindowSamples)}
	}
	third := max(1, len(ss)/3)
	first, last := ss[:third], ss[len(ss)-third:]
	maxOf := func(xs []soakSample, f func(soakSample) int64) int64 {
		m := int64(0)
		for _, x := range xs {
			m = max(m, f(x))
		}
		return m
	}
	var problems []string
	rss := func(x soakSample) int64 { return x.rssKB }
	if a, z := maxOf(first, rss), maxOf(last, rss); float64(z) > b.rssFactor*float64(a)+float64(b.rssSlackKB) {
		problems = append(problems, fmt.Sprintf("RSS grew from %d MB to %d MB (bound: ×%.1f + %d MB)", a>>10, z>>10, b.rssFactor, b.rssSlackKB>>10))
	}
	// Goroutines: the floor of each third (its fewest), not a peak or a
	// median. Bursts of sends and connections in flight come and go (CI
	// runs saw 220 → 459 → 260, and 220 → 435 → 219 → 435 → 443 → 272,
	// two of four samples of the last third in a burst); a leak raises the
	// floor, since leaked goroutines never end.
	gor := func(x soakSample) int64 { return x.goroutines }
	if a, z := minOf(first, gor), minOf(last, gor); float64(z) > b.goroutineFactor*float64(a)+float64(b.goroutineSlack) {
		problems = append(problems, fmt.Sprintf("goroutines grew from %d to %d (bound: ×%.1f + %d)", a, z, b.goroutineFactor, b.goroutineSlack))
	}
	fd := func(x soakSample) int64 { return int64(x.fds) }
	if a, z := maxOf(first, fd), maxOf(last, fd); z > a+int64(b.fdSlack) {
		problems = append(problems, fmt.Sprintf("file descriptors grew from %d to %d (bound: +%d)", a, z, b.fdSlack))
	}
	for _, x := range ss {
		if x.walBytes > b.walBytes {
			problems = append(problems, fmt.Sprintf("WAL reached %d MB at %.0fs (bound %d MB)", x.walBytes>>20, x.at.Seconds(), b.walBytes>>20))
			break
		}
	}
	if z := ss[len(ss)-1]; z.recipients > 0 && z.dbBytes/int64(z.recipients) > b.dbBytesPerRecipient {
		problems = append(problems, fmt.Sprintf("database reached %d MB for %d recipients, %d bytes each (bound %d)",
			z.dbBytes>>20, z.recipients, z.dbBytes/int64(z.recipients), b.dbBytesPerRecipient))
	}
	for _, x := range ss {
		if x.p99MS >= b.windowP99MS {
			problems = append(problems, fmt.Sprintf("p99 acknowledgement latency %d ms at %.0fs (bound < %d ms in every window)", x.p99MS, x.at.Seconds(), b.windowP99MS))
		}
	}
	return problems
}

// soakTable renders the samples for the report.
func soakTable(ss []soakSample) []string {
	out := []string{"   t(s)  rss(MB)  threads  fds  goroutines  wal(KB)  db(MB)  recipients  acked  p99(ms)  load"}
	for _, s := range ss {
		out = append(out, fmt.Sprintf("  %5.0f  %7d  %7d  %3d  %10d  %7d  %6d  %10d  %5d  %7d  %4.1f",
			s.at.Seconds(), s.rssKB>>10, s.threads, s.fds, s.goroutines, s.walBytes>>10, s.dbBytes>>20, s.recipients, s.acked, s.p99MS, s.load1))
	}
	return out
}
