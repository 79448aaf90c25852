package email

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func TestTokenSignedAndBound(t *testing.T) {
	tok := Token{Kind: KindAnswer, Group: "grp_1", Recipient: 3, Option: "1"}
	s := Sign(key, tok)
	if got, err := Verify(key, s); err != nil || got != tok {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
	// Any other group, recipient, option or kind is another signature.
	for _, other := range []Token{{KindAnswer, "grp_2", 3, "1"}, {KindAnswer, "grp_1", 4, "1"}, {KindAnswer, "grp_1", 3, "2"}, {KindUnsubscribe, "grp_1", 3, "1"}} {
		if Sign(key, other) == s {
			t.Errorf("%+v signs like %+v", other, tok)
		}
	}
	payload, sig, _ := strings.Cut(s, ".")
	forged := Sign(key, Token{Kind: KindAnswer, Group: "grp_1", Recipient: 3, Option: "2"})
	fp, _, _ := strings.Cut(forged, ".")
	for name, bad := range map[string]string{
		"other key":        Sign([]byte("another key of thirty-two bytes!"), tok),
		"swapped payload":  fp + "." + sig,
		"cut signature":    payload + "." + sig[:len(sig)-2],
		"no signature":     payload,
		"empty":            "",
		"garbage":          "!!!.???",
		"flipped sig char": payload + "." + flip(sig),
	} {
		if _, err := Verify(key, bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("%s: Verify = %v, want ErrBadToken", name, err)
		}
	}
}

func flip(s string) string {
	b := []byte(s)
	if b[0] == 'A' {
		b[0] = 'B'
	} else {
		b[0] = 'A'
	}
	return string(b)
}

func TestParseURL(t *testing.T) {
	c, err := ParseURL("smtp://ada:s3cret@mail.example.org:2525", "crewcast@example.org")
	if err != nil || c.Host != "mail.example.org" || c.Port != 2525 || c.User != "ada" || c.Pass != "s3cret" || c.ImplicitTLS {
		t.Fatalf("smtp = %+v, %v", c, err)
	}
	if c, err := ParseURL("smtps://mail.example.org", "crewcast@example.org"); err != nil || c.Port != 465 || !c.ImplicitTLS {
		t.Fatalf("smtps = %+v, %v", c, err)
	}
	if c, _ := ParseURL("smtp://mail.example.org", "crewcast@example.org"); c.Port != 587 {
		t.Fatalf("default port %d", c.Port)
	}
	for _, bad := range [][2]string{{"http://x.example", "a@b.example"}, {"smtp://:pw@/", "a@b.example"},
		{"smtp://u:topsecret@h.example:99999", "a@b.example"}, {"smtp://h.example", "not an address"}} {
		_, err := ParseURL(bad[0], bad[1])
		if err == nil {
			t.Errorf("ParseURL(%q, %q) took it", bad[0], bad[1])
		} else if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("the error repeats the password: %v", err)
		}
	}
}

