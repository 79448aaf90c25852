package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/crewcast/crewcast/email"
	"github.com/crewcast/crewcast/tracker"
)

// Email opt-out (docs/design.md §17): every mail's List-Unsubscribe (and,
// for an https link, List-Unsubscribe-Post one-click, RFC 8058) is a
// signed /a/{token} of the unsubscribe kind. A GET shows a button and
// changes nothing; a POST (the button, or a mail client's one-click)
// opts the contact's address out of email: later email steps to it are
// skipped. The address is kept only as a keyed hash (email.OptOutHash).

// linkEvery and linkBurst throttle /a/{token} per client: a mail holds a
// handful of links, so a client past the burst is guessing tokens or
// hammering the page.
const (
	linkBurst = 30
	linkEvery = 2 * time.Second
)

// linkAllowed spends one of client's link requests, or returns a 429.
func (t *throttle) linkAllowed(now time.Time, client string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := clientKey(client)
	if wait := t.links.wait(now, c); wait > 0 {
		e := tooManyAttempts(wait)
		e.Message = "too many requests for links; try again in " + e.Header.Get("Retry-After") + " s"
		return e
	}
	if b := t.links.get(now, c); b != nil {
		b.lim.AllowN(now, 1)
	}
	return nil
}

// unsubscribeAddress is the address an unsubscribe token points at: the
// email on the contact of that group's recipient ("" when none).
func (a *api) unsubscribeAddress(r *http.Request, tok email.Token) (string, *answerView, int, error) {
	bad := &answerView{Title: "This link does not work", Note: "It may have been cut or changed."}
	g, ok, err := tracker.LoadGroup(r.Context(), a.store, tok.Group)
	if err != nil {
		return "", nil, 0, err
	}
	if !ok || tok.Recipient >= len(g.Recipients) {
		return "", bad, http.StatusNotFound, nil
	}
	number := g.Recipients[tok.Recipient].Number
	cs, err := a.store.ContactsByNumbers(r.Context(), []string{number})
	if err != nil {
		return "", nil, 0, err
	}
	addr := cs[number].Email
	if addr == "" {
		return "", &answerView{Title: "No email to stop", Note: "There is no email address on file for you any more."}, http.StatusOK, nil
	}
	return addr, nil, 0, nil
}

func (a *api) unsubscribePage(w http.ResponseWriter, r *http.Request, tok email.Token) error {
	if _, v, status, err := a.unsubscribeAddress(r, tok); err != nil || v != nil {
		if err != nil {
			return err
		}
		return writeAnswerPage(w, status, *v)
	}
	return writeAnswerPage(w, http.StatusOK, answerView{Title: "Stop email from crewcast",
		Button: "Send me no more email", Note: "Nothing changes until you press the button. Texts and calls are not affected."})
}

func (a *api) unsubscribePost(w http.ResponseWriter, r *http.Request, tok email.Token) error {
	addr, v, status, err := a.unsubscribeAddress(r, tok)
	if err != nil {
		return err
	}
	if v != nil {
		return writeAnswerPage(w, status, *v)
	}
	if err := a.store.OptOutEmail(r.Context(), email.OptOutHash(a.cfg.AnswerKey, addr)); err != nil {
		if errors.Is(err, r.Context().Err()) {
			return err
		}
		return writeAnswerPage(w, http.StatusServiceUnavailable, answerView{Title: "Not recorded yet",
			Note: "Please press the button again in a minute."})
	}
	a.log.Info("email opt-out recorded", "group", tok.Group)
	return writeAnswerPage(w, http.StatusOK, answerView{Title: "Done", Text: "You will get no more email from crewcast."})
}
