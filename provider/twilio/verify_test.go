package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/crewcast/crewcast"
)

// The published vector from docs/providers.md §2.5 (twilio-go's test).
const (
	vectorToken       = "12345"
	vectorURL         = "https://mycompany.com/myapp.php?foo=1&bar=2"
	vectorURLWithPort = "https://mycompany.com:443/myapp.php?foo=1&bar=2"
	vectorSig         = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	vectorSigWithPort = "kvajT1Ptam85bY51eRf/AJRuM3w="
)

var vectorParams = url.Values{
	"CallSid": {"CA1234567890ABCDE"},
	"Caller":  {"+14158675309"},
	"Digits":  {"1234"},
	"From":    {"+14158675309"},
	"To":      {"+18005551212"},
}

func sigHeader(sig string) http.Header { return http.Header{SignatureHeader: {sig}} }

// rawSig signs an arbitrary string the way Twilio does, to build forgeries
// that differ from the real rule in exactly one respect.
func rawSig(token, s string) string {
	h := hmac.New(sha1.New, []byte(token))
	h.Write([]byte(s))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

func TestSignaturePublishedVector(t *testing.T) {
	if got := Signature(vectorToken, vectorURL, vectorParams); got != vectorSig {
		t.Errorf("Signature = %s, want %s", got, vectorSig)
	}
	if got := Signature(vectorToken, vectorURLWithPort, vectorParams); got != vectorSigWithPort {
		t.Errorf("Signature with :443 = %s, want %s", got, vectorSigWithPort)
	}
	// Twilio signs inconsistently with and without the port, so each URL
	// form accepts both signatures; a configured #fragment may or may not
	// be signed.
	for _, u := range []string{vectorURL, vectorURLWithPort, vectorURL + "#rc=3"} {
		for _, sig := range []string{vectorSig, vectorSigWithPort} {
			if err := Verify(vectorToken, u, sigHeader(sig), vectorParams); err != nil {
				t.Errorf("Verify(%s, %s) = %v", u, sig, err)
			}
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	with := func(f func(url.Values)) url.Values {
		p := url.Values{}
		for k, v := range vectorParams {
			p[k] = slices.Clone(v)
		}
		f(p)
		return p
	}
	good := base64.StdEncoding.EncodeToString
	raw, _ := base64.StdEncoding.DecodeString(vectorSig)
	// Parameters appended in the order they were received, not sorted.
	unsorted := rawSig(vectorToken, vectorURL+"To+18005551212From+14158675309CallSidCA1234567890ABCDECaller+14158675309Digits1234")
	cases := []struct {
		name   string
		token  string
		url    string
		header http.Header
		params url.Values
	}{
		{"wrong token", "54321", vectorURL, sigHeader(vectorSig), vectorParams},
		{"no token", "", vectorURL, sigHeader(vectorSig), vectorParams},
		{"no URL", vectorToken, "", sigHeader(vectorSig), vectorParams},
		{"signed over unsorted params", vectorToken, vectorURL, sigHeader(unsorted), vectorParams},
		{"extra param", vectorToken, vectorURL, sigHeader(vectorSig), with(func(p url.Values) { p.Set("Body", "hi") })},
		{"extra empty param", vectorToken, vectorURL, sigHeader(vectorSig), with(func(p url.Values) { p.Set("X", "") })},
		{"missing param", vectorToken, vectorURL, sigHeader(vectorSig), with(func(p url.Values) { p.Del("Digits") })},
		{"changed value", vectorToken, vectorURL, sigHeader(vectorSig), with(func(p url.Values) { p.Set("Digits", "1235") })},
		{"repeated value added", vectorToken, vectorURL, sigHeader(vectorSig), with(func(p url.Values) { p.Add("Digits", "9") })},
		{"param moved into the URL", vectorToken, vectorURL + "&Digits=1234", sigHeader(vectorSig), with(func(p url.Values) { p.Del("Digits") })},
		{"non-default port", vectorToken, "https://mycompany.com:8443/myapp.php?foo=1&bar=2", sigHeader(vectorSig), vectorParams},
		{"port 80 on https", vectorToken, "https://mycompany.com:80/myapp.php?foo=1&bar=2", sigHeader(vectorSig), vectorParams},
		{"trailing slash", vectorToken, "https://mycompany.com/myapp.php/?foo=1&bar=2", sigHeader(vectorSig), vectorParams},
		{"http instead of https", vectorToken, "http://mycompany.com/myapp.php?foo=1&bar=2", sigHeader(vectorSig), vectorParams},
		{"query reordered", vectorToken, "https://mycompany.com/myapp.php?bar=2&foo=1", sigHeader(vectorSig), vectorParams},
		{"fragment added", vectorToken, vectorURL + "#rc=2", sigHeader(rawSig(vectorToken, vectorURL+"#rc=3CallSidCA1234567890ABCDECaller+14158675309Digits1234From+14158675309To+18005551212")), vectorParams},
		{"host case changed", vectorToken, "https://MyCompany.com/myapp.php?foo=1&bar=2", sigHeader(vectorSig), vectorParams},
		{"header missing", vectorToken, vectorURL, http.Header{}, vectorParams},
		{"header empty", vectorToken, vectorURL, sigHeader(""), vectorParams},
		{"header not base64", vectorToken, vectorURL, sigHeader("not base64!"), vectorParams},
		{"header URL-safe base64", vectorToken, vectorURL, sigHeader(base64.URLEncoding.EncodeToString(raw)), vectorParams},
		{"signature 19 bytes", vectorToken, vectorURL, sigHeader(good(raw[:19])), vectorParams},
		{"signature 32 bytes (HMAC-SHA256 size)", vectorToken, vectorURL, sigHeader(good(append(raw[:20:20], make([]byte, 12)...))), vectorParams},
		{"signature all zero", vectorToken, vectorURL, sigHeader(good(make([]byte, 20))), vectorParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(tc.token, tc.url, tc.header, tc.params); !errors.Is(err, crewcast.ErrBadSignature) {
				t.Errorf("Verify = %v, want ErrBadSignature", err)
			}
		})
	}
	// Reordering the received parameters is not a change: Twilio signs
	// them sorted, so any arrival order verifies.
	reordered, err := url.ParseQuery("To=%2B18005551212&Digits=1234&From=%2B14158675309&Caller=%2B14158675309&CallSid=CA1234567890ABCDE")
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(vectorToken, vectorURL, sigHeader(vectorSig), reordered); err != nil {
		t.Errorf("same params in another order: %v", err)
	}
}

func TestVerifyParamOrderingRules(t *testing.T) {
	const u = "https://crew.example.com/hook"
	// Names sort before concatenation: "A" < "AB", although "ABc" < "Az"
	// would put them the other way round (twilio-go sorts the pairs).
	p := url.Values{"A": {"z"}, "AB": {"c"}}
	want := rawSig(testToken, u+"Az"+"ABc")
	if got := Signature(testToken, u, p); got != want {
		t.Errorf("Signature = %s, want names-sorted %s", got, want)
	}
	// Repeated names: values sorted and deduplicated, as twilio-node does.
	p = url.Values{"MediaUrl": {"b", "a", "b"}, "Body": {"x"}}
	want = rawSig(testToken, u+"Bodyx"+"MediaUrla"+"MediaUrlb")
	if got := Signature(testToken, u, p); got != want {
		t.Errorf("repeated values: Signature = %s, want %s", got, want)
	}
	if err := Verify(testToken, u, sigHeader(want), p); err != nil {
		t.Errorf("Verify with repeated values: %v", err)
	}
	// No params at all signs the URL alone.
	if got := Signature(testToken, u, nil); got != rawSig(testToken, u) {
		t.Errorf("no params: %s", got)
	}
}

func TestURLVariants(t *testing.T) {
	cases := map[string][]string{
		"https://h.example/p?q=1":  {"https://h.example/p?q=1", "https://h.example:443/p?q=1"},
		"https://h.example:443/p":  {"https://h.example:443/p", "https://h.example/p"},
		"http://h.example/p":       {"http://h.example/p", "http://h.example:80/p"},
		"http://h.example:80":      {"http://h.example:80", "http://h.example"},
		"https://h.example:8443/p": {"https://h.example:8443/p"},
		"https://h.example:80/p":   {"https://h.example:80/p"},
		"https://h.example?x=1":    {"https://h.example?x=1", "https://h.example:443?x=1"},
		"https://u:pw@h.example/p": {"https://u:pw@h.example/p", "https://u:pw@h.example:443/p"},
		"https://[::1]/p":          {"https://[::1]/p", "https://[::1]:443/p"},
		"https://[::1]:443/p":      {"https://[::1]:443/p", "https://[::1]/p"},
		"https://h.example/p%2Fq?a=%20#rc=3": {"https://h.example/p%2Fq?a=%20#rc=3", "https://h.example:443/p%2Fq?a=%20#rc=3",
			"https://h.example/p%2Fq?a=%20", "https://h.example:443/p%2Fq?a=%20"},
		"ftp://h.example/p":    {"ftp://h.example/p"},
		"not a url":            {"not a url"},
		"https://":             {"https://"},
		"https://h.example:/p": {"https://h.example:/p"},
	}
	for in, want := range cases {
		if got := urlVariants(in); !slices.Equal(got, want) {
			t.Errorf("urlVariants(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVerifyHeaderNameIgnoresCase(t *testing.T) {
	for _, name := range []string{"x-twilio-signature", "X-TWILIO-SIGNATURE", "X-Twilio-Signature"} {
		h := http.Header{name: {vectorSig}}
		if err := Verify(vectorToken, vectorURL, h, vectorParams); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
