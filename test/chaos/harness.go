package main

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// harness is one chaos run: the simulator, the proxies, the registry of
// groups and the running totals.
type harness struct {
	cfg config
	out io.Writer
	ps  *procs
	dir string
	rng *rand.Rand

	sim      *proc
	simAPI   simAPI
	keys     simKeys
	proxy    *webhookProxy
	proxyURL string
	gate     *sendGate
	gateURL  string
	stops    []func()
	cleanups []func()

	main     *server // shared by T1, T2, T5, T11
	reg      *registry
	sign     signer
	signSeed string
	adminKey string
	numSeq   atomic.Int64
	fromSeq  atomic.Int64
	textSeq  atomic.Int64

	mu          sync.Mutex
	iterations  int
	lost        int
	unconfirmed int
	crafted     []time.Duration // latencies of crafted webhooks the server acknowledged
	results     []scenarioResult
}

// scenarioResult is one scenario's verdict.
type scenarioResult struct {
	name     string
	ran      bool // false: could not run here (reason in notes)
	problems []string
	notes    []string
	took     time.Duration
}

// fail records a problem and returns the result so far, for
// `return res.fail(...)`. Scenarios name their result (res) so that what
// their deferred clean-ups append — a server that failed to stop, say —
// still reaches the caller after such a return.
func (r *scenarioResult) fail(format string, args ...any) scenarioResult {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
	return *r
}

