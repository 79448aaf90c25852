package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/twilio"
	"github.com/crewcast/crewcast/tracker"
)

// Voice callbacks (docs/design.md §17): a ladder's call posts its gather
// (the digit pressed) and its final status to POST /webhooks/twilio/voice
// (or /webhooks/telnyx/voice),
// with k=gather or k=status and the group (g), the recipient's index (r)
// and the step (s) in the query. The query is part of the URL Twilio
// signs, so it is trusted only once X-Twilio-Signature verifies (the
// provider package's Verify, as for messaging webhooks); the person's
// number in the form must also be that recipient's. A replayed callback
// is the same event (the inbox dedupes on the CallSid), so it changes
// nothing.

// voiceVerifier is a provider that verifies voice callbacks.
type voiceVerifier interface {
	ParseVoiceWebhook(crewcast.WebhookRequest) (crewcast.CallEvent, error)
}

func (a *api) webhookTwilioVoice(w http.ResponseWriter, r *http.Request) error {
	return a.webhookVoice(w, r, "twilio")
}

// webhookTelnyxVoice is POST /webhooks/telnyx/voice: the same callbacks
// from a TeXML call. Telnyx signs the body and a timestamp but not the
// URL, so the query must also carry crewcast's token over it (t,
// tracker.VoiceCallbackToken with Config.VoiceKey).
func (a *api) webhookTelnyxVoice(w http.ResponseWriter, r *http.Request) error {
	return a.webhookVoice(w, r, "telnyx")
}

func (a *api) webhookVoice(w http.ResponseWriter, r *http.Request, name string) error {
	p, ok := a.cfg.Providers[name].(voiceVerifier)
	if !ok {
		return newError(http.StatusNotFound, codeNotFound, "provider "+name+" is not configured for voice")
	}
	count := func(result string) { a.metrics.WebhookReceived(name, "voice", result) }
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxWebhookBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			count("too_large")
			return err
		}
		count("error")
		return newError(http.StatusBadRequest, codeMalformed, "could not read the request body")
	}
	ev, err := p.ParseVoiceWebhook(crewcast.WebhookRequest{URL: a.webhookURL(r), Header: r.Header.Clone(), Body: body})
	switch {
	case errors.Is(err, crewcast.ErrBadSignature):
		count("bad_signature")
		a.metrics.SignatureFailure(name)
		return newError(http.StatusUnauthorized, codeBadSignature, "webhook signature invalid")
	case errors.Is(err, crewcast.ErrMalformed):
		count("malformed")
		return newError(http.StatusBadRequest, codeMalformed, "webhook body malformed")
	case err != nil:
		count("error")
		return err
	}
	say := func(text string) error {
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if text == "" {
			_, _ = io.WriteString(w, emptyTwiML)
		} else {
			_, _ = io.WriteString(w, twilio.SayTwiML(text))
		}
		return nil
	}
	gid, kind := ev.Query.Get("g"), ev.Query.Get("k")
	idx, err := strconv.Atoi(ev.Query.Get("r"))
	if name == "telnyx" && !tracker.VoiceCallbackTokenOK(a.cfg.VoiceKey, ev.Query) {
		count("bad_signature")
		a.metrics.SignatureFailure(name)
		return newError(http.StatusUnauthorized, codeBadSignature, "webhook signature invalid")
	}
	if gid == "" || err != nil || idx < 0 || (kind != "gather" && kind != "status") {
		count("ignored") // signed, but not a ladder call's callback
		return say("")
	}
	g, found, err := tracker.LoadGroup(r.Context(), a.store, gid)
	if err != nil {
		count("error")
		return err
	}
	if !found || idx >= len(g.Recipients) || g.Recipients[idx].Number != ev.To {
		count("ignored")
		return say("")
	}
	number := g.Recipients[idx].Number
	var event crewcast.Event
	reply := ""
	switch kind {
	case "gather":
		d, err := strconv.Atoi(ev.Digits)
		switch {
		case g.Status == crewcast.GroupCanceled || g.QuorumMet():
			count("ignored")
			return say("This question is closed. Goodbye.")
		case err != nil || len(ev.Digits) != 1 || d < 1 || d > len(g.Responses):
			count("ignored")
			return say("That is not one of the choices. You can still answer by text. Goodbye.")
		}
		o := g.Responses[d-1]
		event = tracker.VoiceAnswer(gid, name+":"+ev.CallSID+":gather", number, g.From, o.Key, a.now())
		reply = "Thank you. Your answer was recorded: " + o.Label + ". Goodbye."
	default:
		outcome, final := ev.Outcome()
		if !final {
			count("ignored")
			return say("")
		}
		event = tracker.CallEndedEvent(gid, name+":"+ev.CallSID+":ended", number, g.From, outcome, "", a.now())
	}
	isNew, err := a.svc.Ingest(r.Context(), []crewcast.Event{event})
	if err != nil {
		count("error")
		return err // never 2xx for what is not durable; Twilio retries the status callback
	}
	if isNew {
		count("new")
	} else {
		count("duplicate")
	}
	return say(reply)
}
