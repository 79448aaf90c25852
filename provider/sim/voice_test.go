package sim

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
)

// A call placed with the Twilio adapter is played as scripted per number:
// a digit is posted to the gather's action, then completed to the status
// callback; no answer, busy and machine end with their status; every
// callback verifies with the adapter's Verify; the calls are listed and
// in the ledger; a call replayed with its idempotency token is one call.
func TestCallsAsScripted(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{})
	tw, err := twilio.New(twilio.Config{AccountSID: c.keys.TwilioAccountSID, AuthToken: c.keys.TwilioAuthToken, APIBase: c.base,
		SendIdempotencyKey: true})
	if err != nil {
		t.Fatal(err)
	}
	carol, dave := "+15550100003", "+15550100004"
	for to, a := range map[string]string{alice: "1", bob: "none", carol: "busy", dave: "machine"} {
		if r := c.simJSON(http.MethodPost, "/sim/voice/script", map[string]string{"to": to, "answer": a}); r.status != http.StatusNoContent {
			t.Fatalf("script: %d %s", r.status, r.body)
		}
	}
	if r := c.simJSON(http.MethodPost, "/sim/voice/script", map[string]string{"to": alice, "answer": "maybe"}); r.status != http.StatusUnprocessableEntity {
		t.Fatalf("a bad script: %d", r.status)
	}
	for _, to := range []string{alice, bob, carol, dave} {
		_, err := tw.PlaceCall(context.Background(), twilio.CallRequest{From: ourNumber, To: to, MachineDetection: true,
			TwiML:          twilio.GatherTwiML("Crew call. Press 1 for Coming.", rc.url("/voice?k=gather&to="+url.QueryEscape(to))),
			StatusCallback: rc.url("/voice?k=status"), IdempotencyKey: "key-" + to})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.PlaceCall(context.Background(), twilio.CallRequest{From: ourNumber, To: alice, TwiML: "<Response/>",
		IdempotencyKey: "key-" + alice}); err != nil {
		t.Fatal(err)
	}
	hooks := rc.collect(t, 5)
	rc.drained(t, s)
	got := map[string]string{} // to + kind → status/digits/answered-by
	for _, h := range hooks {
		form, err := url.ParseQuery(string(h.body))
		if err != nil {
			t.Fatal(err)
		}
		if err := twilio.Verify(c.keys.TwilioAuthToken, h.url, h.header, form); err != nil {
			t.Fatalf("callback %s does not verify: %v", h.url, err)
		}
		u, _ := url.Parse(h.url)
		got[form.Get("To")+" "+u.Query().Get("k")] = form.Get("CallStatus") + "/" + form.Get("Digits") + "/" + form.Get("AnsweredBy")
	}
	want := map[string]string{alice + " gather": "in-progress/1/human", alice + " status": "completed//human",
		bob + " status": "no-answer//", carol + " status": "busy//", dave + " status": "completed//machine_start"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	calls := s.Calls()
	if len(calls) != 4 || calls[0].To != alice || calls[0].Digits != "1" || calls[0].Say != "Crew call. Press 1 for Coming." ||
		calls[1].Outcome != "no_answer" || calls[2].Outcome != "busy" || calls[3].Outcome != "machine" {
		t.Fatalf("calls %+v", calls)
	}
	var listed struct{ Calls []Call }
	c.simJSON(http.MethodGet, "/sim/calls", nil).decode(t, &listed)
	if len(listed.Calls) != 4 {
		t.Fatalf("GET /sim/calls: %+v", listed)
	}
	if l := c.ledger(); len(l) != 4 || l[0].Channel != "voice" || l[0].To != alice {
		t.Fatalf("ledger %+v", l)
	}
}

// A TeXML call placed with the Telnyx adapter: the gather and the status
// are forms signed as Telnyx signs (Ed25519 over "timestamp|body").
func TestTelnyxCallAsScripted(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{})
	tx, err := telnyx.New(telnyx.Config{APIKey: c.keys.TelnyxAPIKey, PublicKey: c.keys.TelnyxPublicKey, APIBase: c.base, TeXMLConnectionID: "1",
		Tolerance: 1 << 62}) // the test simulator runs on a fixed clock
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetVoiceScript(alice, "2"); err != nil {
		t.Fatal(err)
	}
	sid, err := tx.PlaceCall(context.Background(), telnyx.CallRequest{From: ourNumber, To: alice, MachineDetection: true,
		TeXML: twilio.GatherTwiML("Crew call.", rc.url("/voice?k=gather")), StatusCallback: rc.url("/voice?k=status")})
	if err != nil || !strings.HasPrefix(sid, "v3:") {
		t.Fatalf("PlaceCall = %q, %v", sid, err)
	}
	hooks := rc.collect(t, 2)
	rc.drained(t, s)
	for i, want := range []string{"in-progress/2", "completed/"} {
		ev, err := tx.ParseVoiceWebhook(crewcast.WebhookRequest{URL: hooks[i].url, Header: hooks[i].header, Body: hooks[i].body})
		if err != nil || ev.CallSID != sid || ev.CallStatus+"/"+ev.Digits != want {
			t.Fatalf("callback %d = %+v, %v; want %s", i, ev, err, want)
		}
	}
	if l := s.Ledger(); len(l) != 1 || l[0].Provider != "telnyx" || l[0].Channel != "voice" {
		t.Fatalf("ledger %+v", l)
	}
}
