package httpapi

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/metrics"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

const (
	twilioToken = "twilio-auth-token-for-tests"
	publicURL   = "https://crew.example.com"
)

// hookEnv is an API with real Telnyx and Twilio adapters, an Ingest that
// dedupes through the real SQLite inbox, and a count of Ingest calls.
type hookEnv struct {
	*env
	priv    ed25519.PrivateKey
	ingests atomic.Int64
	fail    atomic.Bool // Ingest fails like a full disk
}

func newHookEnv(t *testing.T, mod func(*Config)) *hookEnv {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookEnv{priv: priv}
	// The adapters read the environment's clock, which exists once newEnv
	// returns (they are not called before).
	now := func() time.Time { return h.clock.Now() }
	tx, err := telnyx.New(telnyx.Config{APIKey: "KEY", PublicKey: base64.StdEncoding.EncodeToString(pub), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := twilio.New(twilio.Config{AccountSID: "AC00000000000000000000000000000000", AuthToken: twilioToken, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	h.env = newEnv(t, func(c *Config) {
		c.Providers = map[string]crewcast.Provider{"telnyx": tx, "twilio": tw}
		if mod != nil {
			mod(c)
		}
	})
	h.svc.IngestFunc = func(ctx context.Context, events []crewcast.Event) (bool, error) {
		h.ingests.Add(1)
		if h.fail.Load() {
			return false, fmt.Errorf("%w: %v", tracker.ErrUnavailable, errDiskFull)
		}
		payload, err := json.Marshal(events)
		if err != nil {
			return false, err
		}
		isNew, err := h.st.InsertInbox(ctx, []store.InboxEntry{{Provider: events[0].Provider, EventID: events[0].EventID,
			MessageID: events[0].MessageID, Payload: payload, ReceivedAt: h.clock.Now()}})
		if err != nil {
			return false, fmt.Errorf("%w: %v", tracker.ErrUnavailable, err)
		}
		return isNew[0], nil
	}
	return h
}

func telnyxBody(eventID, eventType, status string) []byte {
	return []byte(`{"data":{"event_type":"` + eventType + `","id":"` + eventID + `","occurred_at":"2026-03-01T11:59:58Z",` +
		`"payload":{"id":"msg-` + eventID + `","from":{"phone_number":"+15550100000"},"text":"Crew call 7am",` +
		`"to":[{"phone_number":"+15550100001","status":"` + status + `"}]},"record_type":"event"},"meta":{"attempt":1}}`)
}

// postTelnyx posts body with the given headers to /webhooks/telnyx.
func (h *hookEnv) postTelnyx(body []byte, header http.Header) (*http.Response, []byte) {
	h.t.Helper()
	req, err := http.NewRequest("POST", h.srv.URL+"/webhooks/telnyx", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	return h.send(req)
}

func (h *hookEnv) send(req *http.Request) (*http.Response, []byte) {
	h.t.Helper()
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	validateResponse(h.t, h.handler, req, resp, b)
	return resp, b
}

func (h *hookEnv) signTelnyx(body []byte) http.Header {
	return telnyx.Sign(h.priv, h.clock.Now(), body)
}

// metricValue sums the samples of a metric family whose labels include
// every given label.
func metricValue(t *testing.T, reg *metrics.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			sum += sampleValue(m)
		}
	}
	return sum
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// T2: the same signed webhook 2–10 times concurrently, several webhooks
// shuffled together: every copy reaches Ingest and is answered 200, and
// the inbox holds one row per webhook.
func TestWebhookConcurrentDuplicates(t *testing.T) {
	h := newHookEnv(t, nil)
	rng := mrand.New(mrand.NewPCG(1, 2))
	type post struct {
		body   []byte
		header http.Header
	}
	var posts []post
	copies := map[string]int{}
	for i, st := range []string{"delivered", "sending_failed", "delivered"} {
		id := fmt.Sprintf("evt-%d", i)
		body := telnyxBody(id, "message.finalized", st)
		n := 2 + rng.IntN(9)
		copies[id] = n
		for range n {
			posts = append(posts, post{body, h.signTelnyx(body)})
		}
	}
	rng.Shuffle(len(posts), func(i, j int) { posts[i], posts[j] = posts[j], posts[i] })
	var wg sync.WaitGroup
	statuses := make([]int, len(posts))
	start := make(chan struct{})
	for i, p := range posts {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", h.srv.URL+"/webhooks/telnyx", bytes.NewReader(p.body))
			req.Header = p.header
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			validateResponse(t, h.handler, req, resp, b)
			statuses[i] = resp.StatusCode
		})
	}
	close(start)
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusOK {
			t.Errorf("post %d answered %d", i, s)
		}
	}
	if got := h.ingests.Load(); got != int64(len(posts)) {
		t.Errorf("Ingest saw %d of %d posts", got, len(posts))
	}
	pending, err := h.st.PendingInbox(context.Background(), store.InboxRef{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != len(copies) {
		t.Errorf("inbox holds %d rows, want %d", len(pending), len(copies))
	}
	if n := metricValue(t, h.reg, "crewcast_webhooks_received_total", map[string]string{"provider": "telnyx", "result": "new"}); n != 3 {
		t.Errorf("new webhooks counted %v, want 3", n)
	}
	if n := metricValue(t, h.reg, "crewcast_webhooks_received_total", map[string]string{"result": "duplicate", "type": "status"}); n != float64(len(posts)-3) {
		t.Errorf("duplicates counted %v, want %d", n, len(posts)-3)
	}
}

// T3: every forged or stale Telnyx signature is refused with 401 before
// anything is stored; ±299 s is accepted.
func TestWebhookTelnyxSignatureNegatives(t *testing.T) {
	h := newHookEnv(t, nil)
	body := telnyxBody("evt-sig", "message.finalized", "delivered")
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	good := h.signTelnyx(body)
	mutate := func(f func(http.Header)) http.Header {
		c := good.Clone()
		f(c)
		return c
	}
	at := func(d time.Duration) http.Header { return telnyx.Sign(h.priv, h.clock.Now().Add(d), body) }
	flipped := bytes.Clone(body)
	flipped[10] ^= 0x01
	cases := []struct {
		name   string
		body   []byte
		header http.Header
	}{
		{"forged", body, mutate(func(c http.Header) {
			c.Set(telnyx.SignatureHeader, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64)))
		})},
		{"wrong key", body, telnyx.Sign(otherKey, h.clock.Now(), body)},
		{"flipped body byte", flipped, good},
		{"missing signature", body, mutate(func(c http.Header) { c.Del(telnyx.SignatureHeader) })},
		{"empty signature", body, mutate(func(c http.Header) { c.Set(telnyx.SignatureHeader, "") })},
		{"bad base64", body, mutate(func(c http.Header) { c.Set(telnyx.SignatureHeader, "!!!not base64!!!") })},
		{"wrong length", body, mutate(func(c http.Header) {
			c.Set(telnyx.SignatureHeader, base64.StdEncoding.EncodeToString(make([]byte, 32)))
		})},
		{"missing timestamp", body, mutate(func(c http.Header) { c.Del(telnyx.TimestampHeader) })},
		{"timestamp +301s", body, at(301 * time.Second)},
		{"timestamp -301s", body, at(-301 * time.Second)},
		{"non-numeric timestamp", body, mutate(func(c http.Header) { c.Set(telnyx.TimestampHeader, "soon") })},
	}
	for _, tc := range cases {
		resp, b := h.postTelnyx(tc.body, tc.header)
		if resp.StatusCode != http.StatusUnauthorized || errorOf(t, b).Code != "bad_signature" {
			t.Errorf("%s: %d %s, want 401 bad_signature", tc.name, resp.StatusCode, b)
		}
	}
	if n := h.ingests.Load(); n != 0 {
		t.Fatalf("Ingest was called %d times for refused webhooks", n)
	}
	if n := metricValue(t, h.reg, "crewcast_webhook_signature_failures_total", map[string]string{"provider": "telnyx"}); n != float64(len(cases)) {
		t.Errorf("signature failures counted %v, want %d", n, len(cases))
	}
	for _, d := range []time.Duration{299 * time.Second, -299 * time.Second} {
		b := telnyxBody("evt-"+d.String(), "message.finalized", "delivered")
		if resp, rb := h.postTelnyx(b, telnyx.Sign(h.priv, h.clock.Now().Add(d), b)); resp.StatusCode != 200 {
			t.Errorf("timestamp %v: %d %s, want 200", d, resp.StatusCode, rb)
		}
	}
	if n := h.ingests.Load(); n != 2 {
		t.Errorf("Ingest calls %d, want 2", n)
	}
}

func TestWebhookTelnyxOutcomes(t *testing.T) {
	h := newHookEnv(t, nil)
	// A valid signature over bytes that are not JSON: 400, not stored.
	junk := []byte(`{"data": [not json`)
	resp, b := h.postTelnyx(junk, h.signTelnyx(junk))
	if resp.StatusCode != 400 || errorOf(t, b).Code != "malformed" {
		t.Errorf("malformed: %d %s", resp.StatusCode, b)
	}
	// An event type crewcast does not track: 200, nothing ingested.
	other := []byte(`{"data":{"event_type":"call.initiated","id":"x1","payload":{}},"meta":{}}`)
	if resp, b := h.postTelnyx(other, h.signTelnyx(other)); resp.StatusCode != 200 || strings.TrimSpace(string(b)) != "{}" {
		t.Errorf("ignored event: %d %s", resp.StatusCode, b)
	}
	if n := h.ingests.Load(); n != 0 {
		t.Fatalf("Ingest called %d times", n)
	}
	// A good webhook while the store is failing: 503, never 2xx.
	good := telnyxBody("evt-store", "message.finalized", "delivered")
	h.fail.Store(true)
	resp, b = h.postTelnyx(good, h.signTelnyx(good))
	if resp.StatusCode != 503 || strings.Contains(string(b), "disk") {
		t.Errorf("store failure: %d %s, want a generic 503", resp.StatusCode, b)
	}
	// The provider's retry after recovery is stored and acknowledged.
	h.fail.Store(false)
	if resp, b := h.postTelnyx(good, h.signTelnyx(good)); resp.StatusCode != 200 {
		t.Errorf("retry after recovery: %d %s", resp.StatusCode, b)
	}
	pending, err := h.st.PendingInbox(context.Background(), store.InboxRef{}, 10)
	if err != nil || len(pending) != 1 || pending[0].EventID != "evt-store" {
		t.Errorf("inbox %v %v", pending, err)
	}
	if n := metricValue(t, h.reg, "crewcast_webhooks_received_total", map[string]string{"result": "error"}); n != 1 {
		t.Errorf("errors counted %v", n)
	}
	if n := metricValue(t, h.reg, "crewcast_webhooks_received_total", map[string]string{"result": "malformed"}); n != 1 {
		t.Errorf("malformed counted %v", n)
	}
}

// countingReader serves n bytes of 'x' and counts how many were read.
type countingReader struct {
	left int64
	read atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n > r.left {
		n = r.left
	}
	for i := range p[:n] {
		p[i] = 'x'
	}
	r.left -= n
	r.read.Add(n)
	return int(n), nil
}

// T4: a 10 MB body is refused with 413 after reading about 1 MiB of it.
func TestWebhookBodyLimit(t *testing.T) {
	h := newHookEnv(t, nil)
	for _, path := range []string{"/webhooks/telnyx", "/webhooks/twilio"} {
		body := &countingReader{left: 10 << 20}
		req := httptest.NewRequest("POST", path, body)
		rec := httptest.NewRecorder()
		h.handler.ServeHTTP(rec, req)
		validateResponse(t, h.handler, req, rec.Result(), rec.Body.Bytes())
		if rec.Code != http.StatusRequestEntityTooLarge || errorOf(t, rec.Body.Bytes()).Code != "too_large" {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body.Bytes())
		}
		if read := body.read.Load(); read > 1<<20+64<<10 {
			t.Errorf("%s: read %d bytes of a 10 MB body", path, read)
		}
	}
	if n := h.ingests.Load(); n != 0 {
		t.Errorf("Ingest called %d times", n)
	}
}

