package sim

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait for the simulator's background work.
const waitFor = 10 * time.Second

// hook is one webhook attempt as a receiver saw it.
type hook struct {
	url    string // as posted: receiver base URL + path + query
	header http.Header
	body   []byte
	status int // what the receiver answered
}

// receiver is an httptest server that records webhook attempts and
// answers each with what respond returns (200 when respond is nil).
type receiver struct {
	srv   *httptest.Server
	hooks chan hook
	mu    sync.Mutex
	n     int
}

// newReceiver starts a receiver; respond sees the attempt's 1-based
// number at this receiver and may block on r.Context() to time out.
func newReceiver(t *testing.T, respond func(n int, r *http.Request, h hook) int) *receiver {
	t.Helper()
	rc := &receiver{hooks: make(chan hook, 1000)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h := hook{url: rc.srv.URL + r.URL.RequestURI(), header: r.Header.Clone(), body: body, status: http.StatusOK}
		rc.mu.Lock()
		rc.n++
		n := rc.n
		rc.mu.Unlock()
		if respond != nil {
			h.status = respond(n, r, h)
		}
		// Record before answering: once the simulator has its answer it
		// may post the next event, whose handler must not be recorded first.
		rc.hooks <- h
		w.WriteHeader(h.status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// url returns the receiver's URL for a path.
func (rc *receiver) url(path string) string { return rc.srv.URL + path }

// next waits for the next attempt.
func (rc *receiver) next(t *testing.T) hook {
	t.Helper()
	select {
	case h := <-rc.hooks:
		return h
	case <-time.After(waitFor):
		t.Fatalf("no webhook within %v", waitFor)
		return hook{}
	}
}

// collect waits for n attempts.
func (rc *receiver) collect(t *testing.T, n int) []hook {
	t.Helper()
	out := make([]hook, 0, n)
	for range n {
		out = append(out, rc.next(t))
	}
	return out
}

// drained asserts, once the simulator is idle, that nothing more arrived.
func (rc *receiver) drained(t *testing.T, s *Sim) {
	t.Helper()
	idle(t, s)
	select {
	case h := <-rc.hooks:
		t.Fatalf("unexpected webhook: %s", h.body)
	default:
	}
}

func idle(t *testing.T, s *Sim) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatalf("wait idle: %v", err)
	}
}

// fixedNow is the injected clock of most tests; signatures are checked
// against it.
var fixedNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// newSim starts a simulator behind an httptest server. Unset fields get
// test defaults: seed 1, fixed clock, fast retries.
func newSim(t *testing.T, cfg Config) (*Sim, *client) {
	t.Helper()
	if cfg.Seed == nil {
		cfg.Seed = new(int64(1))
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return fixedNow }
	}
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	if cfg.WebhookTimeout == 0 {
		cfg.WebhookTimeout = time.Second
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		srv.Close()
	})
	return s, &client{t: t, base: srv.URL, http: srv.Client(), keys: s.Keys(), token: s.ControlToken()}
}

// client speaks to the simulator the way the provider SDKs would.
type client struct {
	t     *testing.T
	base  string
	http  *http.Client
	keys  Keys
	token string // the control plane's
}

// resp is an answered request.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

func (c *client) do(req *http.Request) (resp, error) {
	res, err := c.http.Do(req)
	if err != nil {
		return resp{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: b}, err
}

func (c *client) mustDo(req *http.Request) resp {
	c.t.Helper()
	r, err := c.do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	return r
}

// jsonReq builds a request whose body, when not nil, is body as JSON.
func (c *client) jsonReq(method, path string, body any) *http.Request {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	return req
}

// telnyxReq builds a Telnyx API request; key "" sends no Authorization.
func (c *client) telnyxReq(method, path, key string, body any) *http.Request {
	c.t.Helper()
	req := c.jsonReq(method, path, body)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// telnyxSend posts /v2/messages with the right key.
func (c *client) telnyxSend(body map[string]any) resp {
	c.t.Helper()
	return c.mustDo(c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, body))
}

func (c *client) telnyxGroup(body map[string]any) resp {
	c.t.Helper()
	return c.mustDo(c.telnyxReq(http.MethodPost, "/v2/messages/group_mms", c.keys.TelnyxAPIKey, body))
}

func (c *client) telnyxGet(path string) resp {
	c.t.Helper()
	return c.mustDo(c.telnyxReq(http.MethodGet, path, c.keys.TelnyxAPIKey, nil))
}

// twilioReq builds a Twilio create-message request with Basic auth.
func (c *client) twilioReq(sid, user, pass string, form url.Values) *http.Request {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.base+"/2010-04-01/Accounts/"+sid+"/Messages.json", strings.NewReader(form.Encode()))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	return req
}

func (c *client) twilioSend(form url.Values) resp {
	c.t.Helper()
	return c.mustDo(c.twilioReq(c.keys.TwilioAccountSID, c.keys.TwilioAccountSID, c.keys.TwilioAuthToken, form))
}

func (c *client) twilioGet(sid string) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.base+"/2010-04-01/Accounts/"+c.keys.TwilioAccountSID+"/Messages/"+sid+".json", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.SetBasicAuth(c.keys.TwilioAccountSID, c.keys.TwilioAuthToken)
	return c.mustDo(req)
}

// simJSON calls a /sim endpoint with the control token (a POST as JSON).
func (c *client) simJSON(method, path string, body any) resp {
	c.t.Helper()
	req := c.jsonReq(method, path, body)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.mustDo(req)
}

