package server

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/tracker"
)

// The voice channel of follow-up ladders (docs/design.md §17): with the
// Twilio provider, a voice step is a call through the Calls API whose TwiML
// speaks the step's text and the options and gathers one digit; its
// gather and status callbacks come back to /webhooks/twilio/voice, signed
// by Twilio over a URL that names the group, the recipient and the step.

// caller is the tracker's Caller for the providers that can place calls;
// nil when none can (voice steps are then refused).
func caller(providers map[string]crewcast.Provider, public string) tracker.Caller {
	if tw, ok := providers[ProviderTwilio].(*twilio.Client); ok && public != "" {
		return twilioCaller{c: tw, public: strings.TrimRight(public, "/")}
	}
	return nil
}

type twilioCaller struct {
	c      *twilio.Client
	public string
}

// callbackURL is the signed-over URL of one of a call's callbacks.
func (tc twilioCaller) callbackURL(st tracker.CallStep, kind string) string {
	q := url.Values{"g": {st.GroupID}, "k": {kind}, "r": {strconv.Itoa(st.Recipient)}, "s": {st.SendID}}
	return tc.public + "/webhooks/twilio/voice?" + q.Encode()
}

func (tc twilioCaller) PlaceCall(ctx context.Context, st tracker.CallStep) (string, error) {
	return tc.c.PlaceCall(ctx, twilio.CallRequest{From: st.From, To: st.To,
		TwiML:          twilio.GatherTwiML(CallScript(st.Text, st.Options), tc.callbackURL(st, "gather")),
		StatusCallback: tc.callbackURL(st, "status"), MachineDetection: true, Timeout: 30,
		IdempotencyKey: group.ClaimKey(st.GroupID, st.SendID)})
}

// CallScript is what a call says: the text (without its reply hint),
// then "Press 1 for Coming, press 2 for Can't make it." (one digit each:
// the first nine options).
func CallScript(text string, options []group.Option) string {
	// The text's reply hint ("Reply 1 Coming, ...") is for texts: the
	// call says which key to press instead.
	if hint := group.Hint(options); hint != "" {
		text = strings.TrimSuffix(strings.TrimSpace(text), hint)
	}
	text = strings.TrimSpace(text)
	if text != "" && len(options) > 0 && !strings.ContainsAny(text[len(text)-1:], ".!?") {
		text += "."
	}
	var b strings.Builder
	b.WriteString(text)
	for i, o := range options {
		if i == 9 {
			break
		}
		if i == 0 {
			b.WriteString(" Press ")
		} else {
			b.WriteString(", press ")
		}
		b.WriteString(strconv.Itoa(i+1) + " for " + o.Label)
	}
	if len(options) > 0 {
		b.WriteString(".")
	}
	return b.String()
}
