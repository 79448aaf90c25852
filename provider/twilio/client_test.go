package twilio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// recorded is one request as the fake API saw it.
type recorded struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// fakeAPI is an httptest stand-in for api.twilio.com that records every
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
	names := []string{"Accept", "Authorization", "Content-Type", IdempotencyHeader, "User-Agent"}
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

func respondFile(t *testing.T, status int, name string) http.HandlerFunc {
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
		AccountSID: testSID,
		AuthToken:  testToken,
		APIBase:    base,
		Now:        func() time.Time { return testNow },
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

var okRequest = crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001"}, Text: "x"}

func TestSendRequestGolden(t *testing.T) {
	api := newFakeAPI(t, respondFile(t, 201, "send_response.json"))
	c := newTestClient(t, api.srv.URL, func(cfg *Config) {
		cfg.StatusCallbackURL = "https://crew.example.com/webhooks/twilio"
		cfg.SendIdempotencyKey = true
	})
	res, err := c.Send(context.Background(), crewcast.SendRequest{
		From:           "+15550100000",
		To:             []string{"+15550100001"},
		Text:           "Crew call 7am & lunch at noon",
		MediaURLs:      []string{"https://example.com/callsheet.png", "https://example.com/map.png"},
		IdempotencyKey: "grp-1:rcp-7:1",
		WebhookURL:     "https://crew.example.com/webhooks/twilio/g1",
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
	want := crewcast.SendResult{MessageID: "MM0123456789abcdef0123456789abcdef", Recipients: []crewcast.RecipientStatus{
		{Number: "+15550100001", Status: crewcast.StatusSent, ProviderStatus: "queued"}}}
	if res.MessageID != want.MessageID || !slices.Equal(res.Recipients, want.Recipients) {
		t.Errorf("result = %+v, want %+v", res, want)
	}
}

func TestSendDefaults(t *testing.T) {
	api := newFakeAPI(t, respondFile(t, 201, "send_response.json"))
	c := newTestClient(t, api.srv.URL, func(cfg *Config) { cfg.StatusCallbackURL = "https://crew.example.com/cb" })
	_, err := c.Send(context.Background(), crewcast.SendRequest{
		From: "+15550100000", To: []string{"+15550100001"}, MediaURLs: []string{"https://example.com/a.png"}, IdempotencyKey: "k",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := api.requests()[0]
	if r.Header.Get(IdempotencyHeader) != "" {
		t.Error("idempotency header sent without SendIdempotencyKey")
	}
	user, pass, ok := (&http.Request{Header: r.Header}).BasicAuth()
	if !ok || user != testSID || pass != testToken {
		t.Errorf("basic auth = %q %q %v", user, pass, ok)
	}
	if r.Method != http.MethodPost || r.Path != "/2010-04-01/Accounts/"+testSID+"/Messages.json" {
		t.Errorf("request = %s %s", r.Method, r.Path)
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"To": {"+15550100001"}, "From": {"+15550100000"}, "MediaUrl": {"https://example.com/a.png"},
		"StatusCallback": {"https://crew.example.com/cb"}}
	if form.Encode() != want.Encode() {
		t.Errorf("form = %v, want %v (no Body when there is no text)", form, want)
	}
}

func TestSendGroupMMSUnsupported(t *testing.T) {
	api := newFakeAPI(t, respondFile(t, 201, "send_response.json"))
	c := newTestClient(t, api.srv.URL, nil)
	_, err := c.SendGroupMMS(context.Background(), crewcast.SendRequest{From: "+15550100000", To: []string{"+15550100001", "+15550100002"}, Text: "x"})
	if !errors.Is(err, crewcast.ErrGroupMMSUnsupported) {
		t.Errorf("err = %v, want ErrGroupMMSUnsupported", err)
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("%d requests, want 0", n)
	}
}

func TestLookupGolden(t *testing.T) {
	api := newFakeAPI(t, respondFile(t, 200, "lookup_response.json"))
	c := newTestClient(t, api.srv.URL, nil)
	st, err := c.Lookup(context.Background(), "SM0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "lookup.request.txt", api.requests()[0].dump())
	goldenJSON(t, "lookup.result.json", st)
	want := []crewcast.RecipientStatus{{Number: "+15550100002", Status: crewcast.StatusFailed, ProviderStatus: "undelivered",
		ErrorCode: "30003", ErrorClass: crewcast.ClassCarrier}}
	if st.MessageID != "SM0123456789abcdef0123456789abcdef" || !slices.Equal(st.Recipients, want) {
		t.Errorf("status = %+v", st)
	}
}

func TestLookupNotFound(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		io.WriteString(w, `{"code":20404,"message":"The requested resource was not found","more_info":"https://www.twilio.com/docs/errors/20404","status":404}`)
	})
	c := newTestClient(t, api.srv.URL, nil)
	_, err := c.Lookup(context.Background(), "SM/../x")
	var se *crewcast.SendError
	if !errors.As(err, &se) || se.HTTPStatus != 404 || se.Code != "20404" {
		t.Fatalf("err = %v, want a 404 SendError", err)
	}
	if got := api.requests()[0].Path; got != "/2010-04-01/Accounts/"+testSID+"/Messages/SM%2F..%2Fx.json" {
		t.Errorf("path = %q", got)
	}
	if _, err := c.Lookup(context.Background(), ""); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty id: %v", err)
	}
}

func TestLocalRejectionsMakeNoRequest(t *testing.T) {
	api := newFakeAPI(t, respondFile(t, 201, "send_response.json"))
	c := newTestClient(t, api.srv.URL, nil)
	with := func(f func(*crewcast.SendRequest)) crewcast.SendRequest {
		r := okRequest
		f(&r)
		return r
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = "https://example.com/m.png"
	}
	for name, req := range map[string]crewcast.SendRequest{
		"no recipient":    with(func(r *crewcast.SendRequest) { r.To = nil }),
		"two recipients":  with(func(r *crewcast.SendRequest) { r.To = []string{"+15550100001", "+15550100002"} }),
		"empty recipient": with(func(r *crewcast.SendRequest) { r.To = []string{""} }),
		"no sender":       with(func(r *crewcast.SendRequest) { r.From = "" }),
		"nothing to send": with(func(r *crewcast.SendRequest) { r.Text = "" }),
		"eleven media":    with(func(r *crewcast.SendRequest) { r.MediaURLs = eleven }),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Send(context.Background(), req)
			if !errors.Is(err, ErrInvalidRequest) || crewcast.ClassOf(err) != crewcast.ClassSender {
				t.Errorf("err = %v (class %q)", err, crewcast.ClassOf(err))
			}
		})
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("%d requests reached the API, want 0", n)
	}
	if _, err := c.Send(context.Background(), with(func(r *crewcast.SendRequest) { r.MediaURLs = eleven[:10] })); err != nil {
		t.Errorf("ten media: %v", err)
	}
}

func TestSendErrorResponses(t *testing.T) {
	errBody := func(code int, msg string) string {
		return `{"code":` + strconv.Itoa(code) + `,"message":"` + msg + `","more_info":"https://www.twilio.com/docs/errors/` + strconv.Itoa(code) + `","status":400}`
	}
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
		{"429 with Retry-After", 429, map[string]string{"Retry-After": "5"}, `{"code":20429,"message":"Too Many Requests","status":429}`,
			crewcast.ClassNotSent, "20429", false, 5 * time.Second},
		{"429 with Retry-After date", 429, map[string]string{"Retry-After": testNow.Add(time.Minute).Format(http.TimeFormat)}, ``,
			crewcast.ClassNotSent, "", false, time.Minute},
		{"429 without Retry-After", 429, nil, `{"code":20429}`, crewcast.ClassNotSent, "20429", false, 0},
		{"invalid To", 400, nil, errBody(21211, "The 'To' number is not a valid phone number."), crewcast.ClassRecipient, "21211", false, 0},
		{"unsubscribed", 400, nil, errBody(21610, "Attempt to send to unsubscribed recipient"), crewcast.ClassRecipient, "21610", true, 0},
		{"landline", 400, nil, errBody(21635, "landline"), crewcast.ClassRecipient, "21635", false, 0},
		{"auth", 401, nil, `{"code":20003,"message":"Authenticate","status":401}`, crewcast.ClassSender, "20003", false, 0},
		{"From not capable", 400, nil, errBody(21606, "x"), crewcast.ClassSender, "21606", false, 0},
		{"trial unverified", 400, nil, errBody(21608, "x"), crewcast.ClassSender, "21608", false, 0},
		{"too many media", 400, nil, errBody(21623, "x"), crewcast.ClassSender, "21623", false, 0},
		{"unknown code on 400", 400, nil, errBody(21999, "new"), crewcast.ClassRecipient, "21999", false, 0},
		{"code as string", 400, nil, `{"code":"21610"}`, crewcast.ClassRecipient, "21610", true, 0},
		{"account not found", 404, nil, `{"code":20404,"status":404}`, crewcast.ClassSender, "20404", false, 0},
		{"500", 500, nil, `{"code":20500,"message":"Internal Server Error","status":500}`, crewcast.ClassUncertain, "20500", false, 0},
		{"503 HTML", 503, nil, `<html>unavailable</html>`, crewcast.ClassUncertain, "", false, 0},
		{"201 not JSON", 201, nil, `<html>`, crewcast.ClassUncertain, "", false, 0},
		{"201 without sid", 201, nil, `{"status":"queued"}`, crewcast.ClassUncertain, "", false, 0},
		{"201 null", 201, nil, `null`, crewcast.ClassUncertain, "", false, 0},
		{"307 not followed", 307, map[string]string{"Location": "/elsewhere"}, ``, crewcast.ClassSender, "", false, 0},
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
			_, err := c.Send(context.Background(), okRequest)
			var se *crewcast.SendError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *crewcast.SendError", err)
			}
			if se.Class != tc.class || se.Code != tc.code || se.OptOut != tc.optOut || se.RetryAfter != tc.retryAfter ||
				se.HTTPStatus != tc.status || se.Provider != "twilio" {
				t.Errorf("got %+v\nwant status %d class %q code %q optOut %v retryAfter %v", se, tc.status, tc.class, tc.code, tc.optOut, tc.retryAfter)
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("%d requests, want exactly 1 (no retries, no redirects)", n)
			}
		})
	}
}