func (c *client) ledger() []Send {
	c.t.Helper()
	var out struct {
		Sends []Send `json:"sends"`
	}
	c.simJSON(http.MethodGet, "/sim/ledger", nil).decode(c.t, &out)
	return out.Sends
}

// Test-side decodings of the wire formats, written from docs/providers.md, not
// from the simulator's types.

type tAddr struct {
	PhoneNumber string `json:"phone_number"`
	Status      string `json:"status"`
}

type tMessage struct {
	RecordType     string  `json:"record_type"`
	Direction      string  `json:"direction"`
	ID             string  `json:"id"`
	GroupMessageID string  `json:"group_message_id"`
	Type           string  `json:"type"`
	From           tAddr   `json:"from"`
	To             []tAddr `json:"to"`
	CC             []tAddr `json:"cc"`
	Text           string  `json:"text"`
	SentAt         *string `json:"sent_at"`
	CompletedAt    *string `json:"completed_at"`
	Errors         []struct {
		Code  string `json:"code"`
		Title string `json:"title"`
	} `json:"errors"`
}

type tEvent struct {
	Data struct {
		RecordType string   `json:"record_type"`
		ID         string   `json:"id"`
		EventType  string   `json:"event_type"`
		OccurredAt string   `json:"occurred_at"`
		Payload    tMessage `json:"payload"`
	} `json:"data"`
	Meta struct {
		Attempt     int    `json:"attempt"`
		DeliveredTo string `json:"delivered_to"`
	} `json:"meta"`
}

type tErrors struct {
	Errors []struct {
		Code   string `json:"code"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	} `json:"errors"`
}

type tTwilioError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// telnyxEvent verifies the Ed25519 signature of a Telnyx webhook with
// crypto/ed25519 and the documented scheme, then decodes it.
func telnyxEvent(t *testing.T, s *Sim, h hook) tEvent {
	t.Helper()
	pub, err := base64.StdEncoding.DecodeString(s.Keys().TelnyxPublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		t.Fatalf("public key: %v (len %d)", err, len(pub))
	}
	sig, err := base64.StdEncoding.DecodeString(h.header.Get("telnyx-signature-ed25519"))
	if err != nil || len(sig) != ed25519.SignatureSize {
		t.Fatalf("signature header %q: %v", h.header.Get("telnyx-signature-ed25519"), err)
	}
	ts := h.header.Get("telnyx-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		t.Fatalf("timestamp %q: %v", ts, err)
	}
	if d := time.Unix(sec, 0).Sub(fixedNow); d < -300*time.Second || d > 300*time.Second {
		t.Fatalf("timestamp %s is %v from the clock", ts, d)
	}
	msg := append([]byte(ts+"|"), h.body...)
	if !ed25519.Verify(pub, msg, sig) {
		t.Fatalf("Ed25519 signature does not verify for %s", h.body)
	}
	if ct := h.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var ev tEvent
	if err := json.Unmarshal(h.body, &ev); err != nil {
		t.Fatalf("decode webhook %s: %v", h.body, err)
	}
	if ev.Data.RecordType != "event" || ev.Data.ID == "" || ev.Meta.Attempt < 1 {
		t.Fatalf("bad envelope: %s", h.body)
	}
	if _, err := time.Parse(time.RFC3339, ev.Data.OccurredAt); err != nil {
		t.Fatalf("occurred_at: %v", err)
	}
	if !strings.HasPrefix(h.url, ev.Meta.DeliveredTo) || ev.Meta.DeliveredTo == "" {
		t.Fatalf("delivered_to %q, posted to %q", ev.Meta.DeliveredTo, h.url)
	}
	return ev
}

// twilioForm verifies X-Twilio-Signature with an HMAC-SHA1 computed here
// from the documented algorithm, then returns the form.
func twilioForm(t *testing.T, s *Sim, h hook) url.Values {
	t.Helper()
	form, err := url.ParseQuery(string(h.body))
	if err != nil {
		t.Fatalf("form %q: %v", h.body, err)
	}
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
	signed := h.url
	for _, k := range names {
		signed += k + form.Get(k)
	}
	mac := hmac.New(sha1.New, []byte(s.Keys().TwilioAuthToken))
	mac.Write([]byte(signed))
	want := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if got := h.header.Get("X-Twilio-Signature"); got != want {
		t.Fatalf("X-Twilio-Signature %q, want %q", got, want)
	}
	if h.header.Get("I-Twilio-Idempotency-Token") == "" {
		t.Fatal("no I-Twilio-Idempotency-Token")
	}
	if ct := h.header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		t.Fatalf("Content-Type %q", ct)
	}
	return form
}

// telnyxData decodes a Telnyx {"data": message} answer.
func telnyxData(t *testing.T, r resp) tMessage {
	t.Helper()
	var out struct {
		Data tMessage `json:"data"`
	}
	r.decode(t, &out)
	return out.Data
}

func sendBody(to, text string) map[string]any {
	return map[string]any{"from": ourNumber, "to": to, "text": text}
}

const (
	ourNumber = "+15550100000"
	alice     = "+15550100001"
	bob       = "+15550100002"
	carol     = "+15550100003"
)

func twilioBody(to, text string) url.Values {
	return url.Values{"From": {ourNumber}, "To": {to}, "Body": {text}}
}
