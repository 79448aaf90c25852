package telnyx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/apicall"
)

// recorded is one request as the fake API saw it.
type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// fakeAPI is an httptest stand-in for api.telnyx.com that records every
// request and answers with respond.
type fakeAPI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	respond http.HandlerFunc
}

func newFakeAPI(t *testing.T, respond http.HandlerFunc) *fakeAPI {
	t.Helper()
	f := &fakeAPI{respond: respond}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{Method: r.Method, Path: r.URL.EscapedPath(), Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		f.respond(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// dump renders a request for a golden file: method, path, the headers the
// adapter sets, and the exact body bytes.
func (r recorded) dump() []byte {
	var b bytes.Buffer
	b.WriteString(r.Method + " " + r.Path + "\n")
	names := []string{"Accept", "Authorization", "Content-Type", "Idempotency-Key", "User-Agent"}
	sort.Strings(names)
	for _, n := range names {
		if v := r.Header.Get(n); v != "" {
			b.WriteString(n + ": " + v + "\n")
		}
	}
	b.WriteString("\n")
	b.Write(r.Body)
	b.WriteString("\n")
	return b.Bytes()
}

func respondFile(status int, name string, t *testing.T) http.HandlerFunc {
	body := readTestdata(t, name)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}
}

func newTestClient(t *testing.T, base string, mutate func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		APIKey:    "KEY_TEST",
		PublicKey: testPublicKeyB64,
		APIBase:   base,
		Now:       func() time.Time { return testNow },
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSendRequestGolden(t *testing.T) {
	api := newFakeAPI(t, respondFile(200, "send_response.json", t))
	c := newTestClient(t, api.srv.URL, func(cfg *Config) {
		cfg.MessagingProfileID = "4000eba1-a0c0-4563-9925-b25e842a7cb6"
		cfg.WebhookURL = "https://crew.example.com/webhooks/telnyx"
		cfg.WebhookFailoverURL = "https://crew.example.com/webhooks/telnyx/failover"
		cfg.SendIdempotencyKey = true
	})
	res, err := c.Send(context.Background(), crewcast.SendRequest{
		From:           "+15550100000",
		To:             []string{"+15550100001"},
		Text:           "Crew call 7am <stage 2> & lunch at noon",
		MediaURLs:      []string{"https://example.com/callsheet.png"},
		IdempotencyKey: "grp-1:rcp-7:1",
		WebhookURL:     "https://crew.example.com/webhooks/telnyx/g1",
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	golden(t, "send.request.txt", reqs[0].dump())
	goldenJSON(t, "send.result.json", res)
	if res.MessageID != "40385f64-5717-4562-b3fc-2c963f66afa6" || len(res.Recipients) != 1 ||
		res.Recipients[0].Status != crewcast.StatusSent || res.Recipients[0].ProviderStatus != "queued" {
		t.Errorf("result = %+v", res)
	}
}

func TestSendDefaultsAndNoIdempotencyKey(t *testing.T) {
	api := newFakeAPI(t, respondFile(200, "send_response.json", t))
	c := newTestClient(t, api.srv.URL, func(cfg *Config) {
		cfg.WebhookURL = "https://crew.example.com/webhooks/telnyx"
	})
	_, err := c.Send(context.Background(), crewcast.SendRequest{
		From: "+15550100000", To: []string{"+15550100001"}, Text: "hi", IdempotencyKey: "grp-1:rcp-7:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := api.requests()[0]
	if got := r.Header.Values("Idempotency-Key"); len(got) != 0 {
		t.Errorf("Idempotency-Key sent without SendIdempotencyKey: %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"from": "+15550100000", "to": "+15550100001", "text": "hi",
		"webhook_url": "https://crew.example.com/webhooks/telnyx"}
	if !mapsEqual(body, want) {
		t.Errorf("body = %v, want %v", body, want)
	}
	if r.Method != http.MethodPost || r.Path != "/v2/messages" || r.Header.Get("Authorization") != "Bearer KEY_TEST" {
		t.Errorf("request = %s %s auth %q", r.Method, r.Path, r.Header.Get("Authorization"))
	}
}

func mapsEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestSendGroupMMSRequestGolden(t *testing.T) {
	api := newFakeAPI(t, respondFile(200, "group_mms_response.json", t))
	c := newTestClient(t, api.srv.URL, func(cfg *Config) {
		cfg.MessagingProfileID = "not-sent-for-group-mms"
		cfg.WebhookURL = "https://crew.example.com/webhooks/telnyx"
		cfg.SendIdempotencyKey = true
	})
	res, err := c.SendGroupMMS(context.Background(), crewcast.SendRequest{
		From:           "+15550100000",
		To:             []string{"+15550100001", "+15550100002", "+15550100003"},
		Text:           "Crew call 7am",
		IdempotencyKey: "grp-2:group:1",
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := api.requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	golden(t, "group_mms.request.txt", reqs[0].dump())
	goldenJSON(t, "group_mms.result.json", res)
	if res.GroupMessageID != "a9f1c2d3-0000-4000-8000-00000000000a" || len(res.Recipients) != 3 {
		t.Errorf("result = %+v", res)
	}
}

func TestLookupGolden(t *testing.T) {
	api := newFakeAPI(t, respondFile(200, "lookup_response.json", t))
	c := newTestClient(t, api.srv.URL, nil)
	st, err := c.Lookup(context.Background(), "b0c1d2e3-0000-4000-8000-000000000001")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "lookup.request.txt", api.requests()[0].dump())
	goldenJSON(t, "lookup.result.json", st)
	want := []crewcast.RecipientStatus{
		{Number: "+15550100001", Status: crewcast.StatusDelivered, ProviderStatus: "delivered"},
		{Number: "+15550100002", Status: crewcast.StatusFailed, ProviderStatus: "delivery_failed", ErrorCode: "40008", ErrorClass: crewcast.ClassCarrier},
		{Number: "+15550100003", Status: crewcast.StatusUnknown, ProviderStatus: "unknown", ErrorClass: crewcast.ClassUncertain},
		{Number: "+15550100004", Status: crewcast.StatusSent, ProviderStatus: "sending"},
	}
	if !slices.Equal(st.Recipients, want) {
		t.Errorf("recipients = %+v\nwant %+v", st.Recipients, want)
	}
}

func TestLookupEscapesIDAndReportsNotFound(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		io.WriteString(w, `{"errors":[{"code":"10005","title":"Resource not found"}]}`)
	})
	c := newTestClient(t, api.srv.URL, nil)
	_, err := c.Lookup(context.Background(), "a/b?c")
	var se *crewcast.SendError
	if !errors.As(err, &se) || se.HTTPStatus != 404 || se.Code != "10005" {
		t.Fatalf("err = %v, want a 404 SendError", err)
	}
	if got := api.requests()[0].Path; got != "/v2/messages/a%2Fb%3Fc" {
		t.Errorf("path = %q", got)
	}
	if _, err := c.Lookup(context.Background(), ""); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty id: err = %v", err)
	}
}

func TestLocalRejectionsMakeNoRequest(t *testing.T) {
	api := newFakeAPI(t, respondFile(200, "send_response.json", t))
	c := newTestClient(t, api.srv.URL, func(cfg *Config) { cfg.SendIdempotencyKey = true })
	nine := []string{"+15550100001", "+15550100002", "+15550100003", "+15550100004", "+15550100005",
		"+15550100006", "+15550100007", "+15550100008", "+15550100009"}
	ok := crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "x"}
	with := func(f func(*crewcast.SendRequest)) crewcast.SendRequest {
		r := ok
		f(&r)
		return r
	}
	cases := []struct {
		name  string
		group bool
		req   crewcast.SendRequest
	}{
		{"no recipient", false, with(func(r *crewcast.SendRequest) { r.To = nil })},
		{"two recipients on Send", false, with(func(r *crewcast.SendRequest) { r.To = nine[:2] })},
		{"no sender", false, with(func(r *crewcast.SendRequest) { r.From = "" })},
		{"empty recipient", false, with(func(r *crewcast.SendRequest) { r.To = []string{""} })},
		{"nothing to send", false, with(func(r *crewcast.SendRequest) { r.Text = "" })},
		{"bad idempotency key", false, with(func(r *crewcast.SendRequest) { r.IdempotencyKey = "has space" })},
		{"group of nine", true, with(func(r *crewcast.SendRequest) { r.To = nine })},
		{"group of zero", true, with(func(r *crewcast.SendRequest) { r.To = nil })},
		{"group duplicate", true, with(func(r *crewcast.SendRequest) { r.To = []string{"+15550100001", "+15550100001"} })},
		{"group no sender", true, with(func(r *crewcast.SendRequest) { r.From = ""; r.To = nine[:2] })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			send := c.Send
			if tc.group {
				send = c.SendGroupMMS
			}
			_, err := send(context.Background(), tc.req)
			if !errors.Is(err, ErrInvalidRequest) || crewcast.ClassOf(err) != crewcast.ClassSender {
				t.Errorf("err = %v (class %q), want ErrInvalidRequest of class sender", err, crewcast.ClassOf(err))
			}
		})
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("%d requests reached the API, want 0", n)
	}
	// Eight is the limit, not a rejection.
	if _, err := c.SendGroupMMS(context.Background(), with(func(r *crewcast.SendRequest) { r.To = nine[:8] })); err != nil {
		t.Errorf("group of eight: %v", err)
	}
}

func TestSendErrorResponses(t *testing.T) {
	cases := []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		class      crewcast.ErrorClass
		code       string
		optOut     bool
		retryAfter time.Duration
	}{
		{"429 with Retry-After seconds", 429, map[string]string{"Retry-After": "7", "X-Ratelimit-Reset": "30"},
			`{"errors":[{"code":"10011","title":"Too many requests"}]}`, crewcast.ClassNotSent, "10011", false, 7 * time.Second},
		{"429 with only x-ratelimit-reset", 429, map[string]string{"X-Ratelimit-Limit": "100", "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": "12"},
			`{"errors":[{"code":"10011"}]}`, crewcast.ClassNotSent, "10011", false, 12 * time.Second},
		{"429 with Retry-After date", 429, map[string]string{"Retry-After": testNow.Add(90 * time.Second).Format(http.TimeFormat)},
			``, crewcast.ClassNotSent, "", false, 90 * time.Second},
		{"429 with absurd Retry-After", 429, map[string]string{"Retry-After": "99999999999999"},
			``, crewcast.ClassNotSent, "", false, 24 * time.Hour},
		{"429 with past Retry-After date", 429, map[string]string{"Retry-After": testNow.Add(-time.Hour).Format(http.TimeFormat)},
			``, crewcast.ClassNotSent, "", false, 0},
		{"40318 queue full honours Retry-After", 400, map[string]string{"Retry-After": "3"},
			`{"errors":[{"code":"40318"}]}`, crewcast.ClassNotSent, "40318", false, 3 * time.Second},
		{"opt-out on 403", 403, nil, `{"errors":[{"code":"40300","title":"Blocked due to STOP message","detail":"An existing block rule prevents this message."}]}`,
			crewcast.ClassRecipient, "40300", true, 0},
		{"opt-out on 400", 400, nil, `{"errors":[{"code":"40300"}]}`, crewcast.ClassRecipient, "40300", true, 0},
		{"opt-out on 422", 422, nil, `{"errors":[{"code":"40300"}]}`, crewcast.ClassRecipient, "40300", true, 0},
		{"numeric code", 422, nil, `{"errors":[{"code":10016}]}`, crewcast.ClassRecipient, "10016", false, 0},
		{"auth failed", 401, nil, `{"errors":[{"code":"10009","title":"Authentication failed"}]}`, crewcast.ClassSender, "10009", false, 0},
		{"known code chosen over unknown", 400, nil, `{"errors":[{"code":"99999"},{"code":"40013"}]}`, crewcast.ClassSender, "40013", false, 0},
		{"unknown code on 4xx", 400, nil, `{"errors":[{"code":"99999","title":"Something new"}]}`, crewcast.ClassRecipient, "99999", false, 0},
		{"401 without body", 401, nil, ``, crewcast.ClassSender, "", false, 0},
		{"404 HTML", 404, nil, `<html>not found</html>`, crewcast.ClassSender, "", false, 0},
		{"408", 408, nil, ``, crewcast.ClassUncertain, "", false, 0},
		{"500", 500, nil, `{"errors":[{"code":"10007","title":"Unexpected error"}]}`, crewcast.ClassUncertain, "10007", false, 0},
		{"502 HTML", 502, nil, `<html>bad gateway</html>`, crewcast.ClassUncertain, "", false, 0},
		{"503 with a recipient code", 503, nil, `{"errors":[{"code":"40300"}]}`, crewcast.ClassUncertain, "40300", false, 0},
		{"200 not JSON", 200, nil, `<html>ok</html>`, crewcast.ClassUncertain, "", false, 0},
		{"200 without id", 200, nil, `{"data":{"to":[]}}`, crewcast.ClassUncertain, "", false, 0},
		{"200 without data", 200, nil, `{}`, crewcast.ClassUncertain, "", false, 0},
		{"302 redirect not followed", 302, map[string]string{"Location": "/elsewhere"}, ``, crewcast.ClassSender, "", false, 0},
		{"307 redirect not followed", 307, map[string]string{"Location": "/elsewhere"}, ``, crewcast.ClassSender, "", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			c := newTestClient(t, api.srv.URL, nil)
			_, err := c.Send(context.Background(), crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "x"})
			var se *crewcast.SendError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *crewcast.SendError", err)
			}
			if se.Class != tc.class || se.Code != tc.code || se.OptOut != tc.optOut || se.RetryAfter != tc.retryAfter ||
				se.HTTPStatus != tc.status || se.Provider != "telnyx" {
				t.Errorf("got %+v\nwant status %d class %q code %q optOut %v retryAfter %v", se, tc.status, tc.class, tc.code, tc.optOut, tc.retryAfter)
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("%d requests, want exactly 1 (no retries, no redirects)", n)
			}
		})
	}
}

