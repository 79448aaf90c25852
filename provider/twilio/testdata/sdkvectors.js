// Regenerates the vectors of sdkvectors_test.go with the official Twilio
// Node SDK, which is not a dependency of this repository. In a scratch
// directory: npm install twilio@5.13.1, then node path/to/sdkvectors.js.
const twilio = require("twilio");
const token = "12345";
const gatherURL = "https://crew.example.com/webhooks/twilio/voice?g=grp_abc&k=gather&r=1&s=f1-1&t=tok";
const gather = { AccountSid: "AC00000000000000000000000000000000", ApiVersion: "2010-04-01", CallSid: "CA11",
  CallStatus: "in-progress", Digits: "2", Direction: "outbound-api", From: "+15550100000", To: "+15550100002" };
const statusURL = "https://crew.example.com/webhooks/twilio/voice?g=grp_abc&k=status&r=1&s=f1-1&t=tok";
const status = { AccountSid: "AC00000000000000000000000000000000", CallSid: "CA11", CallStatus: "no-answer",
  From: "+15550100000", To: "+15550100002" };
for (const [u, p] of [[gatherURL, gather], [statusURL, status]]) {
  const sig = twilio.getExpectedTwilioSignature(token, u, p);
  console.log(u, sig, "validateRequest:", twilio.validateRequest(token, sig, u, p));
}
const r = new twilio.twiml.VoiceResponse();
r.gather({ input: "dtmf", numDigits: 1, timeout: 8, method: "POST",
  action: "https://crew.example.com/webhooks/twilio/voice?g=g1&k=gather&r=0&s=f0-2" })
  .say("Crew call 7am & lunch. Press 1 for Coming.");
r.say("No answer was given. Goodbye.");
console.log(r.toString());
const s = new twilio.twiml.VoiceResponse();
s.say("Thank you.");
s.hangup();
console.log(s.toString());
