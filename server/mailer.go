package server

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/email"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// The email channel of follow-up ladders (docs/design.md §17): with
// CREWCAST_SMTP_URL and CREWCAST_EMAIL_FROM set, email steps go out through
// that SMTP server, their answer links signed with a key kept in the
// database (every node, every restart: a link in a mail keeps working).

// answerKeyName is the server key that signs answer links.
const answerKeyName = "email_links"

// mailer builds the tracker's Mailer and the answer-link key; nil and nil
// without CREWCAST_SMTP_URL (email steps are then refused).
func (s *Server) mailer(ctx context.Context, public string) (tracker.Mailer, []byte, error) {
	if s.cfg.SMTPURL == "" {
		return nil, nil, nil
	}
	cfg, err := email.ParseURL(s.cfg.SMTPURL, s.cfg.EmailFrom)
	if err != nil {
		return nil, nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, err
	}
	if key, err = s.st.EnsureServerKey(ctx, answerKeyName, key); err != nil {
		return nil, nil, fmt.Errorf("answer link key: %w", err)
	}
	timeout := s.cfg.ProviderTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return smtpMailer{send: email.NewSender(cfg, timeout), key: key, public: public, optOuts: s.st}, key, nil
}

// smtpMailer makes one email step's mail.
type smtpMailer struct {
	send    *email.Sender
	key     []byte
	public  string
	optOuts store.EmailOptOuts
}

// MailStep sends the step's mail, unless the address opted out of email
// (its List-Unsubscribe link): that step is skipped and says so.
func (m smtpMailer) MailStep(ctx context.Context, st tracker.MailStep) error {
	out, err := m.optOuts.EmailOptedOut(ctx, email.OptOutHash(m.key, st.To))
	if err != nil { // nothing was handed over: certainly not sent
		return &crewcast.SendError{Provider: "smtp", Class: crewcast.ClassNotSent, Detail: "the email opt-outs could not be read", Err: err}
	}
	if out {
		return &group.StepSkipped{Reason: "the address opted out of email"}
	}
	keys := make([]string, len(st.Options))
	for i, o := range st.Options {
		keys[i] = o.Key
	}
	links := email.Links(m.key, m.public, st.GroupID, st.Recipient, keys)
	msg := email.Message{To: st.To, Subject: subjectOf(st.Text), Text: st.Text,
		MessageID:      st.GroupID + "." + st.SendID + "@crewcast",
		UnsubscribeURL: email.UnsubscribeLink(m.key, m.public, st.GroupID, st.Recipient)}
	for i, o := range st.Options {
		msg.Options = append(msg.Options, email.Option{Key: o.Key, Label: o.Label, URL: links[i]})
	}
	return m.send.Send(ctx, msg)
}

// subjectOf is the first line of the text, at most 78 characters.
func subjectOf(text string) string {
	r := []rune(text)
	for i, c := range r {
		if c == '\n' || c == '\r' {
			r = r[:i]
			break
		}
	}
	if len(r) > 78 {
		r = append(r[:75], '.', '.', '.')
	}
	return string(r)
}