func newHarness(cfg config, out io.Writer) (*harness, error) {
	dir := cfg.workDir
	if dir == "" {
		d, err := os.MkdirTemp("", "crewcast-chaos-")
		if err != nil {
			return nil, err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	seed := sha256.Sum256([]byte("chaos-signing-" + strconv.FormatInt(cfg.seed, 10)))
	s, seedB64 := newSigner(seed[:32])
	admin := sha256.Sum256([]byte("chaos-admin-" + strconv.FormatInt(cfg.seed, 10)))
	h := &harness{
		cfg: cfg, out: out, ps: newProcs(), dir: dir,
		rng: rand.New(rand.NewPCG(uint64(cfg.seed), 0x63686173)),
		reg: newRegistry(), sign: s, signSeed: seedB64,
		adminKey: fmt.Sprintf("chaos-admin-%x", admin[:16]),
	}
	h.numSeq.Store(2000000)
	return h, nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.out, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// build compiles crewcast unless a binary was given.
func (h *harness) build(ctx context.Context) error {
	if h.cfg.bin != "" {
		return nil
	}
	h.cfg.bin = filepath.Join(h.dir, "crewcast")
	args := []string{"build", "-o", h.cfg.bin}
	if h.cfg.race {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/crewcast")
	h.logf("building crewcast: go %s", strings.Join(args, " "))
	return runCmd(ctx, h.cfg.moduleRoot, "go", args...)
}

// startSim starts the simulator and the two proxies.
func (h *harness) startSim(ctx context.Context) error {
	h.proxy = newWebhookProxy()
	u, stop, err := serve(ctx, h.proxy)
	if err != nil {
		return err
	}
	h.proxyURL, h.stops = u, append(h.stops, stop)
	args := []string{"sim", "--addr", "127.0.0.1:0",
		"--telnyx-webhook-url", h.proxyURL + "/webhooks/telnyx",
		// The failover URL is the same proxy: 6 attempts spread over the
		// back-offs outlast a server restart, as a real provider's
		// retries outlast a deploy.
		"--telnyx-failover-url", h.proxyURL + "/webhooks/telnyx",
		"--retry-backoff", "700ms", "--webhook-timeout", "2s",
		"--seed", strconv.FormatInt(h.cfg.seed, 10),
		"--telnyx-signing-seed", h.signSeed,
		"--delay-ms", "50,300",
		// Longer than the server's provider timeout, so an ambiguous send
		// is a timeout at the client (docs/design.md §4 "uncertain").
		"--accept-timeout-hold", "10s",
	}
	token := crand.Text()
	h.sim, err = h.ps.start(ctx, "sim", h.cfg.bin, args, []string{"CREWCAST_SIM_TOKEN=" + token}, filepath.Join(h.dir, "sim.log"),
		"crewcast sim listening on ", 20*time.Second)
	if err != nil {
		return err
	}
	h.simAPI = simAPI{base: h.sim.url, token: token}
	if h.keys, err = h.simAPI.keys(ctx); err != nil {
		return err
	}
	h.gate = newSendGate(h.sim.url)
	gu, gstop, err := serve(ctx, h.gate)
	if err != nil {
		return err
	}
	h.gateURL, h.stops = gu, append(h.stops, gstop)
	h.logf("sim %s (log %s), webhook proxy %s, send gate %s", h.sim.url, h.sim.LogPath, h.proxyURL, h.gateURL)
	return nil
}

// dumpRecords writes every webhook record as JSON lines, for post-mortems.
func (h *harness) dumpRecords() {
	if h.proxy == nil {
		return
	}
	f, err := os.Create(filepath.Join(h.dir, "webhooks.jsonl"))
	if err != nil {
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, r := range h.proxy.records() {
		_ = enc.Encode(map[string]any{"at": r.At.Format(time.RFC3339Nano), "event_id": r.EventID, "type": r.EventType,
			"message_id": r.MessageID, "number": r.Number, "status": r.Status, "code": r.Code, "latency_ms": r.Latency.Milliseconds()})
	}
}

// cleanup ends every process and undoes every mount; safe to call twice.
func (h *harness) cleanup() {
	h.ps.killAll()
	for i := len(h.cleanups) - 1; i >= 0; i-- {
		h.cleanups[i]()
	}
	h.cleanups = nil
	if h.gate != nil {
		h.gate.releaseAll()
	}
	for _, stop := range h.stops {
		stop()
	}
	h.stops = nil
}

// server is one crewcast serve process configuration, restartable.
type server struct {
	h       *harness
	name    string
	db      string
	args    []string // extra flags
	env     []string // extra environment (T8: the cluster secret)
	p       *proc
	api     api
	logPath string
	groups  []string
}

func (h *harness) newServer(name, db string, extra ...string) *server {
	return &server{h: h, name: name, db: db, args: extra, logPath: filepath.Join(h.dir, name+".log")}
}

// start runs the server and points the webhook proxy at it.
func (s *server) start(ctx context.Context) error {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--provider", "telnyx", "--db", s.db,
		"--check-after", "2s", "--provider-timeout", "3s", "--log-level", "info"}, s.args...)
	env := []string{
		"CREWCAST_TELNYX_API_KEY=" + s.h.keys.TelnyxAPIKey,
		"CREWCAST_TELNYX_PUBLIC_KEY=" + s.h.keys.TelnyxPublicKey,
		"CREWCAST_TELNYX_API_BASE=" + s.h.gateURL,
		// Off, so that every provider call the server makes reaches the
		// simulator's ledger: with keys on, the simulator would swallow a
		// resend and hide it from the duplicate check.
		"CREWCAST_TELNYX_IDEMPOTENCY_KEYS=false",
		"CREWCAST_ADMIN_KEY=" + s.h.adminKey,
	}
	env = append(env, s.env...)
	p, err := s.h.ps.start(ctx, s.name, s.h.cfg.bin, args, env, s.logPath, "crewcast serving on ", 60*time.Second)
	if err != nil {
		return err
	}
	s.p = p
	s.api = api{base: p.url, key: s.h.adminKey}
	if err := s.api.ready(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("%s: %w; log: %s", s.name, err, s.logPath)
	}
	s.h.proxy.setUpstream(p.url)
	return nil
}

// kill9 kills the server with SIGKILL.
func (s *server) kill9() {
	s.h.proxy.setUpstream("")
	if s.p != nil {
		s.p.Kill()
	}
}

// restart kills the server with SIGKILL and starts it again.
func (s *server) restart(ctx context.Context) error {
	s.kill9()
	return s.start(ctx)
}

// stop shuts the server down gracefully.
func (s *server) stop() error {
	s.h.proxy.setUpstream("")
	if s.p == nil || !s.p.Alive() {
		return nil
	}
	return s.p.Stop(40 * time.Second)
}

// logSize is the current size of the server log, to read what follows.
func (s *server) logSize() int64 {
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logSince returns the server log from offset on.
func (s *server) logSince(off int64) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || off > int64(len(b)) {
		return ""
	}
	return string(b[off:])
}

// numbers returns n fresh recipient numbers, unique in the run.
func (h *harness) numbers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", h.numSeq.Add(1))
	}
	return out
}

// peekNumbers returns the numbers the next newGroup will use, so that the
// simulator can be scripted for them first (the harness creates groups one
// at a time).
func (h *harness) peekNumbers(n int) []string {
	next := h.numSeq.Load()
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("+1555%07d", next+int64(i)+1)
	}
	return out
}

