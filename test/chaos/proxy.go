package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// webhookRecord is one webhook the simulator posted through the proxy and
// what the server answered.
type webhookRecord struct {
	EventID   string
	EventType string // message.sent, message.finalized, message.received
	MessageID string
	// Number is the recipient the event is about: payload.to[0] for status
	// events, payload.from (the person replying) for message.received.
	Number string
	// Status is the provider status of a status event (sent, delivered,
	// delivery_failed, delivery_unconfirmed, …).
	Status string
	// Code is the server's HTTP status; 0 when the server could not be
	// reached or the connection broke (not acknowledged).
	Code    int
	Latency time.Duration
	At      time.Time
}

// acked reports whether the server acknowledged the webhook (2xx): from
// then on crewcast owns it and must never lose it.
func (r webhookRecord) acked() bool { return r.Code >= 200 && r.Code <= 299 }

// parseTelnyxWebhook extracts what the checks need from a Telnyx webhook
// body; fields it cannot find stay empty.
func parseTelnyxWebhook(body []byte) webhookRecord {
	var env struct {
		Data struct {
			ID        string `json:"id"`
			EventType string `json:"event_type"`
			Payload   struct {
				ID   string `json:"id"`
				From struct {
					PhoneNumber string `json:"phone_number"`
				} `json:"from"`
				To []struct {
					PhoneNumber string `json:"phone_number"`
					Status      string `json:"status"`
				} `json:"to"`
			} `json:"payload"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return webhookRecord{}
	}
	d := env.Data
	r := webhookRecord{EventID: d.ID, EventType: d.EventType, MessageID: d.Payload.ID}
	if d.EventType == "message.received" {
		r.Number = d.Payload.From.PhoneNumber
	} else if len(d.Payload.To) > 0 {
		r.Number = d.Payload.To[0].PhoneNumber
		r.Status = d.Payload.To[0].Status
	}
	return r
}

// webhookProxy sits between the simulator and the server (sim → proxy →
// server). It forwards every request unchanged, records each webhook's
// event and the server's answer, and measures the acknowledgement latency.
// While no server is up it answers 502, as a dead host looks to a provider.
type webhookProxy struct {
	upstream atomic.Pointer[string]
	client   *http.Client
	// onRecord, when set, sees each record as soon as it is made (used to
	// kill the server at a chosen moment).
	onRecord atomic.Pointer[func(webhookRecord)]

	mu   sync.Mutex
	recs []webhookRecord
}

func newWebhookProxy() *webhookProxy {
	return &webhookProxy{client: &http.Client{
		// Longer than the simulator's own 2 s webhook timeout, so the
		// proxy never gives up before the sender does.
		Timeout:   10 * time.Second,
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
	}}
}

// setUpstream points the proxy at a server base URL ("" = no server).
func (p *webhookProxy) setUpstream(u string) {
	p.upstream.Store(&u)
	if u == "" {
		p.client.CloseIdleConnections()
	}
}

// setHook installs (or, with nil, removes) the per-record callback.
func (p *webhookProxy) setHook(fn func(webhookRecord)) {
	if fn == nil {
		p.onRecord.Store(nil)
		return
	}
	p.onRecord.Store(&fn)
}

func (p *webhookProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	code, respBody, hdr := p.forward(r, body)
	// Only messaging webhooks are recorded: they are what the checks hold
	// crewcast to. Voice callbacks and email answer links (T19, whose
	// public URL is this proxy) are forwarded; T19 checks them through the
	// ledger, the mail and the API.
	if isMessagingWebhook(r.URL.Path) {
		rec := parseTelnyxWebhook(body)
		rec.At, rec.Code, rec.Latency = start, code, time.Since(start)
		p.mu.Lock()
		p.recs = append(p.recs, rec)
		p.mu.Unlock()
		if fn := p.onRecord.Load(); fn != nil {
			(*fn)(rec)
		}
	}
	if code == 0 {
		http.Error(w, "crewcast unreachable", http.StatusBadGateway)
		return
	}
	for k, vs := range hdr {
		if k == "Content-Length" || k == "Connection" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(code)
	_, _ = w.Write(respBody)
}

// isMessagingWebhook reports whether path is a provider's messaging
// webhook route (/webhooks/{provider}, not its /voice callbacks).
func isMessagingWebhook(path string) bool {
	return strings.HasPrefix(path, "/webhooks/") && !strings.HasSuffix(path, "/voice")
}

// forward posts the request to the current server; code 0 means no answer.
func (p *webhookProxy) forward(r *http.Request, body []byte) (int, []byte, http.Header) {
	up := p.upstream.Load()
	if up == nil || *up == "" {
		return 0, nil, nil
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, *up+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil
	}
	req.Header = r.Header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		// The status line arrived but the body broke: the server did
		// answer, and a provider would take the status as given.
		return resp.StatusCode, nil, resp.Header
	}
	return resp.StatusCode, rb, resp.Header
}

// records returns a copy of every record so far.
func (p *webhookProxy) records() []webhookRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]webhookRecord(nil), p.recs...)
}

// gateMode says what the send gate does with a provider send.
type gateMode int32

const (
	// gatePass forwards sends untouched.
	gatePass gateMode = iota
	// gateHoldBefore holds sends before they reach the simulator: the
	// claim is committed (crewcast claims before it calls) and the
	// provider has not seen the send — the fixed point "after claim
	// commit, before provider call".
	gateHoldBefore
	// gateHoldAfter forwards sends, lets the simulator accept and record
	// them, and holds the answer: the fixed point "after provider accept,
	// before crewcast records it".
	gateHoldAfter
)

// heldSend is a send the gate is holding, by recipient.
type heldSend struct {
	To       []string
	Accepted bool // the simulator accepted it (gateHoldAfter)
}

// sendGate sits between the server and the simulator's provider API
// (server → gate → sim). It forwards lookups always and sends according
// to its mode; held sends wait until release, then fail (their server is
// dead by then).
type sendGate struct {
	target string
	client *http.Client

	mu      sync.Mutex
	mode    gateMode
	held    []heldSend
	release chan struct{}
	changed chan struct{} // closed and replaced whenever held grows
}

func newSendGate(target string) *sendGate {
	return &sendGate{
		target:  strings.TrimRight(target, "/"),
		client:  &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}},
		release: make(chan struct{}),
		changed: make(chan struct{}),
	}
}

// setMode switches the mode for sends arriving from now on.
func (g *sendGate) setMode(m gateMode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode = m
}

// waitHeld blocks until at least n sends are held, ctx ends, or timeout.
// It returns the number held.
func (g *sendGate) waitHeld(ctx context.Context, n int, timeout time.Duration) int {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		have, ch := len(g.held), g.changed
		g.mu.Unlock()
		if have >= n {
			return have
		}
		select {
		case <-ch:
		case <-deadline.C:
			return have
		case <-ctx.Done():
			return have
		}
	}
}

// releaseAll lets every held send finish (as a failure), returns what was
// held, and goes back to passing sends through.
func (g *sendGate) releaseAll() []heldSend {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.release)
	g.release = make(chan struct{})
	out := g.held
	g.held = nil
	g.mode = gatePass
	return out
}

func (g *sendGate) hold(h heldSend) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, h)
	close(g.changed)
	g.changed = make(chan struct{})
	return g.release
}

func (g *sendGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 2<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	isSend := r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v2/messages")
	g.mu.Lock()
	mode := g.mode
	g.mu.Unlock()
	if isSend && mode == gateHoldBefore {
		rel := g.hold(heldSend{To: sendRecipients(body)})
		select {
		case <-rel:
		case <-r.Context().Done():
		}
		abort(w)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, g.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := g.client.Do(req)
	if err != nil {
		abort(w) // as the provider's own connection broke
		return
	}
	rb, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	if rerr != nil {
		abort(w)
		return
	}
	if isSend && mode == gateHoldAfter && resp.StatusCode/100 == 2 {
		rel := g.hold(heldSend{To: sendRecipients(body), Accepted: true})
		select {
		case <-rel:
		case <-r.Context().Done():
		}
		abort(w)
		return
	}
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Connection" {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(rb)
}

// abort closes the connection without an answer.
func abort(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// sendRecipients reads "to" from a Telnyx send body (a string for one
// recipient, a list for a group MMS).
func sendRecipients(body []byte) []string {
	var b struct {
		To json.RawMessage `json:"to"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.To) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(b.To, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(b.To, &many)
	return many
}

// serve runs h on a loopback listener until ctx ends; it returns the URL.
func serve(ctx context.Context, h http.Handler) (string, func(), error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}
