package sim

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
)

// TestOutage503: a provider's 503 outage answers its API with 503 and no
// message id, records nothing, leaves the other provider alone, shows in
// GET /sim/faults and ends with "off".
func TestOutage503(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	if r := c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"provider": "telnyx", "outage": "503"}); r.status != http.StatusOK {
		t.Fatalf("set outage: %d %s", r.status, r.body)
	}
	var f Faults
	c.simJSON(http.MethodGet, "/sim/faults", nil).decode(t, &f)
	if f.Outages["telnyx"] != "503" || len(f.Outages) != 1 {
		t.Fatalf("outages = %v", f.Outages)
	}
	r := c.telnyxSend(sendBody(alice, "down?"))
	var body struct {
		Data   *tMessage `json:"data"`
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	r.decode(t, &body)
	if r.status != http.StatusServiceUnavailable || body.Data != nil || len(body.Errors) != 1 {
		t.Fatalf("telnyx during the outage: %d %s", r.status, r.body)
	}
	if r := c.twilioSend(twilioBody(bob, "up")); r.status != http.StatusCreated {
		t.Fatalf("twilio during telnyx's outage: %d %s", r.status, r.body)
	}
	if l := c.ledger(); len(l) != 1 || l[0].Provider != "twilio" || l[0].To != bob {
		t.Fatalf("ledger = %+v, want only the twilio send", l)
	}
	// Twilio down too, Telnyx back.
	c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"provider": "twilio", "outage": "503"})
	c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"provider": "telnyx", "outage": "off"})
	if r := c.twilioSend(twilioBody(bob, "down")); r.status != http.StatusServiceUnavailable {
		t.Fatalf("twilio during its outage: %d %s", r.status, r.body)
	}
	if r := c.telnyxSend(sendBody(alice, "back")); r.status != http.StatusOK {
		t.Fatalf("telnyx after its outage: %d %s", r.status, r.body)
	}
	l := c.ledger()
	if len(l) != 2 || l[1].Provider != "telnyx" || l[1].Text != "back" {
		t.Fatalf("ledger = %+v", l)
	}
	f = Faults{} // decoding into a filled map would merge
	c.simJSON(http.MethodGet, "/sim/faults", nil).decode(t, &f)
	if len(f.Outages) != 1 || f.Outages["twilio"] != "503" {
		t.Fatalf("outages = %v", f.Outages)
	}
	for _, bad := range []map[string]any{
		{"provider": "plivo", "outage": "503"}, {"provider": "telnyx"}, {"outage": "refuse"},
		{"provider": "telnyx", "outage": "down"}, {"outages": map[string]string{"telnyx": "maybe"}},
	} {
		if r := c.simJSON(http.MethodPost, "/sim/faults", bad); r.status != http.StatusUnprocessableEntity {
			t.Errorf("%v: %d %s, want 422", bad, r.status, r.body)
		}
	}
}

// TestOutageRefuse: on a provider's own listener a "refuse" outage is a
// real connection refused, and the listener comes back on the same
// address after "off"; on the shared listener the request is dropped
// unanswered; nothing is recorded either way.
func TestOutageRefuse(t *testing.T) {
	t.Parallel()
	s, c := newSim(t, Config{})
	base, err := s.StartProvider(context.Background(), "telnyx", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	own := &client{t: t, base: base, http: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, keys: c.keys}
	if r := own.telnyxSend(sendBody(alice, "one")); r.status != http.StatusOK {
		t.Fatalf("telnyx on its own listener: %d %s", r.status, r.body)
	}
	c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"provider": "telnyx", "outage": "refuse"})
	_, err = own.do(own.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(bob, "refused")))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("send during refuse on the provider's listener: %v, want connection refused", err)
	}
	if _, err := c.do(c.telnyxReq(http.MethodPost, "/v2/messages", c.keys.TelnyxAPIKey, sendBody(bob, "dropped"))); err == nil {
		t.Fatal("send during refuse on the shared listener was answered")
	}
	if r := c.twilioSend(twilioBody(carol, "twilio up")); r.status != http.StatusCreated {
		t.Fatalf("twilio during telnyx's refusal: %d", r.status)
	}
	c.simJSON(http.MethodPost, "/sim/faults", map[string]any{"provider": "telnyx", "outage": "off"})
	if r := own.telnyxSend(sendBody(bob, "back")); r.status != http.StatusOK {
		t.Fatalf("telnyx back on its own address: %d %s", r.status, r.body)
	}
	var got []string
	for _, l := range c.ledger() {
		got = append(got, l.Provider+" "+l.Text)
	}
	if want := []string{"telnyx one", "twilio twilio up", "telnyx back"}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("ledger %q, want %q", got, want)
	}
}