func TestSendTransportErrors(t *testing.T) {
	req := crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "x"}

	t.Run("connection refused is not sent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c := newTestClient(t, "http://"+addr, nil)
		_, err = c.Send(context.Background(), req)
		if got := crewcast.ClassOf(err); got != crewcast.ClassNotSent {
			t.Errorf("class = %q (%v), want not_sent", got, err)
		}
	})

	t.Run("context canceled before the call is not sent", func(t *testing.T) {
		api := newFakeAPI(t, respondFile(200, "send_response.json", t))
		c := newTestClient(t, api.srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Send(ctx, req)
		if got := crewcast.ClassOf(err); got != crewcast.ClassNotSent {
			t.Errorf("class = %q (%v), want not_sent", got, err)
		}
		if n := len(api.requests()); n != 0 {
			t.Errorf("%d requests, want 0", n)
		}
	})

	t.Run("connection dropped after the request is uncertain", func(t *testing.T) {
		var mu sync.Mutex
		var got int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			mu.Lock()
			got++
			mu.Unlock()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		c := newTestClient(t, srv.URL, nil)
		_, err := c.Send(context.Background(), req)
		var se *crewcast.SendError
		if !errors.As(err, &se) || se.Class != crewcast.ClassUncertain || se.Err == nil {
			t.Errorf("err = %v, want an uncertain transport SendError", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got != 1 {
			t.Errorf("server saw %d requests, want exactly 1", got)
		}
	})

	t.Run("timeout after the request is uncertain", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		c := newTestClient(t, srv.URL, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Send(ctx, req)
		if got := crewcast.ClassOf(err); got != crewcast.ClassUncertain || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("class = %q (%v), want uncertain deadline", got, err)
		}
	})

	t.Run("oversized success body is uncertain", func(t *testing.T) {
		api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			io.WriteString(w, `{"data":{"id":"x","text":"`+strings.Repeat("a", apicall.MaxResponseBytes)+`"}}`)
		})
		c := newTestClient(t, api.srv.URL, nil)
		_, err := c.Send(context.Background(), req)
		if got := crewcast.ClassOf(err); got != crewcast.ClassUncertain {
			t.Errorf("class = %q (%v), want uncertain", got, err)
		}
	})
}

