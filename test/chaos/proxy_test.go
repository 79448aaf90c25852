package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClient returns a client whose idle connections the test closes, so
// goleak sees no keep-alive goroutines.
func testClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestParseTelnyxWebhook(t *testing.T) {
	at := time.Now()
	r := parseTelnyxWebhook(statusEvent("ev1", "message.finalized", "msg1", "+15550100000", "+15552000001", "hi", "delivered", at))
	if r.EventID != "ev1" || r.EventType != "message.finalized" || r.MessageID != "msg1" || r.Number != "+15552000001" || r.Status != "delivered" {
		t.Errorf("status event parsed as %+v", r)
	}
	r = parseTelnyxWebhook(receivedEvent("ev2", "in1", "+15552000001", "+15550100000", "YES", at))
	if r.EventID != "ev2" || r.Number != "+15552000001" || r.Status != "" {
		t.Errorf("reply parsed as %+v; the number is the person replying", r)
	}
	if r = parseTelnyxWebhook([]byte("not json")); r.EventID != "" {
		t.Errorf("garbage parsed as %+v", r)
	}
}

func TestWebhookProxy(t *testing.T) {
	body := statusEvent("ev1", "message.sent", "msg1", "+15550100000", "+15552000001", "hi", "sent", time.Now())
	var got atomic.Value
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r.Header.Get("Telnyx-Signature-Ed25519") + "|" + r.URL.Path + "|" + string(b))
		if r.Header.Get("X-Refuse") != "" {
			http.Error(w, "full", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("X-From", "upstream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("{}"))
	}))
	defer upstream.Close()
	p := newWebhookProxy()
	defer p.client.CloseIdleConnections()
	front := httptest.NewServer(p)
	defer front.Close()
	client := testClient(t)

	post := func(refuse bool) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/webhooks/telnyx", bytes.NewReader(body))
		req.Header.Set("Telnyx-Signature-Ed25519", "sig")
		if refuse {
			req.Header.Set("X-Refuse", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}

	// No server: 502, recorded as not acknowledged.
	if resp := post(false); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("no upstream: %d; want 502", resp.StatusCode)
	}
	p.setUpstream(upstream.URL)
	var hooked []webhookRecord
	var mu sync.Mutex
	p.setHook(func(r webhookRecord) { mu.Lock(); hooked = append(hooked, r); mu.Unlock() })
	resp := post(false)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-From") != "upstream" {
		t.Fatalf("forwarded: %d %v", resp.StatusCode, resp.Header)
	}
	if want := "sig|/webhooks/telnyx|" + string(body); got.Load() != want {
		t.Fatalf("upstream saw %q; want the request unchanged", got.Load())
	}
	if resp := post(true); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("refused: %d; want 503 passed through", resp.StatusCode)
	}
	// A voice callback is forwarded but not recorded: it is no messaging
	// webhook the checks could place (T19 checks calls through the ledger).
	vreq, _ := http.NewRequest(http.MethodPost, front.URL+"/webhooks/telnyx/voice?g=x", bytes.NewReader([]byte("CallSid=c1")))
	vresp, err := client.Do(vreq)
	if err != nil {
		t.Fatal(err)
	}
	_ = vresp.Body.Close()
	if vresp.StatusCode != http.StatusOK || !strings.Contains(got.Load().(string), "|/webhooks/telnyx/voice|CallSid=c1") {
		t.Fatalf("voice callback: %d, upstream saw %q", vresp.StatusCode, got.Load())
	}
	// Nor is an email answer link's POST.
	lreq, _ := http.NewRequest(http.MethodPost, front.URL+"/a/tok", nil)
	lresp, err := client.Do(lreq)
	if err != nil {
		t.Fatal(err)
	}
	_ = lresp.Body.Close()
	if lresp.StatusCode != http.StatusOK {
		t.Fatalf("answer link: %d", lresp.StatusCode)
	}
	p.setHook(nil)
	recs := p.records()
	if len(recs) != 3 {
		t.Fatalf("%d records; want 3", len(recs))
	}
	wantCodes := []int{0, 200, 503}
	for i, r := range recs {
		if r.Code != wantCodes[i] || r.EventID != "ev1" || r.Number != "+15552000001" || r.Status != "sent" {
			t.Errorf("record %d = %+v; want code %d", i, r, wantCodes[i])
		}
		if r.acked() != (wantCodes[i] == 200) {
			t.Errorf("record %d acked=%v", i, r.acked())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hooked) != 2 || hooked[0].Code != 200 || hooked[1].Code != 503 {
		t.Errorf("hook saw %+v; want the two records made while installed", hooked)
	}
}

// fakeSim counts the sends that reach it and answers lookups.
func fakeSim(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var sends atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			sends.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"id":"m1"}}`))
	}))
	t.Cleanup(s.Close)
	return s, &sends
}

func TestSendGate(t *testing.T) {
	for _, tc := range []struct {
		mode      gateMode
		wantSends int32
		accepted  bool
	}{
		{gateHoldBefore, 0, false},
		{gateHoldAfter, 1, true},
	} {
		sim, sends := fakeSim(t)
		g := newSendGate(sim.URL)
		front := httptest.NewServer(g)
		client := testClient(t)
		g.setMode(tc.mode)

		// A lookup passes whatever the mode.
		resp, err := client.Get(front.URL + "/v2/messages/m1")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("mode %d: lookup: %v %v", tc.mode, resp, err)
		}
		_ = resp.Body.Close()

		errc := make(chan error, 1)
		go func() {
			resp, err := client.Post(front.URL+"/v2/messages", "application/json", strings.NewReader(`{"from":"+15550100000","to":"+15552000001","text":"hi"}`))
			if err == nil {
				_ = resp.Body.Close()
			}
			errc <- err
		}()
		if n := g.waitHeld(context.Background(), 1, 5*time.Second); n != 1 {
			t.Fatalf("mode %d: %d held; want 1", tc.mode, n)
		}
		if got := sends.Load(); got != tc.wantSends {
			t.Fatalf("mode %d: the simulator saw %d sends while held; want %d", tc.mode, got, tc.wantSends)
		}
		held := g.releaseAll()
		if len(held) != 1 || len(held[0].To) != 1 || held[0].To[0] != "+15552000001" || held[0].Accepted != tc.accepted {
			t.Fatalf("mode %d: held %+v", tc.mode, held)
		}
		if err := <-errc; err == nil {
			t.Fatalf("mode %d: a held send got an answer; want the connection closed", tc.mode)
		}
		// Released: back to passing sends through.
		resp, err = client.Post(front.URL+"/v2/messages", "application/json", strings.NewReader(`{"to":"+15552000002"}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("mode %d: after release: %v %v", tc.mode, resp, err)
		}
		_ = resp.Body.Close()
		front.Close()
		g.client.CloseIdleConnections()
	}
}

func TestSendRecipients(t *testing.T) {
	if got := sendRecipients([]byte(`{"to":"+1"}`)); len(got) != 1 || got[0] != "+1" {
		t.Errorf("one: %v", got)
	}
	if got := sendRecipients([]byte(`{"to":["+1","+2"]}`)); len(got) != 2 {
		t.Errorf("group MMS: %v", got)
	}
	if got := sendRecipients([]byte(`{}`)); got != nil {
		t.Errorf("none: %v", got)
	}
}