// newGroup creates a group of n fresh recipients on s and registers it.
func (s *server) newGroup(ctx context.Context, label string, n int, checkAfter string) (groupView, []string, error) {
	h := s.h
	to := h.numbers(n)
	from := fmt.Sprintf("+1555010%04d", h.fromSeq.Add(1))
	text := fmt.Sprintf("chaos %s #%d seed %d", label, h.textSeq.Add(1), h.cfg.seed)
	g, err := s.api.createGroup(ctx, from, to, text, checkAfter)
	if err != nil {
		return groupView{}, nil, err
	}
	h.reg.add(g, to)
	s.groups = append(s.groups, g.ID)
	return g, to, nil
}

// settled reports whether no recipient is pending or sending (nor sent,
// unless allowSent) and returns the counts of the ones that are.
func settled(gs []groupView, allowSent bool) (bool, map[string]int) {
	left := map[string]int{}
	for _, g := range gs {
		for _, r := range g.Recipients {
			if r.Status == "pending" || r.Status == "sending" || (!allowSent && r.Status == "sent") {
				left[r.Status]++
			}
		}
	}
	return len(left) == 0, left
}

// drain polls the groups until every send is resolved (see settled) or
// timeout; it returns the last views.
func (s *server) drain(ctx context.Context, ids []string, timeout time.Duration, allowSent bool) ([]groupView, error) {
	deadline := time.Now().Add(timeout)
	var views []groupView
	var left map[string]int
	for {
		views = views[:0]
		var err error
		for _, id := range ids {
			var g groupView
			if g, err = s.api.group(ctx, id); err != nil {
				break
			}
			views = append(views, g)
		}
		if err == nil {
			var ok bool
			if ok, left = settled(views, allowSent); ok {
				return views, nil
			}
		}
		if ctx.Err() != nil {
			return views, ctx.Err()
		}
		if time.Now().After(deadline) {
			if err != nil {
				return views, fmt.Errorf("drain: %w", err)
			}
			return views, fmt.Errorf("drain: still %v after %s", left, timeout)
		}
		time.Sleep(200 * time.Millisecond) // polling an external process
	}
}

// collect reads each group and its journal.
func (s *server) collect(ctx context.Context, ids []string) (map[string]groupState, error) {
	out := make(map[string]groupState, len(ids))
	for _, id := range ids {
		g, err := s.api.group(ctx, id)
		if err != nil {
			return nil, err
		}
		evs, err := s.api.journal(ctx, id)
		if err != nil {
			return nil, err
		}
		out[id] = groupState{view: g, eventIDs: journalEventIDs(evs)}
	}
	return out, nil
}

// check runs checkGroups for the groups. With tally, the figures go into
// the run's totals (each group is tallied once, by its scenario's final
// check).
func (s *server) check(ctx context.Context, ids []string, drained, tally bool) (checkResult, error) {
	h := s.h
	gs, err := s.collect(ctx, ids)
	if err != nil {
		return checkResult{}, err
	}
	ledger, err := h.simAPI.ledger(ctx)
	if err != nil {
		return checkResult{}, err
	}
	byNumber, byText, _ := h.reg.snapshot()
	counts, _ := sendCounts(ledger, byText)
	res := checkGroups(checkInput{groups: gs, byNumber: byNumber, counts: counts, records: h.proxy.records(), drained: drained})
	if tally {
		h.mu.Lock()
		h.lost += res.lost
		h.unconfirmed += res.unconfirmed
		h.mu.Unlock()
	}
	return res, nil
}

