package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientAddr is the address a request came from, the one answer the
// server uses everywhere it needs one (sign-in and API key throttling, the
// audit trail, the address a forwarded group command carries):
//
//   - on a command forwarded by a node of this cluster (it carries the
//     cluster secret), the address that node found, by this same rule;
//   - else, when the TCP peer is a trusted proxy (Config.TrustedProxies,
//     --trusted-proxies), the client its forwarding header names;
//   - else the TCP peer's address. Forwarding headers from anyone else
//     are ignored: anyone can write them.
func (a *api) clientAddr(r *http.Request) string {
	if ip := r.Header.Get(clientAddrHeader); ip != "" && a.trustedForward(r) {
		return ip
	}
	return clientAddrOf(r, a.cfg.TrustedProxies)
}

// clientAddrOf applies the proxy rule. Each proxy appends the address of
// its own peer to X-Forwarded-For (or to Forwarded, RFC 7239), so only
// the right-hand end of the list was written by proxies we trust: the
// client is the right-most address that is not itself a trusted proxy.
// Everything to its left came from the client and is ignored. A hop that
// does not parse (RFC 7239 "unknown", an obfuscated name, garbage) ends
// the walk at the last trusted hop. X-Forwarded-For, which nearly every
// proxy maintains, wins over Forwarded when a request has both.
func clientAddrOf(r *http.Request, trusted []netip.Prefix) string {
	peer, ok := parseHop(r.RemoteAddr)
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
	client := peer
	if !isTrusted(peer, trusted) {
		return client.String()
	}
	hops := forwardedHops(r.Header)
	for i := len(hops) - 1; i >= 0; i-- {
		ip, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = ip
		if !isTrusted(ip, trusted) {
			break
		}
	}
	return client.String()
}

func isTrusted(ip netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// forwardedHops lists the forwarding chain, left (first hop) to right
// (nearest): X-Forwarded-For's addresses, else the for= of each Forwarded
// element ("" for an element without one). Repeated headers are one list.
func forwardedHops(h http.Header) []string {
	var hops []string
	if xff := h.Values("X-Forwarded-For"); len(xff) > 0 {
		for _, v := range xff {
			for _, hop := range strings.Split(v, ",") {
				hops = append(hops, strings.TrimSpace(hop))
			}
		}
		return hops
	}
	for _, v := range h.Values("Forwarded") {
		for _, elem := range strings.Split(v, ",") {
			hop := ""
			for _, pair := range strings.Split(elem, ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(pair), "=")
				if strings.EqualFold(k, "for") {
					hop = strings.Trim(strings.TrimSpace(val), `"`)
				}
			}
			hops = append(hops, hop)
		}
	}
	return hops
}

// parseHop reads an address with or without a port ("192.0.2.1",
// "192.0.2.1:80", "2001:db8::1", "[2001:db8::1]:80", "[2001:db8::1]");
// IPv4-mapped IPv6 addresses become IPv4.
func parseHop(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// ParseTrustedProxies reads a comma-separated list of CIDRs (a bare
// address is its own /32 or /128), as --trusted-proxies takes it.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			ip, err := netip.ParseAddr(part)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
