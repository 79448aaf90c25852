package sim

import (
	"net/smtp"
	"strings"
	"testing"
)

// The simulator's SMTP server takes a multipart mail and GET /sim/mail
// lists it with its text part's links; Reset forgets it.
func TestSMTPServerListsMail(t *testing.T) {
	s, c := newSim(t, Config{})
	addr, err := s.StartSMTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body := "From: crewcast@example.org\r\nTo: ada@example.org\r\nSubject: =?UTF-8?q?Crew_call_7am?=\r\n" +
		"List-Unsubscribe: <http://board.example/a/u1>\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=b1\r\n\r\n" +
		"--b1\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
		"Coming: http://board.example/a/t1\r\nCan't: http://board.example/a/t2\r\n" +
		"--b1\r\nContent-Type: text/html; charset=UTF-8\r\n\r\n<p>hi</p>\r\n--b1--\r\n"
	if err := smtp.SendMail(addr, nil, "crewcast@example.org", []string{"ada@example.org"}, []byte(body)); err != nil {
		t.Fatal(err)
	}
	var out struct{ Mail []Mail }
	c.simJSON("GET", "/sim/mail", nil).decode(t, &out)
	if len(out.Mail) != 1 {
		t.Fatalf("mail = %+v", out)
	}
	m := out.Mail[0]
	if m.From != "crewcast@example.org" || m.To[0] != "ada@example.org" || m.Subject != "Crew call 7am" || !m.HTML ||
		strings.Join(m.Links, " ") != "http://board.example/a/t1 http://board.example/a/t2" || m.ListUnsubscribe != "http://board.example/a/u1" {
		t.Fatalf("mail = %+v", m)
	}
	s.Reset()
	if got := s.MailBox().Mail(); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
}
