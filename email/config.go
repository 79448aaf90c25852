package email

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/crewcast/crewcast/group"
)

// Config is where mail goes out: CREWCAST_SMTP_URL parsed, and the From
// address (CREWCAST_EMAIL_FROM).
type Config struct {
	Host string
	Port int
	User string
	Pass string
	// ImplicitTLS is smtps:// (TLS from the first byte); smtp:// uses
	// STARTTLS when the server offers it.
	ImplicitTLS bool
	From        string
}

// ParseURL reads smtp://user:pass@host:587 or smtps://user:pass@host:465
// (the port defaults to 587 and 465) and the From address. Errors never
// repeat the URL: it holds a password.
func ParseURL(raw, from string) (Config, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Config{}, errors.New("CREWCAST_SMTP_URL is not a URL such as smtp://user:pass@host:587")
	}
	var c Config
	switch u.Scheme {
	case "smtp":
		c.Port = 587
	case "smtps":
		c.Port, c.ImplicitTLS = 465, true
	default:
		return Config{}, fmt.Errorf("CREWCAST_SMTP_URL: scheme %q, want smtp or smtps", u.Scheme)
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return Config{}, errors.New("CREWCAST_SMTP_URL has no host")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Config{}, errors.New("CREWCAST_SMTP_URL: bad port")
		}
		c.Port = n
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Pass, _ = u.User.Password()
	}
	if c.From, err = group.NormalizeEmail(from); err != nil || c.From == "" {
		return Config{}, errors.New("CREWCAST_EMAIL_FROM must be one address such as crewcast@example.org")
	}
	return c, nil
}

// Addr is host:port.
func (c Config) Addr() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }
