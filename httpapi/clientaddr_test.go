package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// from sends a request to the handler as if it came from the TCP peer
// remote ("host:port"), with the given headers; key is an Authorization
// value ("" for none). It returns the recorded answer.
func (e *env) from(remote, method, path, body, auth string, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, e.srv.URL+path, rd)
	req.RemoteAddr = remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	resp := rec.Result()
	b, _ := io.ReadAll(resp.Body)
	validateResponse(e.t, e.handler, req, resp, b)
	return resp, b
}

// signInFrom signs in with email and password from a TCP peer.
func (e *env) signInFrom(remote, email, pw string, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	return e.from(remote, "POST", "/v1/session", fmt.Sprintf(`{"email":%q,"password":%q}`, email, pw), "", header)
}

func mustPrefixes(t *testing.T, cidrs ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, c := range cidrs {
		out = append(out, netip.MustParsePrefix(c))
	}
	return out
}

// Attack (a): an attacker failing again and again for the victim's email
// from another client cannot stop the victim, from their own client,
// signing in with the right password: failures count per account and
// client, and per client, never per account alone.
func TestSignInAttackerCannotLockOutVictim(t *testing.T) {
	e := newEnv(t, cheapUsers)
	_, pw := e.newUser("vic@example.com", "Vic", "viewer")
	const attacker, victim = "198.51.100.7:4000", "203.0.113.5:5000"
	throttled := 0
	for i := range 40 {
		r, _ := e.signInFrom(attacker, "vic@example.com", fmt.Sprint("guess ", i), nil)
		if r.StatusCode == 429 {
			throttled++
		}
		e.clock.Advance(time.Second)
	}
	if throttled == 0 {
		t.Fatal("40 wrong passwords in 40 s from one client were never throttled")
	}
	if r, b := e.signInFrom(victim, "vic@example.com", pw, nil); r.StatusCode != 200 {
		t.Fatalf("the victim, from their own client, with the right password: %d %s", r.StatusCode, b)
	}
}

