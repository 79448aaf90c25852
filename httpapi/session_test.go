package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
)

// login signs in with the named key and returns the session cookie.
func (e *env) login(key string, header map[string]string) (*http.Cookie, *http.Response, []byte) {
	e.t.Helper()
	resp, b := e.do("POST", "/v1/session", `{"key":"`+e.keys[key]+`"}`, "", header)
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			return c, resp, b
		}
	}
	return nil, resp, b
}

// withCookie sends a request authenticated by a session cookie only.
func (e *env) withCookie(c *http.Cookie, method, path, body string, header map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	validateResponse(e.t, e.handler, req, resp, b)
	return resp, b
}

func TestSessionCookie(t *testing.T) {
	e := newEnv(t, nil)
	c, resp, b := e.login("send", nil)
	if resp.StatusCode != 200 || c == nil {
		t.Fatalf("login: %d %s", resp.StatusCode, b)
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 {
		t.Errorf("cookie attributes %+v", c)
	}
	if strings.Contains(c.Value, e.keys["send"]) || len(c.Value) < 40 {
		t.Errorf("cookie value must be a random id, not the key: %q", c.Value)
	}
	s := decode[sessionJSON](t, b)
	if s.KeyID != e.keyIDs["send"] || len(s.Scopes) != 1 || s.Scopes[0] != "send" || s.ExpiresAt == nil {
		t.Errorf("session %+v", s)
	}
	if r, b := e.withCookie(c, "GET", "/v1/session", "", nil); r.StatusCode != 200 || decode[sessionJSON](t, b).Name != "send" {
		t.Errorf("GET session: %d %s", r.StatusCode, b)
	}
	if r, _ := e.withCookie(c, "GET", "/v1/groups", "", nil); r.StatusCode != 200 {
		t.Errorf("cookie read: %d", r.StatusCode)
	}

	// State changes by cookie: same-origin and non-browser requests pass,
	// cross-site ones are refused.
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no browser headers", nil, 201},
		{"same-origin fetch", map[string]string{"Sec-Fetch-Site": "same-origin"}, 201},
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"foreign Origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"same Origin", map[string]string{"Origin": e.srv.URL}, 201},
	} {
		r, b := e.withCookie(c, "POST", "/v1/groups", createBody, tc.header)
		if r.StatusCode != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.StatusCode, b, tc.want)
		}
		if tc.want == 403 && errorOf(t, b).Code != "cross_origin" {
			t.Errorf("%s: code %s", tc.name, errorOf(t, b).Code)
		}
	}
	// A cross-site read is harmless and allowed; a bearer key is not
	// ambient, so it needs no origin check.
	if r, _ := e.withCookie(c, "GET", "/v1/groups", "", map[string]string{"Sec-Fetch-Site": "cross-site"}); r.StatusCode != 200 {
		t.Errorf("cross-site GET: %d", r.StatusCode)
	}
	if r, _ := e.do("POST", "/v1/groups", createBody, "send", map[string]string{"Sec-Fetch-Site": "cross-site"}); r.StatusCode != 201 {
		t.Errorf("bearer cross-site POST: %d", r.StatusCode)
	}
	if v := metricValue(t, e.reg, "crewcast_http_auth_failures_total", map[string]string{"reason": "cross_origin"}); v != 2 {
		t.Errorf("cross-origin refusals counted %v, want 2", v)
	}

	// Logout ends the session.
	r, _ := e.withCookie(c, "DELETE", "/v1/session", "", nil)
	if r.StatusCode != 204 {
		t.Fatalf("logout: %d", r.StatusCode)
	}
	cleared := false
	for _, rc := range r.Cookies() {
		cleared = cleared || (rc.Name == sessionCookie && rc.MaxAge < 0)
	}
	if !cleared {
		t.Error("logout did not clear the cookie")
	}
	if r, _ := e.withCookie(c, "GET", "/v1/groups", "", nil); r.StatusCode != 401 {
		t.Errorf("after logout: %d", r.StatusCode)
	}
}

func TestSessionScopesAndLifetime(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.SessionTTL = time.Hour })
	read, _, _ := e.login("read", nil)
	if r, _ := e.withCookie(read, "POST", "/v1/groups", createBody, nil); r.StatusCode != 403 {
		t.Errorf("read session created a group: %d", r.StatusCode)
	}
	// Revoking the key ends its sessions.
	send, _, _ := e.login("send", nil)
	if r, _ := e.do("DELETE", "/v1/keys/"+e.keyIDs["send"], "", "admin", nil); r.StatusCode != 204 {
		t.Fatalf("revoke: %d", r.StatusCode)
	}
	if r, _ := e.withCookie(send, "GET", "/v1/groups", "", nil); r.StatusCode != 401 {
		t.Errorf("session of a revoked key: %d", r.StatusCode)
	}
	// Sessions expire.
	e.clock.Advance(time.Hour)
	if r, _ := e.withCookie(read, "GET", "/v1/groups", "", nil); r.StatusCode != 401 {
		t.Errorf("expired session: %d", r.StatusCode)
	}
	// An unknown cookie is refused like a missing key.
	if r, b := e.withCookie(&http.Cookie{Name: sessionCookie, Value: "forged"}, "GET", "/v1/groups", "", nil); r.StatusCode != 401 ||
		r.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("forged cookie: %d %s", r.StatusCode, b)
	}
}

