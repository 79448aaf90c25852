package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/tracker"
)

// Voice callbacks: a signed gather becomes the recipient's answer (the
// digit chooses the option; a replay is the same event), a signed final
// status the call's end; forged, re-signed for another group, or for
// another number are refused or ignored, and reach nothing.
func TestWebhookTwilioVoice(t *testing.T) {
	h := newHookEnv(t, func(c *Config) { c.PublicURL = publicURL })
	var mu sync.Mutex
	var got []crewcast.Event
	h.svc.IngestFunc = func(_ context.Context, evs []crewcast.Event) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, evs...)
		return true, nil
	}
	id, _, err := h.mini.create(context.Background(), group.Request{From: "+15550100000", Text: "Crew call 7am",
		To:        []string{"+15550100001", "+15550100002"},
		Responses: []group.Option{{Key: "Y", Label: "Coming"}, {Key: "N", Label: "Can't make it"}}}, tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := func(kind string, r int) string {
		return "/webhooks/twilio/voice?" + url.Values{"g": {id}, "k": {kind}, "r": {string(rune('0' + r))}, "s": {"f1-2"}}.Encode()
	}
	form := func(status, digits, to string) url.Values {
		v := url.Values{"CallSid": {"CA11"}, "AccountSid": {"AC00000000000000000000000000000000"}, "From": {"+15550100000"},
			"To": {to}, "CallStatus": {status}, "Direction": {"outbound-api"}, "ApiVersion": {"2010-04-01"}}
		if digits != "" {
			v.Set("Digits", digits)
		}
		return v
	}
	post := func(p string, f url.Values, sig string) (int, string) {
		resp, b := h.postTwilio(p, f, sig, "")
		return resp.StatusCode, string(b)
	}
	gather := form("in-progress", "2", "+15550100002")
	for range 2 {
		code, body := post(path("gather", 1), gather, twilio.Signature(twilioToken, publicURL+path("gather", 1), gather))
		if code != 200 || !strings.Contains(body, "<Say>Thank you. Your answer was recorded: Can&#39;t make it. Goodbye.</Say><Hangup/>") {
			t.Fatalf("gather = %d %s", code, body)
		}
	}
	ended := form("no-answer", "", "+15550100001")
	if code, body := post(path("status", 0), ended, twilio.Signature(twilioToken, publicURL+path("status", 0), ended)); code != 200 ||
		body != twilio.EmptyTwiML {
		t.Fatalf("status = %d %s", code, body)
	}
	mu.Lock()
	if len(got) != 3 || got[0].EventID != got[1].EventID || got[0].Provider != tracker.VoiceProvider || got[0].Kind != crewcast.KindInbound ||
		got[0].MessageID != id || got[0].From != "+15550100002" || got[0].Text != "N" ||
		got[2].Kind != crewcast.KindCallEnded || got[2].ProviderStatus != "no_answer" || got[2].To != "+15550100001" {
		t.Fatalf("ingested %+v", got)
	}
	mu.Unlock()

	// Refused before anything is read: forged, signed for another URL (the
	// group or recipient changed), wrong token, none.
	for _, n := range []struct {
		name, path, sig string
	}{
		{"wrong token", path("gather", 1), twilio.Signature("other-token", publicURL+path("gather", 1), gather)},
		{"recipient changed", path("gather", 0), twilio.Signature(twilioToken, publicURL+path("gather", 1), gather)},
		{"kind changed", path("status", 1), twilio.Signature(twilioToken, publicURL+path("gather", 1), gather)},
		{"missing", path("gather", 1), ""},
	} {
		if code, body := post(n.path, gather, n.sig); code != 401 || errorOf(t, []byte(body)).Code != "bad_signature" {
			t.Errorf("%s: %d %s, want 401", n.name, code, body)
		}
	}
	// Signed, but the number is not that recipient's, or the digit is no option.
	other := form("in-progress", "1", "+15550100009")
	if code, _ := post(path("gather", 1), other, twilio.Signature(twilioToken, publicURL+path("gather", 1), other)); code != 200 {
		t.Errorf("another number: %d", code)
	}
	nine := form("in-progress", "9", "+15550100002")
	if code, body := post(path("gather", 1), nine, twilio.Signature(twilioToken, publicURL+path("gather", 1), nine)); code != 200 ||
		!strings.Contains(body, "not one of the choices") {
		t.Errorf("digit 9: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("refused callbacks were ingested: %+v", got[3:])
	}
}

// Telnyx voice callbacks: the signed body and timestamp (a stale one is
// refused), and crewcast's token over the query, since Telnyx does not
// sign the URL: a signed body posted to another group's or recipient's
// URL is refused.
func TestWebhookTelnyxVoice(t *testing.T) {
	voiceKey := []byte("voice-callback-key")
	h := newHookEnv(t, func(c *Config) { c.PublicURL = publicURL; c.VoiceKey = voiceKey })
	var mu sync.Mutex
	var got []crewcast.Event
	h.svc.IngestFunc = func(_ context.Context, evs []crewcast.Event) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, evs...)
		return true, nil
	}
	id, _, err := h.mini.create(context.Background(), group.Request{From: "+15550100000", Text: "Crew call",
		To: []string{"+15550100001", "+15550100002"}, Responses: []group.Option{{Key: "1", Label: "Coming"}}}, tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pathFor := func(q url.Values, token bool) string {
		if token {
			q.Set("t", tracker.VoiceCallbackToken(voiceKey, q))
		}
		return "/webhooks/telnyx/voice?" + q.Encode()
	}
	good := pathFor(url.Values{"g": {id}, "k": {"gather"}, "r": {"1"}, "s": {"f1-1"}}, true)
	body := []byte(url.Values{"CallSid": {"v3:abc"}, "CallStatus": {"in-progress"}, "Digits": {"1"}, "From": {"+15550100000"}, "To": {"+15550100002"}}.Encode())
	post := func(p string, hdr http.Header) (int, string) {
		req, _ := http.NewRequest("POST", h.srv.URL+p, strings.NewReader(string(body)))
		req.Header = hdr
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, b := h.send(req)
		return resp.StatusCode, string(b)
	}
	if code, b := post(good, telnyx.Sign(h.priv, h.clock.Now(), body)); code != 200 || !strings.Contains(b, "recorded: Coming") {
		t.Fatalf("good = %d %s", code, b)
	}
	moved := url.Values{"g": {id}, "k": {"gather"}, "r": {"0"}, "s": {"f1-1"}, "t": {tracker.VoiceCallbackToken(voiceKey, url.Values{"g": {id}, "k": {"gather"}, "r": {"1"}, "s": {"f1-1"}})}}
	for name, tc := range map[string]struct {
		path string
		hdr  http.Header
	}{
		"stale":       {good, telnyx.Sign(h.priv, h.clock.Now().Add(-time.Hour), body)},
		"no token":    {pathFor(url.Values{"g": {id}, "k": {"gather"}, "r": {"1"}, "s": {"f1-1"}}, false), telnyx.Sign(h.priv, h.clock.Now(), body)},
		"token moved": {"/webhooks/telnyx/voice?" + moved.Encode(), telnyx.Sign(h.priv, h.clock.Now(), body)},
		"unsigned":    {good, http.Header{}},
	} {
		if code, b := post(tc.path, tc.hdr); code != 401 {
			t.Errorf("%s: %d %s, want 401", name, code, b)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0].EventID != "telnyx:v3:abc:gather" || got[0].Text != "1" || got[0].From != "+15550100002" {
		t.Fatalf("ingested %+v", got)
	}
}
