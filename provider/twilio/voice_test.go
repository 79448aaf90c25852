package twilio

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/crewcast/crewcast"
)

// PlaceCall posts the call form (To, From, inline TwiML, the status
// callback, machine detection) and returns the CallSid.
func TestPlaceCallRequest(t *testing.T) {
	api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"sid":"CA0123456789abcdef0123456789abcdef","status":"queued","to":"+15550100001"}`))
	})
	c := newTestClient(t, api.srv.URL, nil)
	twiml := GatherTwiML("Crew call 7am & lunch. Press 1 for Coming.", "https://crew.example.com/webhooks/twilio/voice?g=g1&k=gather&r=0&s=f0-2")
	sid, err := c.PlaceCall(context.Background(), CallRequest{From: "+15550100000", To: "+15550100001", TwiML: twiml,
		StatusCallback: "https://crew.example.com/webhooks/twilio/voice?g=g1&k=status&r=0&s=f0-2", MachineDetection: true, Timeout: 30})
	if err != nil || sid != "CA0123456789abcdef0123456789abcdef" {
		t.Fatalf("PlaceCall = %q, %v", sid, err)
	}
	reqs := api.requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/2010-04-01/Accounts/"+testSID+"/Calls.json" {
		t.Fatalf("requests %+v", reqs)
	}
	form, err := url.ParseQuery(string(reqs[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	if form.Get("To") != "+15550100001" || form.Get("From") != "+15550100000" || form.Get("Twiml") != twiml ||
		form.Get("MachineDetection") != "Enable" || form.Get("Timeout") != "30" || form.Get("StatusCallbackMethod") != "POST" ||
		!strings.Contains(form.Get("StatusCallback"), "k=status") {
		t.Fatalf("form %v", form)
	}
	for _, want := range []string{`<Gather input="dtmf" numDigits="1"`, `action="https://crew.example.com/webhooks/twilio/voice?g=g1&amp;k=gather&amp;r=0&amp;s=f0-2"`,
		`<Say>Crew call 7am &amp; lunch. Press 1 for Coming.</Say></Gather>`} {
		if !strings.Contains(twiml, want) {
			t.Errorf("TwiML %s lacks %s", twiml, want)
		}
	}
}

// A refusal before acceptance is not sent; a 5xx is uncertain.
func TestPlaceCallErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		class  crewcast.ErrorClass
	}{{400, crewcast.ClassNotSent}, {500, crewcast.ClassUncertain}} {
		api := newFakeAPI(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(`{"code":21211,"message":"invalid To"}`))
		})
		c := newTestClient(t, api.srv.URL, nil)
		_, err := c.PlaceCall(context.Background(), CallRequest{From: "+15550100000", To: "+15550100001", TwiML: "<Response/>"})
		var se *crewcast.SendError
		if !errors.As(err, &se) || (tc.status == 500 && se.Class != tc.class) || (tc.status == 400 && se.Class == crewcast.ClassUncertain) {
			t.Errorf("%d: %v", tc.status, err)
		}
	}
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	if _, err := c.PlaceCall(context.Background(), CallRequest{From: "+15550100000", To: "+15550100001"}); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("no TwiML: %v", err)
	}
}

// The published signature vector (docs/providers.md; twilio-go's and
// twilio-node's validateRequest tests) is a voice callback: ParseVoiceWebhook
// accepts it as signed and reads it; altered, it is refused.
func TestParseVoiceWebhookVector(t *testing.T) {
	c, err := New(Config{AccountSID: testSID, AuthToken: vectorToken})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(vectorParams.Encode())
	ev, err := c.ParseVoiceWebhook(crewcast.WebhookRequest{URL: vectorURL, Header: sigHeader(vectorSig), Body: body})
	if err != nil || ev.CallSID != "CA1234567890ABCDE" || ev.Digits != "1234" || ev.To != "+18005551212" || ev.Query.Get("foo") != "1" {
		t.Fatalf("ParseVoiceWebhook = %+v, %v", ev, err)
	}
	for name, req := range map[string]crewcast.WebhookRequest{
		"forged":         {URL: vectorURL, Header: sigHeader(vectorSigWithPort[:27] + "A"), Body: body},
		"query changed":  {URL: strings.Replace(vectorURL, "foo=1", "foo=2", 1), Header: sigHeader(vectorSig), Body: body},
		"digit changed":  {URL: vectorURL, Header: sigHeader(vectorSig), Body: []byte(strings.Replace(string(body), "Digits=1234", "Digits=1", 1))},
		"no signature":   {URL: vectorURL, Body: body},
		"not a form":     {URL: vectorURL, Header: sigHeader(vectorSig), Body: []byte("%zz")},
		"no URL to sign": {Header: sigHeader(vectorSig), Body: body},
	} {
		if _, err := c.ParseVoiceWebhook(req); !errors.Is(err, crewcast.ErrBadSignature) {
			t.Errorf("%s: %v, want a bad signature", name, err)
		}
	}
	twice := url.Values{"CallSid": {"CA1"}, "Digits": {"1", "2"}}
	if _, err := c.ParseVoiceWebhook(crewcast.WebhookRequest{URL: vectorURL, Header: sigHeader(Signature(vectorToken, vectorURL, twice)),
		Body: []byte(twice.Encode())}); !errors.Is(err, crewcast.ErrMalformed) {
		t.Errorf("Digits twice: %v, want malformed", err)
	}
}

func TestCallOutcome(t *testing.T) {
	for _, tc := range []struct{ status, by, want string }{
		{"completed", "human", crewcast.CallAnswered}, {"completed", "", crewcast.CallAnswered}, {"completed", "machine_start", crewcast.CallMachine},
		{"completed", "machine_end_beep", crewcast.CallMachine}, {"no-answer", "", crewcast.CallNoAnswer}, {"canceled", "", crewcast.CallNoAnswer},
		{"busy", "", crewcast.CallBusy}, {"failed", "", crewcast.CallFailed},
	} {
		if got, ok := (crewcast.CallEvent{CallStatus: tc.status, AnsweredBy: tc.by}).Outcome(); !ok || got != tc.want {
			t.Errorf("%s/%s = %s %v, want %s", tc.status, tc.by, got, ok, tc.want)
		}
	}
	for _, s := range []string{"queued", "ringing", "in-progress", ""} {
		if _, ok := (crewcast.CallEvent{CallStatus: s}).Outcome(); ok {
			t.Errorf("%q is final", s)
		}
	}
}