func TestNewValidatesConfig(t *testing.T) {
	good := Config{APIKey: "k", PublicKey: testPublicKeyB64}
	cases := []struct {
		name   string
		mutate func(*Config)
	}{
		{"no API key", func(c *Config) { c.APIKey = "" }},
		{"no public key", func(c *Config) { c.PublicKey = "" }},
		{"public key not base64", func(c *Config) { c.PublicKey = "not base64!" }},
		{"public key 31 bytes", func(c *Config) { c.PublicKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==" }},
		{"public key 33 bytes", func(c *Config) { c.PublicKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }},
		{"relative API base", func(c *Config) { c.APIBase = "/v2" }},
		{"ftp API base", func(c *Config) { c.APIBase = "ftp://api.telnyx.com" }},
		{"bad webhook URL", func(c *Config) { c.WebhookURL = "crew.example.com/hook" }},
		{"bad failover URL", func(c *Config) { c.WebhookFailoverURL = "::" }},
		{"negative tolerance", func(c *Config) { c.Tolerance = -time.Second }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.mutate(&cfg)
			if _, err := New(cfg); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
	c, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "telnyx" || c.base != DefaultAPIBase || c.tolerance != DefaultTolerance || c.http.Timeout != DefaultTimeout {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestNewDoesNotMutateCallersHTTPClient(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	c, err := New(Config{APIKey: "k", PublicKey: testPublicKeyB64, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if hc.CheckRedirect != nil {
		t.Error("New changed the caller's http.Client")
	}
	if c.http.Timeout != time.Second || c.http.CheckRedirect == nil {
		t.Error("adapter's client copy lacks the caller's timeout or the no-redirect policy")
	}
}