func TestSendTransportErrors(t *testing.T) {
	t.Run("connection refused is not sent", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c := newTestClient(t, "http://"+addr, nil)
		_, err = c.Send(context.Background(), okRequest)
		if got := crewcast.ClassOf(err); got != crewcast.ClassNotSent {
			t.Errorf("class = %q (%v), want not_sent", got, err)
		}
	})
	t.Run("connection dropped after the request is uncertain", func(t *testing.T) {
		var mu sync.Mutex
		got := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			mu.Lock()
			got++
			mu.Unlock()
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		c := newTestClient(t, srv.URL, nil)
		_, err := c.Send(context.Background(), okRequest)
		if cl := crewcast.ClassOf(err); cl != crewcast.ClassUncertain {
			t.Errorf("class = %q (%v), want uncertain", cl, err)
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
		_, err := c.Send(ctx, okRequest)
		if got := crewcast.ClassOf(err); got != crewcast.ClassUncertain || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("class = %q (%v), want uncertain deadline", got, err)
		}
	})
}

func TestNewValidatesConfig(t *testing.T) {
	good := Config{AccountSID: testSID, AuthToken: testToken}
	for name, mutate := range map[string]func(*Config){
		"no account SID":      func(c *Config) { c.AccountSID = "" },
		"no auth token":       func(c *Config) { c.AuthToken = "" },
		"relative API base":   func(c *Config) { c.APIBase = "api.twilio.com" },
		"bad status callback": func(c *Config) { c.StatusCallbackURL = "/cb" },
		"bad public URL":      func(c *Config) { c.PublicURL = "crew.example.com" },
		"non-http public URL": func(c *Config) { c.PublicURL = "ftp://crew.example.com" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			mutate(&cfg)
			if _, err := New(cfg); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
	c, err := New(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name() != "twilio" || c.base != DefaultAPIBase || c.http.Timeout != DefaultTimeout || c.http.CheckRedirect == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
}
