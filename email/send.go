package email

import (
	"context"
	"errors"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/crewcast/crewcast"
)

// Provider is the name an email send error carries.
const Provider = "smtp"

// Sender sends mail through one SMTP server.
type Sender struct {
	cfg  Config
	opts []gomail.Option
}

// NewSender makes a Sender for cfg; timeout bounds each send (dial to
// QUIT).
func NewSender(cfg Config, timeout time.Duration) *Sender {
	opts := []gomail.Option{gomail.WithPort(cfg.Port), gomail.WithTimeout(timeout)}
	if cfg.ImplicitTLS {
		opts = append(opts, gomail.WithSSL())
	} else {
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if cfg.User != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover),
			gomail.WithUsername(cfg.User), gomail.WithPassword(cfg.Pass))
	}
	return &Sender{cfg: cfg, opts: opts}
}

// From is the sender's From address.
func (s *Sender) From() string { return s.cfg.From }

// Send sends m. A failure is a *crewcast.SendError whose Class says
// whether the mail certainly did not go out (ClassNotSent: nothing was
// handed over; ClassPermanent: the server refused the sender or the
// recipient) or may have (ClassUncertain: the connection failed while or
// after the content was written), exactly as for a text.
func (s *Sender) Send(ctx context.Context, m Message) error {
	msg, err := m.build(s.cfg.From)
	if err != nil {
		return &crewcast.SendError{Provider: Provider, Class: crewcast.ClassRecipient, Detail: err.Error()}
	}
	c, err := gomail.NewClient(s.cfg.Host, s.opts...)
	if err != nil {
		return &crewcast.SendError{Provider: Provider, Class: crewcast.ClassSender, Detail: "SMTP settings refused", Err: err}
	}
	sc, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return &crewcast.SendError{Provider: Provider, Class: crewcast.ClassNotSent, Detail: "could not reach the SMTP server", Err: err}
	}
	err = c.SendWithSMTPClient(sc, msg)
	_ = c.CloseWithSMTPClient(sc) // after the server took the mail, a failed QUIT changes nothing
	if err != nil {
		return classify(err)
	}
	return nil
}

// classify maps go-mail's send error to a class by the step it failed at.
func classify(err error) error {
	var se *gomail.SendError
	if !errors.As(err, &se) {
		return &crewcast.SendError{Provider: Provider, Class: crewcast.ClassUncertain, Detail: "SMTP send failed", Err: err}
	}
	e := &crewcast.SendError{Provider: Provider, Detail: "SMTP send failed", Err: err}
	switch se.Reason {
	case gomail.ErrGetSender, gomail.ErrGetRcpts, gomail.ErrNoUnencoded:
		e.Class = crewcast.ClassRecipient
	case gomail.ErrSMTPMailFrom, gomail.ErrSMTPRcptTo, gomail.ErrSMTPData, gomail.ErrConnCheck, gomail.ErrSMTPReset:
		// Refused before the content was written: not sent.
		e.Class = crewcast.ClassNotSent
		if !se.IsTemp() && se.Reason == gomail.ErrSMTPRcptTo {
			e.Class = crewcast.ClassRecipient
		}
	default: // ErrWriteContent, ErrSMTPDataClose, ErrAmbiguous: it may have gone
		e.Class = crewcast.ClassUncertain
	}
	return e
}
