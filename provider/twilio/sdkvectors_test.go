package twilio

import (
	"net/url"
	"testing"

	"github.com/crewcast/crewcast"
)

// Vectors computed with the official Twilio Node SDK (twilio 5.13.1:
// getExpectedTwilioSignature and validateRequest accept them; its TwiML
// builder, VoiceResponse().gather({input:"dtmf", numDigits:1, timeout:8,
// method:"POST", action}).say(text), then say(goodbye), renders exactly
// sdkGatherTwiML) on crewcast's own voice callback URLs. Verify and the
// SDK agree on them; GatherTwiML renders what the SDK's builder renders.
const (
	sdkToken       = "12345"
	sdkGatherURL   = "https://crew.example.com/webhooks/twilio/voice?g=grp_abc&k=gather&r=1&s=f1-1&t=tok"
	sdkGatherSig   = "C98y9YwUGrfT40LHxCtP9IrqNWU="
	sdkStatusURL   = "https://crew.example.com/webhooks/twilio/voice?g=grp_abc&k=status&r=1&s=f1-1&t=tok"
	sdkStatusSig   = "2sQMWAewPXoWv6TRDScQdVOOKlw="
	sdkGatherText  = "Crew call 7am & lunch. Press 1 for Coming."
	sdkAction      = "https://crew.example.com/webhooks/twilio/voice?g=g1&k=gather&r=0&s=f0-2"
	sdkGatherTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response><Gather input="dtmf" numDigits="1" timeout="8" method="POST" ` +
		`action="https://crew.example.com/webhooks/twilio/voice?g=g1&amp;k=gather&amp;r=0&amp;s=f0-2"><Say>Crew call 7am &amp; lunch. ` +
		`Press 1 for Coming.</Say></Gather><Say>No answer was given. Goodbye.</Say></Response>`
	sdkSayTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response><Say>Thank you.</Say><Hangup/></Response>`
)

func TestVoiceAgreesWithNodeSDK(t *testing.T) {
	gather := url.Values{"AccountSid": {"AC00000000000000000000000000000000"}, "ApiVersion": {"2010-04-01"}, "CallSid": {"CA11"},
		"CallStatus": {"in-progress"}, "Digits": {"2"}, "Direction": {"outbound-api"}, "From": {"+15550100000"}, "To": {"+15550100002"}}
	status := url.Values{"AccountSid": {"AC00000000000000000000000000000000"}, "CallSid": {"CA11"}, "CallStatus": {"no-answer"},
		"From": {"+15550100000"}, "To": {"+15550100002"}}
	c, err := New(Config{AccountSID: testSID, AuthToken: sdkToken})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		url, sig string
		form     url.Values
	}{{sdkGatherURL, sdkGatherSig, gather}, {sdkStatusURL, sdkStatusSig, status}} {
		if got := Signature(sdkToken, v.url, v.form); got != v.sig {
			t.Errorf("Signature(%s) = %s, the SDK's %s", v.url, got, v.sig)
		}
		if _, err := c.ParseVoiceWebhook(crewcast.WebhookRequest{URL: v.url, Header: sigHeader(v.sig), Body: []byte(v.form.Encode())}); err != nil {
			t.Errorf("ParseVoiceWebhook refuses the SDK's signature for %s: %v", v.url, err)
		}
	}
	if got := GatherTwiML(sdkGatherText, sdkAction); got != sdkGatherTwiML {
		t.Errorf("GatherTwiML = %s\nthe SDK's builder: %s", got, sdkGatherTwiML)
	}
	if got := SayTwiML("Thank you."); got != sdkSayTwiML {
		t.Errorf("SayTwiML = %s\nthe SDK's builder: %s", got, sdkSayTwiML)
	}
}