func TestWebhookProviderNotConfigured(t *testing.T) {
	e := newEnv(t, nil)
	resp, b := e.do("POST", "/webhooks/telnyx", `{}`, "", nil)
	if resp.StatusCode != 404 || errorOf(t, b).Code != "not_found" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

func twilioForm(sid, status string) url.Values {
	v := url.Values{"MessageSid": {sid}, "AccountSid": {"AC00000000000000000000000000000000"},
		"From": {"+15550100000"}, "To": {"+15550100001"}, "ApiVersion": {"2010-04-01"}}
	if status != "" {
		v.Set("MessageStatus", status)
	}
	return v
}

func (h *hookEnv) postTwilio(path string, form url.Values, sig string, rawBody string) (*http.Response, []byte) {
	h.t.Helper()
	body := form.Encode()
	if rawBody != "" {
		body = rawBody
	}
	req, err := http.NewRequest("POST", h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set(twilio.SignatureHeader, sig)
	}
	return h.send(req)
}

func TestWebhookTwilio(t *testing.T) {
	h := newHookEnv(t, func(c *Config) { c.PublicURL = publicURL })
	hookURL := publicURL + "/webhooks/twilio"
	status := twilioForm("SM1", "delivered")
	resp, b := h.postTwilio("/webhooks/twilio", status, twilio.Signature(twilioToken, hookURL, status), "")
	if resp.StatusCode != http.StatusNoContent || len(b) != 0 {
		t.Errorf("status callback: %d %q, want 204", resp.StatusCode, b)
	}
	inbound := twilioForm("SM2", "")
	inbound.Set("Body", "YES")
	inbound.Set("NumMedia", "0")
	resp, b = h.postTwilio("/webhooks/twilio", inbound, twilio.Signature(twilioToken, hookURL, inbound), "")
	if resp.StatusCode != 200 || string(b) != twilio.EmptyTwiML || !strings.HasPrefix(resp.Header.Get("Content-Type"), twilio.TwiMLContentType) {
		t.Errorf("inbound: %d %q %q, want empty TwiML", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	// The query string is part of the signed URL.
	q := twilioForm("SM3", "sent")
	resp, _ = h.postTwilio("/webhooks/twilio?tenant=a", q, twilio.Signature(twilioToken, hookURL+"?tenant=a", q), "")
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("with query: %d", resp.StatusCode)
	}
	// Twilio's validators accept the URL with the default port.
	p := twilioForm("SM4", "sent")
	resp, _ = h.postTwilio("/webhooks/twilio", p, twilio.Signature(twilioToken, "https://crew.example.com:443/webhooks/twilio", p), "")
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("with :443: %d", resp.StatusCode)
	}
	// The same parameters in another order carry the same signature.
	r := twilioForm("SM5", "delivered")
	reordered := "To=%2B15550100001&MessageStatus=delivered&ApiVersion=2010-04-01&From=%2B15550100000&AccountSid=AC00000000000000000000000000000000&MessageSid=SM5"
	resp, _ = h.postTwilio("/webhooks/twilio", nil, twilio.Signature(twilioToken, hookURL, r), reordered)
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("reordered: %d", resp.StatusCode)
	}
	if n := h.ingests.Load(); n != 5 {
		t.Fatalf("Ingest calls %d, want 5", n)
	}

	base := twilioForm("SM9", "delivered")
	extra := twilioForm("SM9", "delivered")
	extra.Set("Injected", "1")
	negatives := []struct {
		name, path string
		form       url.Values
		sig        string
	}{
		{"extra param", "/webhooks/twilio", extra, twilio.Signature(twilioToken, hookURL, base)},
		{"trailing slash signed", "/webhooks/twilio", base, twilio.Signature(twilioToken, hookURL+"/", base)},
		{"other port", "/webhooks/twilio", base, twilio.Signature(twilioToken, "https://crew.example.com:8443/webhooks/twilio", base)},
		{"http instead of https", "/webhooks/twilio", base, twilio.Signature(twilioToken, "http://crew.example.com/webhooks/twilio", base)},
		{"wrong token", "/webhooks/twilio", base, twilio.Signature("other-token", hookURL, base)},
		{"missing signature", "/webhooks/twilio", base, ""},
		{"query not signed", "/webhooks/twilio?x=1", base, twilio.Signature(twilioToken, hookURL, base)},
	}
	for _, n := range negatives {
		resp, b := h.postTwilio(n.path, n.form, n.sig, "")
		if resp.StatusCode != 401 || errorOf(t, b).Code != "bad_signature" {
			t.Errorf("%s: %d %s, want 401", n.name, resp.StatusCode, b)
		}
	}
	if n := h.ingests.Load(); n != 5 {
		t.Errorf("refused webhooks reached Ingest: %d calls", n)
	}
}

