package email

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	gomail "github.com/wneessen/go-mail"
)

// Option is one answer link of a mail.
type Option struct {
	Key, Label string
	URL        string // {public_url}/a/{token}
}

// Message is one email step's mail to one person.
type Message struct {
	To      string
	Subject string
	Text    string
	Options []Option
	// UnsubscribeURL opts the address out of email (List-Unsubscribe).
	UnsubscribeURL string
	// MessageID makes the mail's Message-ID (the claim key, so a mail
	// is recognisable for what it is).
	MessageID string
}

// Links are the answer links of a mail, in option order.
func Links(key []byte, publicURL, groupID string, recipient int, keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = strings.TrimRight(publicURL, "/") + "/a/" + Sign(key, Token{Kind: KindAnswer, Group: groupID, Recipient: recipient, Option: k})
	}
	return out
}

// UnsubscribeLink is the List-Unsubscribe link of a mail.
func UnsubscribeLink(key []byte, publicURL, groupID string, recipient int) string {
	return strings.TrimRight(publicURL, "/") + "/a/" + Sign(key, Token{Kind: KindUnsubscribe, Group: groupID, Recipient: recipient})
}

// PlainText is the mail's text part.
func (m Message) PlainText() string {
	var b strings.Builder
	b.WriteString(m.Text)
	b.WriteString("\n")
	if len(m.Options) > 0 {
		b.WriteString("\nAnswer by opening one link:\n")
		for _, o := range m.Options {
			fmt.Fprintf(&b, "%s: %s\n", o.Label, o.URL)
		}
	}
	if m.UnsubscribeURL != "" {
		fmt.Fprintf(&b, "\nNo more email from this sender: %s\n", m.UnsubscribeURL)
	}
	return b.String()
}

var htmlPart = template.Must(template.New("mail").Parse(`<!doctype html>
<html><body>
<p style="white-space:pre-wrap">{{.Text}}</p>
{{if .Options}}<p>Answer:</p><ul>{{range .Options}}
<li><a href="{{.URL}}">{{.Label}}</a></li>{{end}}
</ul>{{end}}
{{if .UnsubscribeURL}}<p><small><a href="{{.UnsubscribeURL}}">No more email from this sender</a></small></p>{{end}}
</body></html>
`))

// HTML is the mail's HTML part (every value escaped).
func (m Message) HTML() (string, error) {
	var b bytes.Buffer
	if err := htmlPart.Execute(&b, m); err != nil {
		return "", err
	}
	return b.String(), nil
}

// build makes the go-mail message.
func (m Message) build(from string) (*gomail.Msg, error) {
	msg := gomail.NewMsg()
	if err := msg.From(from); err != nil {
		return nil, fmt.Errorf("from address: %w", err)
	}
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("to address refused")
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	if m.MessageID != "" {
		msg.SetMessageIDWithValue(m.MessageID)
	} else {
		msg.SetMessageID()
	}
	if m.UnsubscribeURL != "" {
		// RFC 8058 one-click (List-Unsubscribe-Post) needs an https link;
		// a plain http one (a local demo) gets the header alone.
		if err := msg.SetListUnsubscribeOneClick(m.UnsubscribeURL); err != nil {
			msg.SetListUnsubscribe(m.UnsubscribeURL)
		}
	}
	msg.SetBodyString(gomail.TypeTextPlain, m.PlainText())
	h, err := m.HTML()
	if err != nil {
		return nil, err
	}
	msg.AddAlternativeString(gomail.TypeTextHTML, h)
	return msg, nil
}
