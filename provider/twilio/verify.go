package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

// SignatureHeader carries Twilio's webhook signature.
const SignatureHeader = "X-Twilio-Signature"

// Verify checks the X-Twilio-Signature of a form webhook that Twilio posted
// to rawURL with the form parameters params. The signed string is rawURL
// exactly as given, then for each parameter name in byte order, each of its
// distinct values in byte order as name+value (twilio-node's rule for
// repeated names); the signature is base64(HMAC-SHA1(authToken, string)),
// compared in constant time. Like Twilio's own validators it also accepts
// the signature for rawURL with the scheme's default port (:443 or :80)
// added when absent, or removed when present, and for rawURL without its
// #fragment, if any; no other port, path or query change is accepted. Every failure wraps crewcast.ErrBadSignature.
//
// JSON-body webhooks (bodySHA256 in the URL) are not supported: messaging
// webhooks are forms.
func Verify(authToken, rawURL string, header http.Header, params url.Values) error {
	if authToken == "" {
		return badSignature("no auth token configured")
	}
	if rawURL == "" {
		return badSignature("no URL to check the signature against")
	}
	sigText := adapter.HeaderValue(header, SignatureHeader)
	if sigText == "" {
		return badSignature("missing %s header", SignatureHeader)
	}
	sig, err := base64.StdEncoding.DecodeString(sigText)
	if err != nil {
		return badSignature("signature is not standard base64")
	}
	if len(sig) != sha1.Size {
		return badSignature("signature is %d bytes, want %d", len(sig), sha1.Size)
	}
	suffix := paramString(params)
	ok := false
	for _, u := range urlVariants(rawURL) {
		// Check every variant: no early exit keeps the timing independent
		// of which one matched.
		if hmac.Equal(mac(authToken, u+suffix), sig) {
			ok = true
		}
	}
	if !ok {
		return badSignature("signature does not match")
	}
	return nil
}

// Signature returns the X-Twilio-Signature value Twilio sends for a form
// posted to rawURL (exactly as given) with params. The simulator and tests
// use it; production only verifies.
func Signature(authToken, rawURL string, params url.Values) string {
	return base64.StdEncoding.EncodeToString(mac(authToken, rawURL+paramString(params)))
}

func mac(key, s string) []byte {
	h := hmac.New(sha1.New, []byte(key))
	h.Write([]byte(s))
	return h.Sum(nil)
}

// paramString concatenates name+value for every name in byte order and,
// within a name, every distinct value in byte order.
func paramString(params url.Values) string {
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		vals := append([]string(nil), params[n]...)
		sort.Strings(vals)
		for i, v := range vals {
			if i > 0 && v == vals[i-1] {
				continue
			}
			b.WriteString(n)
			b.WriteString(v)
		}
	}
	return b.String()
}

// urlVariants returns raw plus raw with the scheme's default port added (if
// it has no port) or removed (if it has exactly that port), and the same
// again without a #fragment if raw has one: whether Twilio signs its
// connection-override fragments (#rc=...) is not documented, and a
// receiver never sees them. The rest of the string is kept byte for byte:
// re-serialising a URL could change escapes.
func urlVariants(raw string) []string {
	out := portVariants(raw)
	if i := strings.IndexByte(raw, '#'); i >= 0 {
		out = append(out, portVariants(raw[:i])...)
	}
	return out
}

func portVariants(raw string) []string {
	out := []string{raw}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return out
	}
	var def string
	switch strings.ToLower(scheme) {
	case "https":
		def = "443"
	case "http":
		def = "80"
	default:
		return out
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo, hostport := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, hostport = authority[:at+1], authority[at+1:]
	}
	host, port := hostport, ""
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.Contains(hostport[i:], "]") {
		host, port = hostport[:i], hostport[i+1:]
	}
	if host == "" {
		return out
	}
	switch port {
	case "":
		if !strings.HasSuffix(hostport, ":") {
			out = append(out, scheme+"://"+userinfo+host+":"+def+tail)
		}
	case def:
		out = append(out, scheme+"://"+userinfo+host+tail)
	}
	return out
}

func badSignature(format string, args ...any) error {
	return fmt.Errorf("twilio: %w: %s", crewcast.ErrBadSignature, fmt.Sprintf(format, args...))
}
