package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookReceiver is a customer's endpoint: it verifies every request with
// the official Standard Webhooks library, de-duplicates on webhook-id, and
// fails on purpose: everything while down, and 30 % of webhook ids on
// their first request. A webhook id fails at most once outside the down
// window, so the schedule's second try (5 s ± 20 %) always lands.
type hookReceiver struct {
	mu       sync.Mutex
	wh       *standardwebhooks.Webhook
	down     bool
	flaky    bool
	seen     map[string]bool      // webhook ids that reached us
	events   map[string]hookEvent // accepted, by webhook id
	requests int
	dups     int
	rejected int
	badSigs  int
}

type hookEvent struct {
	Type string `json:"type"`
	Data struct {
		GroupID   string `json:"group_id"`
		Seq       uint64 `json:"seq"`
		Recipient *struct {
			Number string `json:"number"`
			Status string `json:"status"`
		} `json:"recipient"`
		Group *struct {
			Status string `json:"status"`
		} `json:"group"`
	} `json:"data"`
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	id := r.Header.Get("webhook-id")
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	if h.wh == nil || h.wh.Verify(body, r.Header) != nil {
		h.badSigs++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	first := !h.seen[id]
	h.seen[id] = true
	sum := sha256.Sum256([]byte(id))
	if h.down || (h.flaky && first && sum[0]%10 < 3) {
		h.rejected++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if _, dup := h.events[id]; dup {
		h.dups++
	} else {
		var ev hookEvent
		if err := json.Unmarshal(body, &ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.events[id] = ev
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *hookReceiver) set(fn func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fn()
}

// converged compares what the receiver holds with the groups as the API
// shows them now and returns what is missing (nil when nothing is).
func (h *hookReceiver) converged(groups []groupView) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	type last struct {
		seq    uint64
		status string
	}
	latest := map[string]last{} // group/number → newest recipient.updated
	has := map[string]bool{}    // group/type, group/number/recipient.replied
	for _, ev := range h.events {
		g := ev.Data.GroupID
		has[g+"/"+ev.Type] = true
		if ev.Data.Recipient == nil {
			continue
		}
		k := g + "/" + ev.Data.Recipient.Number
		has[k+"/"+ev.Type] = true
		if ev.Type == "recipient.updated" && ev.Data.Seq >= latest[k].seq {
			latest[k] = last{ev.Data.Seq, ev.Data.Recipient.Status}
		}
	}
	var missing []string
	for _, g := range groups {
		if !has[g.ID+"/group.created"] {
			missing = append(missing, g.ID+": group.created")
		}
		if g.Status == "complete" && !has[g.ID+"/group.completed"] {
			missing = append(missing, g.ID+": group.completed")
		}
		for _, r := range g.Recipients {
			k := g.ID + "/" + r.Number
			if got := latest[k].status; got != r.Status {
				missing = append(missing, fmt.Sprintf("%s: newest recipient.updated says %q, the API %q", k, got, r.Status))
			}
			if r.ReplyText != "" && !has[k+"/recipient.replied"] {
				missing = append(missing, k+": recipient.replied")
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// TestKillWhileWebhooksFire is T14's outbound part with real processes:
// `crewcast serve` (demo provider) fans out three groups while an
// endpoint subscribed to everything is down for 2 s and then fails 30 %
// of first requests; serve is killed with SIGKILL mid-burst and started
// again on the same database. Every change the store committed must reach
// the endpoint at least once, signed: for every group its creation and
// completion, for every recipient its newest status (by seq) and its reply.
func TestKillWhileWebhooksFire(t *testing.T) {
	rc := &hookReceiver{seen: map[string]bool{}, events: map[string]hookEvent{}}
	rs := httptest.NewServer(rc)
	t.Cleanup(rs.Close)
	env := []string{"CREWCAST_ADMIN_KEY=" + adminKey, "CREWCAST_WEBHOOK_ALLOW_PRIVATE=1",
		"CREWCAST_WEBHOOK_SECRET_KEY=e2e webhook sealing key, not a real one"}
	db := filepath.Join(t.TempDir(), "crewcast.db")
	args := []string{"--db", db, "--provider", "demo", "--send-rate", "25", "--provider-timeout", "2s",
		"--check-after", "1s", "--check-deadline", "5s"}
	srv1, url1 := startServe(t, "serve-1", env, args...)

	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if _, err := call(http.MethodPost, url1+"/v1/webhook-endpoints", adminKey,
		map[string]any{"url": rs.URL + "/hooks", "events": []string{"*"}}, &ep, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.set(func() { rc.wh, rc.down = wh, true })
	var ids []string
	for g := 0; g < 3; g++ {
		to := numbers(100)[g*30 : g*30+30]
		ids = append(ids, createGroup(t, url1, to, fmt.Sprintf("Crew call %d: site B, 7:00. Reply YES or NO.", g)))
	}
	// The endpoint is down: first attempts fail. Until a few have.
	for deadline := time.Now().Add(30 * time.Second); ; {
		rc.mu.Lock()
		refused := rc.rejected
		rc.mu.Unlock()
		if refused >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d webhook deliveries attempted while the endpoint was down", refused)
		}
		time.Sleep(20 * time.Millisecond) // another process: poll
	}
	rc.set(func() { rc.down, rc.flaky = false, true })
	deadline := time.Now().Add(30 * time.Second)
	for {
		rc.mu.Lock()
		n := len(rc.events)
		rc.mu.Unlock()
		if n >= 60 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d webhooks received before the kill", n)
		}
		time.Sleep(20 * time.Millisecond) // another process: poll
	}
	srv1.Kill()
	if !srv1.KilledBySIGKILL() {
		t.Fatalf("serve-1 ended with %v, want death by SIGKILL", srv1.Err())
	}
	rc.mu.Lock()
	atKill := len(rc.events)
	rc.mu.Unlock()

	_, url2 := startServe(t, "serve-2", env, args...)
	var groups []groupView
	var missing []string
	for deadline := time.Now().Add(90 * time.Second); ; {
		groups = groups[:0]
		final := true
		for _, id := range ids {
			var g groupView
			if _, err := call(http.MethodGet, url2+"/v1/groups/"+id, adminKey, nil, &g, http.StatusOK); err != nil {
				t.Fatal(err)
			}
			final = final && g.Status == "complete"
			groups = append(groups, g)
		}
		if missing = rc.converged(groups); final && len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every committed change reached the endpoint (groups final: %v); %d missing, first: %s",
				final, len(missing), strings.Join(missing[:min(10, len(missing))], "; "))
		}
		time.Sleep(200 * time.Millisecond) // another process: poll
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.badSigs != 0 {
		t.Fatalf("%d requests failed signature verification", rc.badSigs)
	}
	t.Logf("%d webhooks (%d at the kill), %d requests, %d refused on purpose, %d duplicates after the crash",
		len(rc.events), atKill, rc.requests, rc.rejected, rc.dups)
	if rc.rejected == 0 {
		t.Fatal("no request was refused: the fault injection did not run")
	}
}
