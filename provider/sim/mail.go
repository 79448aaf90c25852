package sim

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// The simulator's SMTP server (docs/design.md §17): it takes every mail
// handed to it, sends nothing on, and lists what it got with the links in
// its text part (GET /sim/mail), so a demo and the tests can answer by
// email with nothing real sent. It is written from the SMTP and MIME
// standards, not from crewcast's email package.

// Mail is one mail the simulator's SMTP server received.
type Mail struct {
	From    string   `json:"from"`
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Text    string   `json:"text"`
	HTML    bool     `json:"html"` // it had an HTML part too
	Links   []string `json:"links"`
	// ListUnsubscribe is the List-Unsubscribe header's link, if any.
	ListUnsubscribe string `json:"list_unsubscribe,omitempty"`
	// ListUnsubscribePost is the List-Unsubscribe-Post header (RFC 8058
	// one-click: "List-Unsubscribe=One-Click"), if any.
	ListUnsubscribePost string    `json:"list_unsubscribe_post,omitempty"`
	MessageID           string    `json:"message_id,omitempty"`
	At                  time.Time `json:"at"`
}

// MailBox is the SMTP server and what it received.
type MailBox struct {
	mu   sync.Mutex
	mail []Mail
	srv  *smtp.Server
	ln   net.Listener
}

// maxMailBytes bounds one mail.
const maxMailBytes = 1 << 20

// ServeSMTP starts an SMTP server on addr ("127.0.0.1:0" for any port).
// Authentication is accepted for any user (the sim is a test double).
func ServeSMTP(addr string) (*MailBox, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	b := &MailBox{ln: ln}
	b.srv = smtp.NewServer(backend{b})
	b.srv.Domain = "sim.crewcast.invalid"
	b.srv.MaxMessageBytes = maxMailBytes
	b.srv.MaxRecipients = 50
	b.srv.ReadTimeout, b.srv.WriteTimeout = 30*time.Second, 30*time.Second
	b.srv.AllowInsecureAuth = true
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// Addr is the server's address.
func (b *MailBox) Addr() string { return b.ln.Addr().String() }

// Close stops the server.
func (b *MailBox) Close() error { return b.srv.Close() }

// Mail returns what was received, oldest first.
func (b *MailBox) Mail() []Mail {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Mail{}, b.mail...)
}

// Reset forgets the received mail.
func (b *MailBox) Reset() {
	b.mu.Lock()
	b.mail = nil
	b.mu.Unlock()
}

type backend struct{ b *MailBox }

func (k backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{b: k.b}, nil }

type session struct {
	b    *MailBox
	from string
	to   []string
}

func (s *session) AuthMechanisms() []string { return []string{"PLAIN"} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(string, string, string) error { return nil }), nil
}
func (s *session) Mail(from string, _ *smtp.MailOptions) error { s.from = from; return nil }
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error   { s.to = append(s.to, to); return nil }
func (s *session) Reset()                                      { s.from, s.to = "", nil }
func (s *session) Logout() error                               { return nil }

func (s *session) Data(r io.Reader) error {
	m, err := parseMail(io.LimitReader(r, maxMailBytes+1))
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: "unreadable message"}
	}
	m.From, m.To, m.At = s.from, append([]string{}, s.to...), time.Now().UTC()
	s.b.mu.Lock()
	s.b.mail = append(s.b.mail, m)
	s.b.mu.Unlock()
	return nil
}

var linkRE = regexp.MustCompile(`https?://[^\s<>"]+`)

// parseMail reads the subject, the text part (of a multipart/alternative
// or a single part) and its links.
func parseMail(r io.Reader) (Mail, error) {
	msg, err := mail.ReadMessage(r)
	if err != nil {
		return Mail{}, err
	}
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		subject = msg.Header.Get("Subject")
	}
	m := Mail{Subject: subject, MessageID: strings.Trim(msg.Header.Get("Message-Id"), "<>")}
	if lu := msg.Header.Get("List-Unsubscribe"); lu != "" {
		m.ListUnsubscribe = strings.Trim(strings.Split(lu, ",")[0], " <>")
	}
	m.ListUnsubscribePost = msg.Header.Get("List-Unsubscribe-Post")
	if err := readParts(&m, msg.Header.Get("Content-Type"), msg.Header.Get("Content-Transfer-Encoding"), msg.Body, 0); err != nil {
		return Mail{}, err
	}
	m.Links = linkRE.FindAllString(m.Text, -1)
	if m.Links == nil {
		m.Links = []string{}
	}
	return m, nil
}

func readParts(m *Mail, ctype, cte string, body io.Reader, depth int) error {
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		mt = "text/plain"
	}
	if strings.HasPrefix(mt, "multipart/") {
		if depth > 3 {
			return errors.New("too deeply nested")
		}
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := readParts(m, p.Header.Get("Content-Type"), p.Header.Get("Content-Transfer-Encoding"), p, depth+1); err != nil {
				return err
			}
		}
	}
	var rd io.Reader = body
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "quoted-printable":
		rd = quotedprintable.NewReader(body)
	case "base64":
		rd = base64.NewDecoder(base64.StdEncoding, &crlfStripper{r: body})
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	switch mt {
	case "text/plain":
		if m.Text == "" {
			m.Text = string(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")))
		}
	case "text/html":
		m.HTML = true
	}
	return nil
}

// crlfStripper drops line ends, which base64 bodies carry every 76 chars.
type crlfStripper struct{ r io.Reader }

func (c *crlfStripper) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	j := 0
	for _, b := range p[:n] {
		if b != '\r' && b != '\n' {
			p[j] = b
			j++
		}
	}
	return j, err
}

// StartSMTP starts the simulator's SMTP server on addr and returns its
// address; GET /sim/mail lists what it received. Stop closes it.
func (s *Sim) StartSMTP(addr string) (string, error) {
	b, err := ServeSMTP(addr)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	old := s.mailbox
	s.mailbox = b
	s.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return b.Addr(), nil
}

// MailBox is the SMTP server's received mail; nil before StartSMTP.
func (s *Sim) MailBox() *MailBox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mailbox
}

// receivedMail is GET /sim/mail's list (empty without an SMTP server).
func (s *Sim) receivedMail() []Mail {
	if b := s.MailBox(); b != nil {
		return b.Mail()
	}
	return []Mail{}
}