// Without PublicURL the signed URL is rebuilt from the request.
func TestWebhookTwilioURLFromRequest(t *testing.T) {
	h := newHookEnv(t, nil)
	form := twilioForm("SM1", "delivered")
	sig := twilio.Signature(twilioToken, h.srv.URL+"/webhooks/twilio", form)
	if resp, b := h.postTwilio("/webhooks/twilio", form, sig, ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// FuzzWebhookHandler feeds arbitrary bodies and headers through the
// Telnyx webhook route: no panic, only 200/400/401/413 answers, and
// nothing unverified is ingested.
func FuzzWebhookHandler(f *testing.F) {
	f.Add([]byte(`{"data":{}}`), "1700000000", "c2ln")
	f.Add([]byte(``), "", "")
	var ingested atomic.Int64
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	tx, err := telnyx.New(telnyx.Config{APIKey: "k", PublicKey: base64.StdEncoding.EncodeToString(pub)})
	if err != nil {
		f.Fatal(err)
	}
	h, err := New(Config{Store: nopStore{}, Service: &fakeService{hub: tracker.NewHub(),
		IngestFunc: func(context.Context, []crewcast.Event) (bool, error) { ingested.Add(1); return true, nil }},
		Providers: map[string]crewcast.Provider{"telnyx": tx}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, ts, sig string) {
		req := httptest.NewRequest("POST", "/webhooks/telnyx", bytes.NewReader(body))
		req.Header.Set(telnyx.TimestampHeader, ts)
		req.Header.Set(telnyx.SignatureHeader, sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 401 && rec.Code != 413 {
			t.Errorf("unsigned body answered %d", rec.Code)
		}
		if ingested.Load() != 0 {
			t.Error("an unverified webhook was ingested")
		}
	})
}

// nopStore satisfies Store for handlers that never touch it.
type nopStore struct{ Store }