// Attack (b): behind a trusted proxy, one forwarded client failing on many
// random emails is slowed, but a user coming through the same proxy from
// another forwarded address still signs in.
func TestSignInBehindProxyThrottlesPerForwardedClient(t *testing.T) {
	e := newEnv(t, func(c *Config) { cheapUsers(c); c.TrustedProxies = mustPrefixes(t, "10.0.0.0/8") })
	_, pw := e.newUser("una@example.com", "Una", "viewer")
	const proxy = "10.0.0.2:40000"
	throttled := 0
	for i := range 30 {
		r, _ := e.signInFrom(proxy, fmt.Sprintf("random%d@example.com", i), "wrong",
			map[string]string{"X-Forwarded-For": "198.51.100.7"})
		if r.StatusCode == 429 {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("30 failures from one forwarded client were never throttled")
	}
	if r, b := e.signInFrom(proxy, "una@example.com", pw, map[string]string{"X-Forwarded-For": "203.0.113.5"}); r.StatusCode != 200 {
		t.Fatalf("another forwarded client through the same proxy: %d %s", r.StatusCode, b)
	}
	// The same holds with RFC 7239 Forwarded.
	e.clock.Advance(time.Hour)
	for i := range 30 {
		e.signInFrom(proxy, fmt.Sprintf("random%d@example.com", i), "wrong", map[string]string{"Forwarded": `for=198.51.100.8;proto=https`})
	}
	if r, b := e.signInFrom(proxy, "una@example.com", pw, map[string]string{"Forwarded": `for="[2001:db8::5]:4711"`}); r.StatusCode != 200 {
		t.Fatalf("another Forwarded client: %d %s", r.StatusCode, b)
	}
}

// A forwarding header from a peer that is not a trusted proxy is ignored:
// rotating X-Forwarded-For does not escape the per-client limit.
func TestSignInSpoofedForwardedForIsIgnored(t *testing.T) {
	e := newEnv(t, func(c *Config) { cheapUsers(c); c.TrustedProxies = mustPrefixes(t, "10.0.0.0/8") })
	const attacker = "198.51.100.7:4000"
	throttled := 0
	for i := range 30 {
		r, _ := e.signInFrom(attacker, fmt.Sprintf("random%d@example.com", i), "wrong",
			map[string]string{"X-Forwarded-For": fmt.Sprintf("192.0.2.%d", i+1), "Forwarded": fmt.Sprintf("for=192.0.2.%d", i+1)})
		if r.StatusCode == 429 {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("rotating X-Forwarded-For from an untrusted peer escaped the per-client limit")
	}
}

func TestClientAddr(t *testing.T) {
	trusted := mustPrefixes(t, "10.0.0.0/8", "fd00::/8")
	for _, c := range []struct {
		name, remote, xff, fwd, want string
	}{
		{"no proxy configured header ignored", "198.51.100.7:1", "192.0.2.1", "", "198.51.100.7"},
		{"trusted peer, one hop", "10.0.0.2:1", "192.0.2.1", "", "192.0.2.1"},
		{"right-most untrusted wins over a spoofed left part", "10.0.0.2:1", "6.6.6.6, 192.0.2.1", "", "192.0.2.1"},
		{"chained trusted proxies are skipped", "10.0.0.2:1", "192.0.2.1, 10.1.1.1, 10.2.2.2", "", "192.0.2.1"},
		{"only trusted hops: the left-most", "10.0.0.2:1", "10.1.1.1, 10.2.2.2", "", "10.1.1.1"},
		{"ports and brackets", "10.0.0.2:1", "[2001:db8::1]:443", "", "2001:db8::1"},
		{"garbage ends the walk at the last trusted hop", "10.0.0.2:1", "192.0.2.1, not-an-ip", "", "10.0.0.2"},
		{"trusted peer without header", "10.0.0.2:1", "", "", "10.0.0.2"},
		{"Forwarded", "10.0.0.2:1", "", `for=192.0.2.60;proto=http;by=203.0.113.43`, "192.0.2.60"},
		{"Forwarded list, quoted v6", "[fd00::1]:1", "", `for=6.6.6.6, for="[2001:db8:cafe::17]:4711"`, "2001:db8:cafe::17"},
		{"Forwarded unknown ends the walk", "10.0.0.2:1", "", `for=192.0.2.1, for=unknown`, "10.0.0.2"},
		{"X-Forwarded-For wins over Forwarded", "10.0.0.2:1", "192.0.2.1", `for=192.0.2.2`, "192.0.2.1"},
		{"v4-mapped peer", "[::ffff:10.0.0.2]:1", "192.0.2.1", "", "192.0.2.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			if c.fwd != "" {
				r.Header.Set("Forwarded", c.fwd)
			}
			p := trusted
			if strings.HasPrefix(c.name, "no proxy") {
				p = nil
			}
			if got := clientAddrOf(r, p); got != c.want {
				t.Fatalf("client of %s (XFF %q, Forwarded %q) = %q, want %q", c.remote, c.xff, c.fwd, got, c.want)
			}
		})
	}
}

// Bad API keys are slowed per client: after a burst of failures a client
// gets 429 with Retry-After, without the key being looked at; another
// client (and a good key from it) is not affected.
func TestBadBearerKeysAreThrottledPerClient(t *testing.T) {
	e := newEnv(t, nil)
	const guesser, other = "198.51.100.7:4000", "203.0.113.5:5000"
	var last *http.Response
	n401 := 0
	for i := range 200 {
		r, _ := e.from(guesser, "GET", "/v1/groups", "", fmt.Sprintf("Bearer cc_aaaaaaaa_%032d", i), nil)
		last = r
		if r.StatusCode == 401 {
			n401++
		}
	}
	if last.StatusCode != 429 || last.Header.Get("Retry-After") == "" {
		t.Fatalf("after 200 bad keys: %d (Retry-After %q), want 429 with Retry-After", last.StatusCode, last.Header.Get("Retry-After"))
	}
	if n401 > 30 {
		t.Fatalf("%d of 200 bad keys were checked", n401)
	}
	if r, b := e.from(other, "GET", "/v1/groups", "", "Bearer "+e.keys["read"], nil); r.StatusCode != 200 {
		t.Fatalf("another client with a good key: %d %s", r.StatusCode, b)
	}
	if r, _ := e.from(other, "GET", "/v1/groups", "", "Bearer cc_aaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", nil); r.StatusCode != 401 {
		t.Fatalf("another client's first bad key: %d, want 401", r.StatusCode)
	}
	// Time refills the guesser's budget.
	e.clock.Advance(10 * time.Minute)
	if r, b := e.from(guesser, "GET", "/v1/groups", "", "Bearer "+e.keys["read"], nil); r.StatusCode != 200 {
		t.Fatalf("the guesser with a good key after waiting: %d %s", r.StatusCode, b)
	}
}
