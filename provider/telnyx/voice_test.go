package telnyx

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
)

// PlaceCall posts the TeXML call as JSON to the connection's calls
// endpoint and returns the flat answer's call_sid; without a connection it
// makes no request.
func TestPlaceCallRequest(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"call_sid":"v3:abc","from":"+15550100000","to":"+15550100001","status":"queued"}`))
	})
	c := newTestClient(t, api.srv.URL, func(cfg *Config) { cfg.TeXMLConnectionID = "1773070540731319841" })
	if !c.CanCall() {
		t.Fatal("CanCall = false with a connection")
	}
	texml := `<Response><Gather numDigits="1" action="https://crew.example.com/webhooks/telnyx/voice?g=g1&amp;k=gather"><Say>Crew call &amp; lunch</Say></Gather></Response>`
	sid, err := c.PlaceCall(context.Background(), CallRequest{From: "+15550100000", To: "+15550100001", TeXML: texml,
		StatusCallback: "https://crew.example.com/webhooks/telnyx/voice?g=g1&k=status", MachineDetection: true, Timeout: 30})
	if err != nil || sid != "v3:abc" {
		t.Fatalf("PlaceCall = %q, %v", sid, err)
	}
	reqs := api.requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v2/texml/calls/1773070540731319841" ||
		reqs[0].Header.Get("Authorization") != "Bearer KEY_TEST" {
		t.Fatalf("requests %+v", reqs)
	}
	var b map[string]any
	if err := json.Unmarshal(reqs[0].Body, &b); err != nil {
		t.Fatal(err)
	}
	if b["To"] != "+15550100001" || b["From"] != "+15550100000" || b["Texml"] != texml || b["MachineDetection"] != "Enable" ||
		b["StatusCallbackMethod"] != "POST" || b["Timeout"] != float64(30) || !strings.Contains(b["StatusCallback"].(string), "k=status") {
		t.Fatalf("body %s", reqs[0].Body)
	}
	noConn := newTestClient(t, api.srv.URL, nil)
	if _, err := noConn.PlaceCall(context.Background(), CallRequest{From: "+15550100000", To: "+15550100001", TeXML: texml}); err == nil ||
		noConn.CanCall() || len(api.requests()) != 1 {
		t.Fatalf("without a connection: %v", err)
	}
}

// A 5xx is uncertain; a 2xx without call_sid too (accepted, but which call?).
func TestPlaceCallErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
	}{{500, `{"errors":[{"code":"10007","title":"Unexpected error"}]}`}, {200, `{"status":"queued"}`}} {
		api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		})
		c := newTestClient(t, api.srv.URL, func(cfg *Config) { cfg.TeXMLConnectionID = "1" })
		_, err := c.PlaceCall(context.Background(), CallRequest{From: "+15550100000", To: "+15550100001", TeXML: "<Response/>"})
		if crewcast.ClassOf(err) != crewcast.ClassUncertain {
			t.Errorf("%d %s: %v", tc.status, tc.body, err)
		}
	}
}

// A TeXML callback is verified like every Telnyx webhook before it is read:
// forged, altered, stale (outside the tolerance) and unsigned are refused.
func TestParseVoiceWebhook(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	form := url.Values{"CallSid": {"v3:abc"}, "CallStatus": {"in-progress"}, "Digits": {"1"}, "From": {"+15550100000"}, "To": {"+15550100001"}}
	body := []byte(form.Encode())
	u := "https://crew.example.com/webhooks/telnyx/voice?g=g1&k=gather&r=0"
	ev, err := c.ParseVoiceWebhook(crewcast.WebhookRequest{URL: u, Header: Sign(testPrivateKey, testNow, body), Body: body})
	if err != nil || ev.CallSID != "v3:abc" || ev.Digits != "1" || ev.To != "+15550100001" || ev.Query.Get("g") != "g1" {
		t.Fatalf("ParseVoiceWebhook = %+v, %v", ev, err)
	}
	altered := []byte(strings.Replace(string(body), "Digits=1", "Digits=2", 1))
	for name, req := range map[string]crewcast.WebhookRequest{
		"altered":  {URL: u, Header: Sign(testPrivateKey, testNow, body), Body: altered},
		"stale":    {URL: u, Header: Sign(testPrivateKey, testNow.Add(-time.Hour), body), Body: body},
		"unsigned": {URL: u, Body: body},
	} {
		if _, err := c.ParseVoiceWebhook(req); !errors.Is(err, crewcast.ErrBadSignature) {
			t.Errorf("%s: %v, want a bad signature", name, err)
		}
	}
	twice := []byte("CallSid=v3:abc&Digits=1&Digits=2")
	if _, err := c.ParseVoiceWebhook(crewcast.WebhookRequest{URL: u, Header: Sign(testPrivateKey, testNow, twice), Body: twice}); !errors.Is(err, crewcast.ErrMalformed) {
		t.Errorf("Digits twice: %v", err)
	}
}
