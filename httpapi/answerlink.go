package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/email"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

// Answer links (docs/design.md §17): an email step's mail carries one link
// per option to /a/{token}. A GET only shows the choice and a button (mail
// scanners fetch links: they must not answer for people); the POST the
// button sends records the answer, as a text reply would be. The token is
// verified (HMAC, Config.AnswerKey) before anything is read; it names the
// group, the recipient's index and the option, never a number or an
// address. A link stops working when its group no longer takes answers:
// canceled, or its quorum met.

var answerPage = template.Must(template.New("a").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>{{.Title}}</title></head>
<body><main>
<h1>{{.Title}}</h1>
{{if .Text}}<p style="white-space:pre-wrap">{{.Text}}</p>{{end}}
{{if .Button}}<form method="post"><button type="submit">{{.Button}}</button></form>{{end}}
{{if .Note}}<p>{{.Note}}</p>{{end}}
</main></body></html>
`))

type answerView struct{ Title, Text, Button, Note string }

func writeAnswerPage(w http.ResponseWriter, status int, v answerView) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	w.WriteHeader(status)
	return answerPage.Execute(w, v)
}

// answerTarget is what a verified token points at.
type answerTarget struct {
	tok    email.Token
	g      group.Group
	number string
	label  string
}

// answerTargetOf verifies the token and finds its group, recipient and
// option; a page to show instead when the link does not work.
func (a *api) answerTargetOf(r *http.Request) (answerTarget, *answerView, int, error) {
	bad := &answerView{Title: "This link does not work", Note: "It may have been cut or changed. Answer by text instead."}
	if len(a.cfg.AnswerKey) == 0 {
		return answerTarget{}, bad, http.StatusNotFound, nil
	}
	tok, err := email.Verify(a.cfg.AnswerKey, r.PathValue("token"))
	if err != nil || tok.Kind != email.KindAnswer {
		return answerTarget{}, bad, http.StatusNotFound, nil
	}
	g, ok, err := tracker.LoadGroup(r.Context(), a.store, tok.Group)
	if err != nil {
		return answerTarget{}, nil, 0, err
	}
	if !ok || tok.Recipient >= len(g.Recipients) {
		return answerTarget{}, bad, http.StatusNotFound, nil
	}
	t := answerTarget{tok: tok, g: g, number: g.Recipients[tok.Recipient].Number}
	for _, o := range g.Responses {
		if o.Key == tok.Option {
			t.label = o.Label
		}
	}
	if t.label == "" {
		return answerTarget{}, bad, http.StatusNotFound, nil
	}
	if g.Status == crewcast.GroupCanceled || g.QuorumMet() {
		return answerTarget{}, &answerView{Title: "This question is closed", Text: g.Text,
			Note: "No more answers are taken for it."}, http.StatusGone, nil
	}
	return t, nil, 0, nil
}

// linkGate throttles the client (429 past linkBurst) and reports whether
// the link is a valid unsubscribe token (then handled by unsubscribe.go).
func (a *api) linkGate(r *http.Request) (email.Token, bool, error) {
	if err := a.throttle.linkAllowed(a.now(), a.clientAddr(r)); err != nil {
		return email.Token{}, false, err
	}
	if len(a.cfg.AnswerKey) == 0 {
		return email.Token{}, false, nil
	}
	tok, err := email.Verify(a.cfg.AnswerKey, r.PathValue("token"))
	return tok, err == nil && tok.Kind == email.KindUnsubscribe, nil
}

// answerLinkPage is GET /a/{token}: the choice and a button; it changes
// nothing.
func (a *api) answerLinkPage(w http.ResponseWriter, r *http.Request) error {
	if tok, ok, err := a.linkGate(r); err != nil || ok {
		if err != nil {
			return err
		}
		return a.unsubscribePage(w, r, tok)
	}
	t, v, status, err := a.answerTargetOf(r)
	if err != nil {
		return err
	}
	if v != nil {
		return writeAnswerPage(w, status, *v)
	}
	return writeAnswerPage(w, http.StatusOK, answerView{Title: "Answer: " + t.label, Text: t.g.Text,
		Button: "Send my answer: " + t.label, Note: "Nothing is sent until you press the button."})
}

// answerLinkPost is POST /a/{token}: it records the answer (once: the
// same link posted again is the same event).
func (a *api) answerLinkPost(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if tok, ok, err := a.linkGate(r); err != nil || ok {
		if err != nil {
			return err
		}
		return a.unsubscribePost(w, r, tok)
	}
	t, v, status, err := a.answerTargetOf(r)
	if err != nil {
		return err
	}
	if v != nil {
		return writeAnswerPage(w, status, *v)
	}
	sum := sha256.Sum256([]byte(r.PathValue("token")))
	ev := tracker.EmailAnswer(t.tok.Group, "link:"+hex.EncodeToString(sum[:16]), t.number, t.g.From, t.tok.Option, a.now())
	if _, err := a.svc.Ingest(r.Context(), []crewcast.Event{ev}); err != nil {
		if errors.Is(err, r.Context().Err()) {
			return err
		}
		return writeAnswerPage(w, http.StatusServiceUnavailable, answerView{Title: "Not recorded yet",
			Note: "Please press the button again in a minute."})
	}
	return writeAnswerPage(w, http.StatusOK, answerView{Title: "Thank you", Text: "Your answer was recorded: " + t.label + "."})
}