// finalCheck is a scenario's last word on its groups: it lets the
// simulator's webhooks settle, then checks; an acknowledged webhook not
// yet reflected gets up to one inbox sweep interval (15 s) to be, since
// crewcast only promises to apply what it acknowledged eventually.
func (s *server) finalCheck(ctx context.Context, ids []string) ([]string, checkResult) {
	s.h.quiesce(ctx, 2*time.Second, 30*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := s.check(ctx, ids, true, false)
		if err != nil {
			return []string{"final check: " + err.Error()}, res
		}
		if res.lost == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			res, err = s.check(ctx, ids, true, true)
			if err != nil {
				return []string{"final check: " + err.Error()}, res
			}
			return res.problems, res
		}
		_ = sleep(ctx, time.Second) // polling an external process
	}
}

// quiesce waits until the proxy has seen no webhook for quiet (at most
// max): the simulator's chains and retries for what was sent have run out.
func (h *harness) quiesce(ctx context.Context, quiet, max time.Duration) {
	end := time.Now().Add(max)
	for time.Now().Before(end) && ctx.Err() == nil {
		recs := h.proxy.records()
		last := time.Time{}
		if len(recs) > 0 {
			r := recs[len(recs)-1]
			last = r.At.Add(r.Latency)
		}
		if time.Since(last) >= quiet {
			return
		}
		_ = sleep(ctx, 200*time.Millisecond) // polling the proxy's record of an external process
	}
}

// ledgerCounts returns the sends per group|number so far.
func (h *harness) ledgerCounts(ctx context.Context) (map[string]int, error) {
	ledger, err := h.simAPI.ledger(ctx)
	if err != nil {
		return nil, err
	}
	_, byText, _ := h.reg.snapshot()
	counts, _ := sendCounts(ledger, byText)
	return counts, nil
}

// summary computes the CHAOS line's figures.
func (h *harness) summary(ctx context.Context) (string, []string) {
	var problems []string
	dups := 0
	if h.sim != nil && h.sim.Alive() {
		ledger, err := h.simAPI.ledger(ctx)
		if err != nil {
			problems = append(problems, "read the simulator ledger: "+err.Error())
		} else {
			_, byText, allowed := h.reg.snapshot()
			var p []string
			dups, p = checkDuplicates(ledger, byText, allowed)
			problems = append(problems, p...)
		}
	}
	var recs []webhookRecord
	if h.proxy != nil {
		recs = h.proxy.records()
	}
	acked := 0
	for _, r := range recs {
		if r.acked() {
			acked++
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lat := append(ackLatencies(recs), h.crafted...)
	return fmt.Sprintf("CHAOS iterations=%d acked_webhooks=%d lost=%d duplicate_sends=%d unconfirmed=%d p99_ack_ms=%d",
		h.iterations, acked+len(h.crafted), h.lost, dups, h.unconfirmed, p99MS(lat)), problems
}

// noteCrafted records the latency of a crafted webhook the server acked.
func (h *harness) noteCrafted(d time.Duration) {
	h.mu.Lock()
	h.crafted = append(h.crafted, d)
	h.mu.Unlock()
}

// shuffle shuffles s with the run's seeded source.
func shuffle[T any](h *harness, s []T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}

// randDur returns a duration uniformly in [lo, hi].
func (h *harness) randDur(lo, hi time.Duration) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(h.rng.Int64N(int64(hi-lo)))
}

// randInt returns an int uniformly in [lo, hi].
func (h *harness) randInt(lo, hi int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hi <= lo {
		return lo
	}
	return lo + h.rng.IntN(hi-lo+1)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// statusCounts summarises recipients by status, for progress lines.
func statusCounts(gs []groupView) string {
	c := map[string]int{}
	for _, g := range gs {
		for _, r := range g.Recipients {
			c[r.Status]++
		}
	}
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, c[k])
	}
	return b.String()
}
