package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// notifier wakes waiters whenever the gate or the relay records something.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

// changed returns a channel closed at the next notify.
func (n *notifier) changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// forward sends a copy of r with body to base and returns the answer.
func forward(ctx context.Context, c *http.Client, base string, r *http.Request, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header = r.Header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header, b, err
}

func writeAnswer(w http.ResponseWriter, code int, h http.Header, body []byte) {
	for k, vs := range h {
		if k != "Content-Length" && k != "Connection" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// sendGate sits between crewcast serve and the simulator's provider API.
// It forwards the first passFirst sends untouched; then it makes the two
// in-flight windows of a crash observable and holds them open until the
// caller of the send gives up (is killed):
//   - the next holdAfter sends are forwarded — the simulator accepts and
//     records them, and their webhooks flow — but their answers are
//     withheld ("after provider accept, before crewcast records it");
//   - every later send is held without being forwarded ("after claim
//     commit, before the provider call"), and never reaches the simulator.
//
// After open, everything is forwarded again. Lookups always pass.
type sendGate struct {
	sim       string
	client    *http.Client
	passFirst int
	holdAfter int
	n         *notifier
	release   chan struct{}
	released  sync.Once

	mu         sync.Mutex
	open       bool
	passed     int
	afterBegun int
	heldAfter  map[string]string // recipient → message id the simulator accepted
	heldBefore []string
	errs       []string
}

func newSendGate(simURL string, passFirst, holdAfter int, n *notifier) *sendGate {
	return &sendGate{sim: simURL, passFirst: passFirst, holdAfter: holdAfter, n: n, release: make(chan struct{}),
		client:    &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}},
		heldAfter: map[string]string{}}
}

// openUp forwards every send from now on.
func (g *sendGate) openUp() {
	g.mu.Lock()
	g.open = true
	g.mu.Unlock()
}

// close ends every hold and the gate's connections.
func (g *sendGate) close() {
	g.released.Do(func() { close(g.release) })
	g.client.CloseIdleConnections()
}

// state returns copies of what the gate holds.
func (g *sendGate) state() (after map[string]string, before []string, errs []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	after = make(map[string]string, len(g.heldAfter))
	for k, v := range g.heldAfter {
		after[k] = v
	}
	return after, append([]string(nil), g.heldBefore...), append([]string(nil), g.errs...)
}

func (g *sendGate) fail(msg string) {
	g.mu.Lock()
	g.errs = append(g.errs, msg)
	g.mu.Unlock()
	g.n.notify()
}

// hold blocks until the caller gives up or the gate closes.
func (g *sendGate) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-g.release:
	}
}

func (g *sendGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	mode := "pass"
	var to string
	if r.Method == http.MethodPost && r.URL.Path == "/v2/messages" {
		var req struct {
			To string `json:"to"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			g.fail("send body: " + err.Error())
		}
		to = req.To
		g.mu.Lock()
		switch {
		case g.open:
		case g.passed < g.passFirst:
			g.passed++
		case g.afterBegun < g.holdAfter:
			g.afterBegun++
			mode = "after"
		default:
			mode = "before"
			g.heldBefore = append(g.heldBefore, to)
		}
		g.mu.Unlock()
	}
	switch mode {
	case "pass":
		code, h, b, err := forward(r.Context(), g.client, g.sim, r, body)
		if err != nil {
			http.Error(w, "simulator unreachable", http.StatusBadGateway)
			return
		}
		writeAnswer(w, code, h, b)
	case "after":
		// Not tied to the caller: the simulator must record the send even
		// if crewcast dies while it is on its way.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, _, b, err := forward(ctx, g.client, g.sim, r, body)
		cancel()
		var msg struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err != nil || code != http.StatusOK || json.Unmarshal(b, &msg) != nil || msg.Data.ID == "" {
			g.fail("held-after send not accepted by the simulator")
		} else {
			g.mu.Lock()
			g.heldAfter[to] = msg.Data.ID
			g.mu.Unlock()
			g.n.notify()
		}
		g.hold(r)
		http.Error(w, "answer withheld", http.StatusBadGateway)
	case "before":
		g.n.notify()
		g.hold(r)
		http.Error(w, "never forwarded", http.StatusBadGateway)
	}
}

// webhookRelay sits between the simulator and crewcast serve, so the
// simulator keeps one webhook URL across restarts. It forwards to the
// current server (503 while there is none, as a dead host looks to a
// provider, which then retries) and records which events the server
// acknowledged.
type webhookRelay struct {
	upstream atomic.Pointer[string]
	client   *http.Client
	n        *notifier

	mu    sync.Mutex
	acked map[string]map[string]bool // message id → event types answered 2xx
}

func newWebhookRelay(n *notifier) *webhookRelay {
	return &webhookRelay{n: n, acked: map[string]map[string]bool{},
		client: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}}
}

// setUpstream points the relay at a server base URL ("" for none).
func (wr *webhookRelay) setUpstream(u string) {
	wr.upstream.Store(&u)
	wr.client.CloseIdleConnections()
}

// ackedTypes returns the event types the server acknowledged for a message.
func (wr *webhookRelay) ackedTypes(messageID string) map[string]bool {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	out := map[string]bool{}
	for k := range wr.acked[messageID] {
		out[k] = true
	}
	return out
}

func (wr *webhookRelay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	up := wr.upstream.Load()
	if up == nil || *up == "" {
		http.Error(w, "no server", http.StatusServiceUnavailable)
		return
	}
	code, h, b, err := forward(r.Context(), wr.client, *up, r, body)
	if err != nil {
		http.Error(w, "server unreachable", http.StatusServiceUnavailable)
		return
	}
	if code >= 200 && code <= 299 {
		var env struct {
			Data struct {
				EventType string `json:"event_type"`
				Payload   struct {
					ID string `json:"id"`
				} `json:"payload"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &env) == nil && env.Data.Payload.ID != "" {
			wr.mu.Lock()
			m := wr.acked[env.Data.Payload.ID]
			if m == nil {
				m = map[string]bool{}
				wr.acked[env.Data.Payload.ID] = m
			}
			m[env.Data.EventType] = true
			wr.mu.Unlock()
			wr.n.notify()
		}
	}
	writeAnswer(w, code, h, b)
}
