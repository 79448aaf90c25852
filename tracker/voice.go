package tracker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/group"
)

// Voice steps of follow-up ladders (docs/design.md §17). A voice step is
// claimed like any follow-up (the claim committed before the call is
// placed), then placed through the Caller in the same send pool behind the
// same guard; a crash between claim and outcome leaves it uncertain
// (unconfirmed), never placed again. The call's callbacks come back as
// events delivered straight to the group: a digit pressed is an answer
// (VoiceAnswer, applied like a text reply), the call's end is journaled
// (CallEndedEvent → recipient.call_ended); neither changes the ladder
// otherwise.

// Caller places the voice call of a ladder step (the server wires the
// provider's). Errors are classified like a provider's send errors
// (*crewcast.SendError), unclassified meaning uncertain.
type Caller interface {
	PlaceCall(ctx context.Context, c CallStep) (callID string, err error)
}

// CallStep is one voice step to one person.
type CallStep struct {
	GroupID string
	SendID  string // the claim's send id: with GroupID, the call's identity
	// Recipient is the person's index in the roster (the callbacks name it).
	Recipient int
	From, To  string // the group's number, the person's
	Text      string
	Options   []group.Option
}

// VoiceProvider names the events voice callbacks make.
const VoiceProvider = "voice"

// callJob is the send job of a claimed voice step.
func (a *groupActor) callJob(s group.FollowupSend) sendJob {
	g := a.g
	r := g.Recipients[s.Index]
	cs := CallStep{GroupID: a.key, SendID: s.ID, Recipient: s.Index, From: g.From, To: r.Number,
		Text: g.FollowupTextFor(r), Options: g.Responses}
	caller := a.env.cfg.Caller
	via := func(ctx context.Context) (crewcast.SendResult, error) {
		id, err := caller.PlaceCall(ctx, cs)
		if err != nil {
			return crewcast.SendResult{}, err
		}
		return crewcast.SendResult{MessageID: "call:" + id}, nil
	}
	return sendJob{groupID: a.key, send: s.Send(), req: crewcast.SendRequest{To: []string{r.Number}}, via: via}
}

// VoiceAnswer is the inbound event of a digit pressed on a ladder's call:
// the option's key as the reply text, from the person's number to the
// group's, delivered to that group (its id in MessageID). eventID makes
// replays of the same callback one event (the inbox dedupes on it).
func VoiceAnswer(groupID, eventID, number, groupFrom, option string, at time.Time) crewcast.Event {
	return crewcast.Event{Provider: VoiceProvider, EventID: eventID, Kind: crewcast.KindInbound, MessageID: groupID,
		From: number, To: groupFrom, Text: option, OccurredAt: at}
}

// CallEndedEvent is the event of a call's end: outcome (answered,
// no_answer, busy, machine, failed) and the digits pressed, for the person
// at number, delivered to the group.
func CallEndedEvent(groupID, eventID, number, groupFrom, outcome, digits string, at time.Time) crewcast.Event {
	return crewcast.Event{Provider: VoiceProvider, EventID: eventID, Kind: crewcast.KindCallEnded, MessageID: groupID,
		From: groupFrom, To: number, ProviderStatus: outcome, Text: digits, OccurredAt: at}
}

// VoiceCallbackToken signs what a voice callback URL's query names (the
// group g, the callback k, the recipient r, the step s) with key: a
// provider whose signature does not cover the URL (Telnyx) could
// otherwise have a signed body replayed to another group's URL. It goes
// in the query as t.
func VoiceCallbackToken(key []byte, q url.Values) string {
	h := hmac.New(sha256.New, key)
	for _, k := range []string{"g", "k", "r", "s"} {
		h.Write([]byte(k + "=" + q.Get(k) + "\x00"))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// VoiceCallbackTokenOK reports whether q's t is VoiceCallbackToken's for q.
func VoiceCallbackTokenOK(key []byte, q url.Values) bool {
	want := VoiceCallbackToken(key, q)
	return len(key) > 0 && hmac.Equal([]byte(q.Get("t")), []byte(want))
}
