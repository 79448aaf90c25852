package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/provider/telnyx"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/tracker"
)

// The voice channel of follow-up ladders (docs/design.md §17): a voice
// step is a call through the provider (Twilio's Calls API; Telnyx's TeXML
// calls, with CREWCAST_TELNYX_TEXML_CONNECTION_ID) whose TwiML/TeXML
// speaks the step's text and the options and gathers one digit; its
// gather and status callbacks come back to /webhooks/{provider}/voice,
// signed by the provider, on a URL that names the group, the recipient
// and the step and carries crewcast's own token over them.

// voiceKeyName is the server key that signs voice callback URLs.
const voiceKeyName = "voice_links"

// caller is the tracker's Caller for the provider that can place calls
// (Twilio; Telnyx with a TeXML connection), and the key its callback URLs
// are signed with; nil when none can (voice steps are then refused).
func (s *Server) caller(ctx context.Context, providers map[string]crewcast.Provider, public string) (tracker.Caller, []byte, error) {
	base := callerBase{public: strings.TrimRight(public, "/")}
	var place func(ctx context.Context, st tracker.CallStep, texml, status string) (string, error)
	switch {
	case public == "":
		return nil, nil, nil
	case providers[ProviderTwilio] != nil:
		tw, ok := providers[ProviderTwilio].(*twilio.Client)
		if !ok {
			return nil, nil, nil
		}
		base.path = "/webhooks/twilio/voice"
		place = func(ctx context.Context, st tracker.CallStep, twiml, status string) (string, error) {
			return tw.PlaceCall(ctx, twilio.CallRequest{From: st.From, To: st.To, TwiML: twiml, StatusCallback: status,
				MachineDetection: true, Timeout: 30, IdempotencyKey: group.ClaimKey(st.GroupID, st.SendID)})
		}
	case providers[ProviderTelnyx] != nil:
		tx, ok := providers[ProviderTelnyx].(*telnyx.Client)
		if !ok || !tx.CanCall() {
			return nil, nil, nil
		}
		base.path = "/webhooks/telnyx/voice"
		place = func(ctx context.Context, st tracker.CallStep, texml, status string) (string, error) {
			return tx.PlaceCall(ctx, telnyx.CallRequest{From: st.From, To: st.To, TeXML: texml, StatusCallback: status,
				MachineDetection: true, Timeout: 30, IdempotencyKey: group.ClaimKey(st.GroupID, st.SendID)})
		}
	default:
		return nil, nil, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, err
	}
	key, err := s.st.EnsureServerKey(ctx, voiceKeyName, key)
	if err != nil {
		return nil, nil, fmt.Errorf("voice callback key: %w", err)
	}
	base.key = key
	return providerCaller{callerBase: base, place: place}, key, nil
}

// callerBase builds a call's callback URLs.
type callerBase struct {
	public, path string
	key          []byte
}

// callbackURL is one of a call's callbacks: the query names the group,
// the callback, the recipient and the step, and carries crewcast's token
// over them.
func (b callerBase) callbackURL(st tracker.CallStep, kind string) string {
	q := url.Values{"g": {st.GroupID}, "k": {kind}, "r": {strconv.Itoa(st.Recipient)}, "s": {st.SendID}}
	q.Set("t", tracker.VoiceCallbackToken(b.key, q))
	return b.public + b.path + "?" + q.Encode()
}

type providerCaller struct {
	callerBase
	place func(ctx context.Context, st tracker.CallStep, texml, status string) (string, error)
}

func (c providerCaller) PlaceCall(ctx context.Context, st tracker.CallStep) (string, error) {
	return c.place(ctx, st, twilio.GatherTwiML(CallScript(st.Text, st.Options), c.callbackURL(st, "gather")), c.callbackURL(st, "status"))
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