// A mail through the simulator's SMTP server: plain-text and HTML parts,
// one link per option (each a token for that option), List-Unsubscribe.
func TestSendThroughSimulator(t *testing.T) {
	box, err := sim.ServeSMTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	host, port, _ := net.SplitHostPort(box.Addr())
	cfg, err := ParseURL("smtp://"+host+":"+port, "crewcast@example.org")
	if err != nil {
		t.Fatal(err)
	}
	links := Links(key, "http://board.example/", "grp_1", 2, []string{"1", "2"})
	m := Message{To: "ada@example.org", Subject: "Crew call 7am", Text: "Crew call 7am <b>north gate</b>?",
		Options:        []Option{{Key: "1", Label: "Coming", URL: links[0]}, {Key: "2", Label: "Can't make it", URL: links[1]}},
		UnsubscribeURL: UnsubscribeLink(key, "http://board.example", "grp_1", 2), MessageID: "grp_1-f2-3@crewcast"}
	if err := NewSender(cfg, 5*time.Second).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := box.Mail()
	if len(got) != 1 {
		t.Fatalf("%d mails", len(got))
	}
	g := got[0]
	if g.From != "crewcast@example.org" || !slices.Equal(g.To, []string{"ada@example.org"}) || g.Subject != "Crew call 7am" || !g.HTML ||
		!strings.Contains(g.Text, "Coming: "+links[0]) || !strings.Contains(g.Text, "<b>north gate</b>") {
		t.Fatalf("mail = %+v", g)
	}
	if !slices.Equal(g.Links, append(slices.Clone(links), m.UnsubscribeURL)) || g.ListUnsubscribe != m.UnsubscribeURL ||
		g.ListUnsubscribePost != "" {
		t.Fatalf("links %v, List-Unsubscribe %q, List-Unsubscribe-Post %q", g.Links, g.ListUnsubscribe, g.ListUnsubscribePost)
	}
	// With an https link the mail also offers RFC 8058 one-click.
	m.UnsubscribeURL = UnsubscribeLink(key, "https://board.example", "grp_1", 2)
	if err := NewSender(cfg, 5*time.Second).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if g := box.Mail()[1]; g.ListUnsubscribe != m.UnsubscribeURL || g.ListUnsubscribePost != "List-Unsubscribe=One-Click" {
		t.Fatalf("https: List-Unsubscribe %q, List-Unsubscribe-Post %q", g.ListUnsubscribe, g.ListUnsubscribePost)
	}
	for i, l := range links {
		tok, err := Verify(key, strings.TrimPrefix(l, "http://board.example/a/"))
		if err != nil || tok != (Token{Kind: KindAnswer, Group: "grp_1", Recipient: 2, Option: []string{"1", "2"}[i]}) {
			t.Fatalf("link %d token = %+v, %v", i, tok, err)
		}
	}
	if h, _ := m.HTML(); strings.Contains(h, "<b>north") || !strings.Contains(h, "&lt;b&gt;north") {
		t.Fatalf("HTML part does not escape the text: %s", h)
	}
}

// refusing is an SMTP server that refuses at one step.
type refusing struct{ rcpt, data error }

func (r refusing) NewSession(*smtp.Conn) (smtp.Session, error) { return &refusingSession{r}, nil }

type refusingSession struct{ r refusing }

func (s *refusingSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *refusingSession) Rcpt(string, *smtp.RcptOptions) error { return s.r.rcpt }
func (s *refusingSession) Data(r io.Reader) error {
	_, _ = io.Copy(io.Discard, r)
	return s.r.data
}
func (s *refusingSession) Reset()        {}
func (s *refusingSession) Logout() error { return nil }

// A send that certainly did not go out says so; one that may have is
// uncertain (never retried).
func TestSendErrorClasses(t *testing.T) {
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	dead.Close()
	serve := func(b smtp.Backend) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := smtp.NewServer(b)
		s.Domain = "test.invalid"
		go func() { _ = s.Serve(ln) }()
		t.Cleanup(func() { s.Close() })
		return ln.Addr().String()
	}
	perm := &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	temp := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try later"}
	for _, tc := range []struct {
		name string
		addr string
		want crewcast.ErrorClass
	}{
		{"nobody listening", deadAddr, crewcast.ClassNotSent},
		{"recipient refused for good", serve(refusing{rcpt: perm}), crewcast.ClassRecipient},
		{"recipient refused for now", serve(refusing{rcpt: temp}), crewcast.ClassNotSent},
		{"refused after the content", serve(refusing{data: temp}), crewcast.ClassUncertain},
	} {
		host, port, _ := net.SplitHostPort(tc.addr)
		cfg, _ := ParseURL("smtp://"+host+":"+port, "crewcast@example.org")
		err := NewSender(cfg, 3*time.Second).Send(context.Background(), Message{To: "ada@example.org", Subject: "s", Text: "t"})
		var se *crewcast.SendError
		if !errors.As(err, &se) || se.Class != tc.want {
			t.Errorf("%s: %v, want class %s", tc.name, err, tc.want)
		}
	}
}

// An opted-out address is kept as a keyed hash of its trimmed, lowercased
// form: the same address in any case hashes alike, another key does not.
func TestOptOutHash(t *testing.T) {
	h := OptOutHash(key, "Ada@Example.org ")
	if h != OptOutHash(key, "ada@example.org") || h == OptOutHash([]byte("another key"), "ada@example.org") ||
		h == OptOutHash(key, "bo@example.org") || strings.Contains(h, "ada") || len(h) != 64 {
		t.Fatalf("OptOutHash = %s", h)
	}
}
