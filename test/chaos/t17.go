package main

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runT17 (docs/testing.md T17): two providers, one pool of 3 Telnyx + 3
// Twilio numbers. Each iteration creates a pool group, puts one provider
// into an outage ("refuse" on its own listener, or "503") mid fan-out,
// kills -9 the server at a random moment, restarts it and ends the outage.
// At the end both ledgers together must hold nobody twice (per person and
// text), every recipient.sender_changed must move someone from one
// provider's number to the other's and never after an ambiguous attempt of
// theirs (a send.outcomes "uncertain" or send.unconfirmed earlier in the
// journal; a person moved while certainly unsent whose later attempt was
// ambiguous is fine), and the fan-outs must have gone through both
// providers.
//
// It runs its own simulator (both providers, each on its own listener, so a
// refusal is real) and its own server on a fixed port the simulator posts
// both providers' webhooks to: kill -9 leaves them to the simulator's
// retries, as a real provider's outlast a restart.
func runT17(ctx context.Context, h *harness) (res scenarioResult) {
	res = scenarioResult{ran: true}
	ports, err := freePorts(3)
	if err != nil {
		return res.fail("ports: %v", err)
	}
	srvAddr, tnxAddr, twAddr := ports[0], ports[1], ports[2]
	public := "http://" + srvAddr
	token := crand.Text()
	simArgs := []string{"sim", "--addr", "127.0.0.1:0", "--telnyx-addr", tnxAddr, "--twilio-addr", twAddr,
		"--telnyx-webhook-url", public + "/webhooks/telnyx", "--twilio-webhook-url", public + "/webhooks/twilio",
		"--retry-backoff", "700ms", "--webhook-timeout", "2s", "--seed", strconv.FormatInt(h.cfg.seed+17, 10),
		"--delay-ms", "20,200"}
	sp, err := h.ps.start(ctx, "sim-t17", h.cfg.bin, simArgs, []string{"CREWCAST_SIM_TOKEN=" + token},
		filepath.Join(h.dir, "sim-t17.log"), "crewcast sim listening on ", 20*time.Second)
	if err != nil {
		return res.fail("start simulator: %v", err)
	}
	defer sp.Kill()
	sim := simAPI{base: sp.url, token: token}
	keys, err := sim.keys(ctx)
	if err != nil {
		return res.fail("simulator keys: %v", err)
	}
	srv := &server{h: h, name: "server-t17", db: filepath.Join(h.dir, "t17.db"), logPath: filepath.Join(h.dir, "server-t17.log")}
	start := func() error {
		args := []string{"serve", "--addr", srvAddr, "--provider", "telnyx", "--db", srv.db,
			"--check-after", "2s", "--provider-timeout", "3s", "--log-level", "info"}
		env := []string{
			"CREWCAST_TELNYX_API_KEY=" + keys.TelnyxAPIKey, "CREWCAST_TELNYX_PUBLIC_KEY=" + keys.TelnyxPublicKey,
			"CREWCAST_TELNYX_API_BASE=http://" + tnxAddr,
			"CREWCAST_TWILIO_ACCOUNT_SID=" + keys.TwilioAccountSID, "CREWCAST_TWILIO_AUTH_TOKEN=" + keys.TwilioAuthToken,
			"CREWCAST_TWILIO_API_BASE=http://" + twAddr,
			// Off, so every call reaches a ledger: nothing hides a resend.
			"CREWCAST_TELNYX_IDEMPOTENCY_KEYS=false",
			"CREWCAST_ADMIN_KEY=" + h.adminKey,
		}
		p, err := h.ps.start(ctx, srv.name, h.cfg.bin, args, env, srv.logPath, "crewcast serving on ", 60*time.Second)
		if err != nil {
			return err
		}
		srv.p, srv.api = p, api{base: p.url, key: h.adminKey}
		return srv.api.ready(ctx, 30*time.Second)
	}
	if err := start(); err != nil {
		return res.fail("start server: %v (log %s)", err, srv.logPath)
	}
	defer func() {
		if srv.p != nil && srv.p.Alive() {
			if err := srv.p.Stop(40 * time.Second); err != nil {
				res.problems = append(res.problems, "stop server: "+err.Error())
			}
		}
	}()
	const pool = "t17"
	providerOf := map[string]string{}
	for i := range 3 {
		for _, p := range []string{"telnyx", "twilio"} {
			num := fmt.Sprintf("+155501%02d%03d", 70+len(providerOf), i)
			providerOf[num] = p
			body := map[string]any{"number": num, "provider": p, "pool": pool, "mps": 2}
			if code, err := doJSON(ctx, http.MethodPost, srv.api.base+"/v1/senders", srv.api.key, body, nil); err != nil || code != http.StatusCreated {
				return res.fail("add sender %s: %d %v", num, code, err)
			}
		}
	}
	iterations := min(max(h.cfg.iterations, 1), 4)
	var ids []string
	texts := map[string]bool{}
	outages := 0
	for i := 0; i < iterations && ctx.Err() == nil; i++ {
		n := h.randInt(80, 150) // 12 a second over the pool: a fan-out of 7-13 s
		to := h.numbers(n)
		text := fmt.Sprintf("chaos t17 #%d seed %d", h.textSeq.Add(1), h.cfg.seed)
		texts[text] = true
		var g groupView
		if _, err := doJSON(ctx, http.MethodPost, srv.api.base+"/v1/groups", srv.api.key,
			map[string]any{"pool": pool, "to": to, "text": text}, &g); err != nil {
			res.problems = append(res.problems, fmt.Sprintf("iteration %d: create pool group: %v", i, err))
			continue
		}
		ids = append(ids, g.ID)
		down := []string{"telnyx", "twilio"}[i%2]
		kind := []string{"refuse", "503"}[(i/2)%2]
		if sleep(ctx, h.randDur(300*time.Millisecond, 1500*time.Millisecond)) != nil {
			break
		}
		if err := sim.setFaults(ctx, map[string]any{"provider": down, "outage": kind}); err != nil {
			return res.fail("iteration %d: outage: %v", i, err)
		}
		outages++
		if sleep(ctx, h.randDur(500*time.Millisecond, 2*time.Second)) != nil {
			break
		}
		srv.p.Kill()
		if err := start(); err != nil {
			return res.fail("iteration %d: restart: %v (log %s)", i, err, srv.logPath)
		}
		// Long enough after the restart for 5 refusals to open the circuit.
		if sleep(ctx, h.randDur(2*time.Second, 4*time.Second)) != nil {
			break
		}
		if err := sim.setFaults(ctx, map[string]any{"provider": down, "outage": "off"}); err != nil {
			return res.fail("iteration %d: end outage: %v", i, err)
		}
	}
	// Settle: nothing pending or sending. A send refused before its
	// provider's circuit opened (and never failed over: the circuit opened
	// too late, or not at all in a short outage) waits for its retry, 5
	// minutes after the refusal.
	views, err := srv.drain(ctx, ids, 7*time.Minute, true)
	if err != nil {
		res.problems = append(res.problems, "settle: "+err.Error())
	}
	ledger, err := sim.ledger(ctx)
	if err != nil {
		return res.fail("ledger: %v", err)
	}
	per := map[string]int{}
	byProv := map[string]int{}
	for _, s := range ledger {
		if !texts[s.Text] {
			continue
		}
		per[s.To+"\x00"+s.Text]++
		byProv[s.Provider]++
	}
	dups := 0
	for k, c := range per {
		if c > 1 {
			dups++
			to, text, _ := strings.Cut(k, "\x00")
			res.problems = append(res.problems, fmt.Sprintf("DUPLICATE: %s got %q %d times across both ledgers", to, text, c))
		}
	}
	unconfirmed := map[string]bool{}
	for _, g := range views {
		for _, r := range g.Recipients {
			if r.Status == "unconfirmed" {
				unconfirmed[g.ID+"/"+r.Number] = true
			}
		}
	}
	moves := 0
	for _, id := range ids {
		evs, err := srv.api.journal(ctx, id)
		if err != nil {
			res.problems = append(res.problems, fmt.Sprintf("journal %s: %v", id, err))
			continue
		}
		var roster []string
		ambiguous := map[int]bool{} // recipients whose attempt went unconfirmed, so far in the journal
		for _, e := range evs {
			switch e.Type {
			case "send.outcomes":
				var o struct {
					Outcomes []struct {
						I      []int  `json:"i"`
						Result string `json:"result"`
					} `json:"outcomes"`
				}
				_ = json.Unmarshal(e.Data, &o)
				for _, x := range o.Outcomes {
					if x.Result == "uncertain" {
						for _, i := range x.I {
							ambiguous[i] = true
						}
					}
				}
			case "send.unconfirmed":
				var u struct {
					I []int `json:"i"`
				}
				_ = json.Unmarshal(e.Data, &u)
				for _, i := range u.I {
					ambiguous[i] = true
				}
			case "group.created":
				var c struct {
					Recipients []struct {
						Number string `json:"number"`
					} `json:"recipients"`
				}
				_ = json.Unmarshal(e.Data, &c)
				for _, r := range c.Recipients {
					roster = append(roster, r.Number)
				}
			case "recipient.sender_changed":
				var sc struct {
					Changes []struct {
						I    int    `json:"i"`
						From string `json:"from"`
						Was  string `json:"was"`
					} `json:"changes"`
				}
				_ = json.Unmarshal(e.Data, &sc)
				for _, c := range sc.Changes {
					moves++
					if providerOf[c.From] == providerOf[c.Was] {
						res.problems = append(res.problems, fmt.Sprintf("group %s: recipient %d moved within one provider (%s → %s)", id, c.I, c.Was, c.From))
					}
					// Moved after an ambiguous attempt: the move would send
					// again what may have gone out (never twice).
					if ambiguous[c.I] {
						who := strconv.Itoa(c.I)
						if c.I < len(roster) {
							who = roster[c.I]
						}
						res.problems = append(res.problems, fmt.Sprintf("group %s: %s was failed over after an ambiguous attempt", id, who))
					}
				}
			}
		}
	}
	if byProv["telnyx"] == 0 || byProv["twilio"] == 0 {
		res.problems = append(res.problems, fmt.Sprintf("sends by provider %v: want both", byProv))
	}
	if moves == 0 {
		res.problems = append(res.problems, "no recipient failed over: the scenario exercised nothing")
	}
	h.mu.Lock()
	h.iterations += iterations
	h.unconfirmed += len(unconfirmed)
	h.mu.Unlock()
	res.notes = append(res.notes, fmt.Sprintf("%d kills, %d outages, %d groups, sends telnyx=%d twilio=%d, %d failed over, %d unconfirmed, %d duplicates",
		iterations, outages, len(ids), byProv["telnyx"], byProv["twilio"], moves, len(unconfirmed), dups))
	return res
}

// freePorts returns n loopback addresses free a moment ago.
func freePorts(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}