func TestSessionLogin(t *testing.T) {
	runMixed(t, []scenario{
		{name: "bad key", method: "POST", path: "/v1/session", body: `{"key":"cc_aaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`, status: 401, code: "unauthorized"},
		{name: "revoked key", method: "POST", path: "/v1/session", body: `{"key":"{key:revoked}"}`, status: 401},
		{name: "missing key", method: "POST", path: "/v1/session", body: `{}`, status: 400, fields: []string{"key"}},
		{name: "cross-site login", method: "POST", path: "/v1/session", body: `{"key":"{key:read}"}`, status: 403, code: "cross_origin",
			header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{name: "get without session", method: "GET", path: "/v1/session", status: 401},
		{name: "get with bearer", method: "GET", path: "/v1/session", key: "admin", status: 200, has: []string{`"scopes":["admin"]`}},
		{name: "secure cookie behind https", mod: func(c *Config) { c.PublicURL = "https://crew.example.com" },
			method: "POST", path: "/v1/session", body: `{"key":"{k}"}`, status: 200,
			setup: func(e *env) map[string]string { return map[string]string{"k": e.keys["read"]} },
			check: func(t *testing.T, e *env, resp *http.Response, _ []byte) {
				if cs := resp.Cookies(); len(cs) != 1 || !cs[0].Secure {
					t.Errorf("cookies %+v, want one Secure cookie", cs)
				}
			}},
		{name: "public origin is trusted", mod: func(c *Config) { c.PublicURL = "https://crew.example.com" },
			method: "POST", path: "/v1/session", body: `{"key":"{k}"}`, status: 200,
			header: map[string]string{"Origin": "https://crew.example.com"},
			setup:  func(e *env) map[string]string { return map[string]string{"k": e.keys["read"]} }},
	})
}

// Finding 10 of issue 12: one key signing in over and over must not sign
// out another key's session. A key over its own cap loses its own oldest
// session; a full table refuses new sign-ins instead of evicting.
func TestSessionFloodKeepsOtherKeysSignedIn(t *testing.T) {
	e := newEnv(t, nil)
	clock, ctx := e.clock, context.Background()
	s := newSessions(e.st, clock.Now, time.Hour)
	s.max, s.maxPerOwner = 40, 5 // the store-backed caps, small enough to fill in a test
	victim, _, err := s.create(ctx, "key_victim", "pv")
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for i := range s.max + 10 {
		id, _, err := s.create(ctx, "key_flood", "pf")
		if err != nil {
			t.Fatalf("sign-in %d of the flooding key: %v", i, err)
		}
		if i == 0 {
			first = id
		}
		clock.Advance(time.Millisecond)
	}
	if _, ok, _ := s.get(ctx, victim); !ok {
		t.Fatal("the other key's session was evicted by one key's sign-in flood")
	}
	if _, ok, _ := s.get(ctx, first); ok {
		t.Error("the flooding key kept more than its cap of sessions")
	}

	// Fill the table with many keys: a new sign-in is refused, nobody is
	// signed out.
	for k := 0; ; k++ {
		_, _, err := s.create(ctx, "key_"+strconv.Itoa(k), "p")
		if errors.Is(err, errTooManySessions) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if k > 2*s.max {
			t.Fatal("the session table has no global cap")
		}
	}
	if _, ok, _ := s.get(ctx, victim); !ok {
		t.Fatal("a full table evicted an existing session")
	}
	// Once sessions expire, sign-ins work again.
	clock.Advance(2 * time.Hour)
	if _, _, err := s.create(ctx, "key_late", "pl"); err != nil {
		t.Fatalf("sign-in after expiry: %v", err)
	}
}

// touchCounter counts the last-use writes sessions make.
type touchCounter struct {
	store.Sessions
	n int
}

func (c *touchCounter) TouchSession(ctx context.Context, h []byte, at time.Time) error {
	c.n++
	return c.Sessions.TouchSession(ctx, h, at)
}

// A busy board writes a session's last use at most once a minute, not on
// every request, and the idle limit still counts from that write.
func TestSessionLastUseWrittenOncePerMinute(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	tc := &touchCounter{Sessions: e.st}
	s := newSessions(tc, e.clock.Now, 12*time.Hour)
	s.idle = time.Hour
	id, _, err := s.create(ctx, "key_a", "pa")
	if err != nil {
		t.Fatal(err)
	}
	for range 29 { // 29 requests over 58 s
		e.clock.Advance(2 * time.Second)
		if _, ok, err := s.get(ctx, id); !ok || err != nil {
			t.Fatalf("get: %v %v", ok, err)
		}
	}
	if tc.n != 0 {
		t.Fatalf("%d last-use writes within the first minute, want 0", tc.n)
	}
	e.clock.Advance(3 * time.Second)
	if _, ok, _ := s.get(ctx, id); !ok || tc.n != 1 {
		t.Fatalf("after a minute: ok=%v, %d writes, want 1", ok, tc.n)
	}
	// Idle counts from the stored last use.
	e.clock.Advance(59 * time.Minute)
	if _, ok, _ := s.peek(ctx, id); !ok {
		t.Fatal("the session idled out early")
	}
	e.clock.Advance(2 * time.Minute)
	if _, ok, _ := s.peek(ctx, id); ok {
		t.Fatal("the session outlived its idle limit")
	}
}
