package webhookout

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// Issue 27 item 10: the attempts log of an endpoint (what
// POST …/test and every delivery leave behind) kept the transport error
// verbatim, naming the address a host resolved to and telling a refused
// port from an open one, and the first 256 bytes of the answer, which
// with --webhook-allow-private reads internal services. An attempt now
// keeps its status code and a short error class; never a body, an
// address or a port.
func TestAttemptsKeepOnlyStatusAndErrorClass(t *testing.T) {
	const secretBody = "internal service answer: db=10.0.0.7:5432 token=hunter2"
	answer := func(code int) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(secretBody))
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // runs first
	okSrv := answer(http.StatusNoContent)
	failSrv := answer(http.StatusInternalServerError)

	type want struct {
		status int
		class  string
	}
	open := newFixture(t, func(c *Config) {
		c.Client = NewClient(true)
		c.Client.Timeout = 300 * time.Millisecond
	})
	cases := map[string]struct {
		url  string
		want want
	}{
		"ok":      {okSrv.URL, want{204, ""}},
		"status":  {failSrv.URL, want{500, "http_status"}},
		"connect": {"http://" + closedPort + "/", want{0, "connect"}},
		"dns":     {"http://no-such-host.invalid/", want{0, "dns"}},
		"tls":     {tlsSrv.URL, want{0, "tls"}},
		"timeout": {slow.URL, want{0, "timeout"}},
	}
	for id, c := range cases {
		open.endpoint(id, c.url, "*")
	}
	guarded := newFixture(t, func(c *Config) { c.AllowPrivate = false })
	port := okSrv.URL[strings.LastIndex(okSrv.URL, ":")+1:]
	guarded.endpoint("blocked", "http://localhost:"+port+"/", "*")

	open.event("msg_1", RecipientUpdated)
	open.step()
	guarded.event("msg_1", RecipientUpdated)
	guarded.step()
	check := func(f *fixture, id string, w want) {
		t.Helper()
		as := f.attempts(id)
		if len(as) != 1 {
			t.Fatalf("%s: %d attempts, want 1", id, len(as))
		}
		a := as[0]
		if a.StatusCode != w.status || a.Error != w.class {
			t.Errorf("%s: status %d, error %q; want %d and %q", id, a.StatusCode, a.Error, w.status, w.class)
		}
		if a.Response != "" {
			t.Errorf("%s: the answer's body was kept: %q", id, a.Response)
		}
		for _, leak := range []string{"127.0.0.1", "::1", port, closedPort, "no-such-host", "10.0.0.7", "hunter2"} {
			if strings.Contains(a.Error, leak) {
				t.Errorf("%s: error %q shows %q", id, a.Error, leak)
			}
		}
	}
	for id, c := range cases {
		check(open, id, c.want)
	}
	check(guarded, "blocked", want{0, "blocked_address"})
	if a := guarded.attempts("blocked"); len(a) == 1 && a[0].Result != store.AttemptRefused {
		t.Errorf("blocked: result %q, want %q", a[0].Result, store.AttemptRefused)
	}
}
