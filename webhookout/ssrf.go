package webhookout

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// AllowPrivateEnv turns the destination checks off (also --webhook-allow-private).
const AllowPrivateEnv = "CREWCAST_WEBHOOK_ALLOW_PRIVATE"

// ErrRefused is returned when a destination is an address crewcast does
// not send webhooks to.
var ErrRefused = errors.New("webhookout: destination address refused")

// refused are the ranges a webhook may not connect to: they reach the
// machine itself, its private networks or a cloud metadata service.
var refused = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",      // "this network"
		"10.0.0.0/8",     // RFC 1918
		"100.64.0.0/10",  // CGNAT (and Alibaba's metadata 100.100.100.200)
		"127.0.0.0/8",    // loopback
		"169.254.0.0/16", // link-local, cloud metadata 169.254.169.254
		"172.16.0.0/12",  // RFC 1918
		"192.0.0.0/24",   // IETF protocol assignments
		"192.168.0.0/16", // RFC 1918
		"198.18.0.0/15",  // benchmarking
		"224.0.0.0/4",    // multicast
		"240.0.0.0/4",    // reserved, broadcast
		"::/96",          // unspecified, loopback, IPv4-compatible (::a.b.c.d)
		"fc00::/7",       // unique local (AWS metadata fd00:ec2::254)
		"fe80::/10",      // link-local
		"ff00::/8",       // multicast
		"100::/64",       // discard
		// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) are judged by the IPv4
		// address they carry, below.
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Refused reports whether ip is an address webhooks may not reach.
func Refused(ip netip.Addr) bool {
	// A zone (fe80::1%eth0) would make every prefix test false.
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return true
	}
	for _, p := range refused {
		if p.Contains(ip) {
			return true
		}
	}
	// Translation prefixes carry an IPv4 address: judge that one too.
	if ip.Is6() {
		b := ip.As16()
		if netip.MustParsePrefix("64:ff9b::/96").Contains(ip) {
			return Refused(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
		if netip.MustParsePrefix("2002::/16").Contains(ip) {
			return Refused(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	return false
}

// control runs on every socket before it connects, with the address it
// connects to: DNS answers (rebinding included) cannot get around it.
func control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefused, err)
	}
	if Refused(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrRefused, ap.Addr())
	}
	return nil
}

// Timeout bounds one delivery attempt, answer included.
const Timeout = 15 * time.Second

// NewClient returns the HTTP client deliveries use: no proxy, no
// redirects (a 3xx is an answer, and not a 2xx), a 15 s timeout, and,
// unless allowPrivate, the connected-address check.
func NewClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = control
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would be the connected address
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: Timeout,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// CheckURL validates an endpoint URL when it is registered: http or https,
// a host, no credentials, and (unless allowPrivate) not a literal address
// that would be refused anyway. Host names are checked when connecting.
func CheckURL(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http or https URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	if len(raw) > 2048 {
		return errors.New("at most 2048 characters")
	}
	if allowPrivate {
		return nil
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && Refused(ip) {
		return errors.New("points to a loopback, private, link-local or metadata address")
	}
	if u.Hostname() == "localhost" {
		return errors.New("points to a loopback, private, link-local or metadata address")
	}
	return nil
}
