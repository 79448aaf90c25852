package sim

import (
	"net/http"
	"strings"
	"testing"
)

// Issue 27 item 8: the control plane answered anyone. GET /sim/keys gave
// out the simulated credentials, and POST /sim/inbound with text/plain
// and a foreign Origin (what any web page can send to a loopback port
// without a preflight) injected replies. Each /sim/* route now needs the
// control token, refuses a foreign origin and, on POST, anything but JSON.
func TestControlPlaneRefusesStrangers(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t")})
	inbound := `{"from":"` + alice + `","to":"` + ourNumber + `","text":"YES"}`
	req := func(method, path, body string, header map[string]string) *http.Request {
		r, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			r.Header.Set(k, v)
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		r      *http.Request
		status int
		code   string
	}{
		{"keys without a token", req("GET", "/sim/keys", "", nil), http.StatusUnauthorized, "unauthorized"},
		{"keys with a wrong token", req("GET", "/sim/keys", "", map[string]string{"Authorization": "Bearer not-the-token-at-all"}),
			http.StatusUnauthorized, "unauthorized"},
		{"keys with the Telnyx API key", req("GET", "/sim/keys", "", map[string]string{"Authorization": "Bearer " + c.keys.TelnyxAPIKey}),
			http.StatusUnauthorized, "unauthorized"},
		{"ledger without a token", req("GET", "/sim/ledger", "", nil), http.StatusUnauthorized, "unauthorized"},
		{"faults without a token", req("POST", "/sim/faults", `{"drop_rate":1}`, map[string]string{"Content-Type": "application/json"}),
			http.StatusUnauthorized, "unauthorized"},
		{"reset without a token", req("POST", "/sim/reset", "", nil), http.StatusUnauthorized, "unauthorized"},
		{"a web page's text/plain inbound", req("POST", "/sim/inbound", inbound,
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}), http.StatusForbidden, "cross_origin"},
		{"a cross-site fetch", req("GET", "/sim/keys", "", map[string]string{"Sec-Fetch-Site": "cross-site"}),
			http.StatusForbidden, "cross_origin"},
	} {
		r := c.mustDo(tc.r)
		if r.status != tc.status || !strings.Contains(string(r.body), `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, r.status, r.body, tc.status, tc.code)
		}
		if strings.Contains(string(r.body), c.keys.TwilioAuthToken) {
			t.Errorf("%s: the answer holds the credentials", tc.name)
		}
	}
	rc.drained(t, s) // nothing was injected
	if f := s.Faults(); f.DropRate != 0 {
		t.Errorf("faults changed to %+v", f)
	}
}

// The control token admits the simulator's own user: the configured one
// or, by default, a random one per simulator; a same-origin request passes;
// a POST that is not JSON is a 415 even with the token.
func TestControlPlaneAdmitsTheToken(t *testing.T) {
	t.Parallel()
	const token = "a-token-of-the-tests-0123456789"
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TelnyxWebhookURL: rc.url("/t"), ControlToken: token})
	if s.ControlToken() != token || c.token != token {
		t.Fatalf("ControlToken %q, want the configured one", s.ControlToken())
	}
	auth := map[string]string{"Authorization": "Bearer " + token}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{}
		for k, v := range auth {
			h[k] = v
		}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	do := func(method, path, body string, header map[string]string) resp {
		r, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			r.Header.Set(k, v)
		}
		return c.mustDo(r)
	}
	if r := do("GET", "/sim/keys", "", auth); r.status != http.StatusOK || !strings.Contains(string(r.body), c.keys.TelnyxAPIKey) {
		t.Fatalf("keys with the token: %d %s", r.status, r.body)
	}
	host := strings.TrimPrefix(c.base, "http://")
	same := with(map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"})
	if r := do("GET", "/sim/ledger", "", same); r.status != http.StatusOK {
		t.Fatalf("same-origin ledger: %d %s", r.status, r.body)
	}
	inbound := `{"from":"` + alice + `","to":"` + ourNumber + `","text":"YES"}`
	if r := do("POST", "/sim/inbound", inbound, with(map[string]string{"Content-Type": "text/plain"})); r.status != http.StatusUnsupportedMediaType ||
		!strings.Contains(string(r.body), `"code":"unsupported_media_type"`) {
		t.Fatalf("text/plain inbound with the token: %d %s", r.status, r.body)
	}
	if r := do("POST", "/sim/inbound", inbound, with(map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"})); r.status != http.StatusForbidden {
		t.Fatalf("inbound from another port's origin: %d %s", r.status, r.body)
	}
	rc.drained(t, s)
	if r := do("POST", "/sim/inbound", inbound, with(map[string]string{"Content-Type": "application/json; charset=utf-8"})); r.status != http.StatusAccepted {
		t.Fatalf("JSON inbound with the token: %d %s", r.status, r.body)
	}
	rc.next(t)
	// The provider API keeps its own credentials: no control token there.
	if r := c.telnyxSend(sendBody(alice, "hi")); r.status != http.StatusOK {
		t.Fatalf("send with the Telnyx key: %d %s", r.status, r.body)
	}

	a, _ := newSim(t, Config{})
	b, _ := newSim(t, Config{})
	if len(a.ControlToken()) < MinControlToken || a.ControlToken() == b.ControlToken() {
		t.Fatalf("random tokens %q and %q (seed 1 both): want long and different", a.ControlToken(), b.ControlToken())
	}
	if _, err := New(Config{ControlToken: "short"}); err == nil {
		t.Fatal("a 5-character control token was accepted")
	}
}
