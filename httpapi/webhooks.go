package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/crewcast/crewcast"
)

// emptyTwiML tells Twilio not to send an automatic reply to an inbound
// message.
const emptyTwiML = `<?xml version="1.0" encoding="UTF-8"?><Response/>`

func (a *api) webhookTelnyx(w http.ResponseWriter, r *http.Request) error {
	return a.webhook(w, r, "telnyx")
}

func (a *api) webhookTwilio(w http.ResponseWriter, r *http.Request) error {
	return a.webhook(w, r, "twilio")
}

// webhookURL rebuilds the URL the provider posted to: the configured
// public URL plus the request URI, or the request's own scheme and host.
func (a *api) webhookURL(r *http.Request) string {
	if a.publicURL != "" {
		return a.publicURL + r.URL.RequestURI()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.RequestURI()
}

// webhook verifies, parses and durably ingests one provider webhook, and
// answers 2xx only once Service.Ingest has made it durable.
func (a *api) webhook(w http.ResponseWriter, r *http.Request, name string) error {
	p, ok := a.cfg.Providers[name]
	if !ok {
		return newError(http.StatusNotFound, codeNotFound, "provider "+name+" is not configured")
	}
	count := func(kind, result string) { a.metrics.WebhookReceived(name, kind, result) }
	// The limit stops reading at MaxWebhookBytes+1, so an oversized body
	// costs bounded memory; the server then closes the connection rather
	// than drain the rest.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.cfg.MaxWebhookBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			count("none", "too_large")
			return err
		}
		count("none", "error")
		return newError(http.StatusBadRequest, codeMalformed, "could not read the request body")
	}
	events, err := p.ParseWebhook(crewcast.WebhookRequest{URL: a.webhookURL(r), Header: r.Header.Clone(), Body: body})
	switch {
	case errors.Is(err, crewcast.ErrBadSignature):
		count("none", "bad_signature")
		a.metrics.SignatureFailure(name)
		return newError(http.StatusUnauthorized, codeBadSignature, "webhook signature invalid")
	case errors.Is(err, crewcast.ErrMalformed):
		count("none", "malformed")
		return newError(http.StatusBadRequest, codeMalformed, "webhook body malformed")
	case err != nil:
		count("none", "error")
		return err
	}
	if len(events) == 0 {
		// Verified, but nothing crewcast tracks. Empty TwiML is a valid
		// answer to any Twilio webhook, so it is the safe one here.
		count("none", "ignored")
		return a.webhookOK(w, name, true)
	}
	kind := string(events[0].Kind)
	isNew, err := a.svc.Ingest(r.Context(), events)
	if err != nil {
		count(kind, "error")
		return err // never 2xx for what is not durable; the provider retries
	}
	if isNew {
		count(kind, "new")
	} else {
		count(kind, "duplicate")
	}
	twiml := false
	for _, e := range events {
		twiml = twiml || e.Kind == crewcast.KindInbound
	}
	return a.webhookOK(w, name, twiml)
}

// webhookOK answers a provider the way it expects: Telnyx an empty JSON
// object; Twilio empty TwiML for messages (so no auto-reply goes out)
// and 204 for status callbacks.
func (a *api) webhookOK(w http.ResponseWriter, name string, twiml bool) error {
	if name != "twilio" {
		writeJSON(w, http.StatusOK, struct{}{})
		return nil
	}
	if !twiml {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, emptyTwiML)
	return nil
}
