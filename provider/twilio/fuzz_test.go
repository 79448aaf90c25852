package twilio

import (
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

func webhookFixtures(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob("testdata/webhooks/*.txt")
	if err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzVerify feeds arbitrary URLs, forms and signatures to the webhook
// path: it must never panic and must fail only with ErrBadSignature or
// ErrMalformed; and a signature made by Signature must always verify.
func FuzzVerify(f *testing.F) {
	f.Add(vectorURL, []byte(url.Values(vectorParams).Encode()), vectorSig)
	f.Add("https://[::1]:443/p", []byte("a=1&a=2&a=1"), "")
	f.Add("http://h:80", []byte("%zz"), "AAAA")
	for _, body := range webhookFixtures(f) {
		f.Add(testHookURL, body, "")
	}
	c, err := New(Config{AccountSID: testSID, AuthToken: testToken})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rawURL string, body []byte, sig string) {
		_, err := c.ParseWebhook(crewcast.WebhookRequest{URL: rawURL, Header: http.Header{SignatureHeader: {sig}}, Body: body})
		if err != nil && !errors.Is(err, crewcast.ErrBadSignature) && !errors.Is(err, crewcast.ErrMalformed) {
			t.Fatalf("unexpected error %v", err)
		}
		params, perr := url.ParseQuery(string(body))
		if perr != nil || rawURL == "" {
			return
		}
		for _, u := range urlVariants(rawURL) {
			if err := Verify(testToken, rawURL, http.Header{SignatureHeader: {Signature(testToken, u, params)}}, params); err != nil {
				t.Fatalf("own signature for variant %q of %q rejected: %v", u, rawURL, err)
			}
		}
	})
}

// FuzzParseParams feeds arbitrary forms to the interpreter that runs once a
// signature has verified: it must never panic, fail only with
// ErrMalformed, and produce only well-formed Events.
func FuzzParseParams(f *testing.F) {
	for _, body := range webhookFixtures(f) {
		f.Add(body)
	}
	f.Add([]byte("MessageSid=SM1&MessageStatus=failed&ErrorCode=21610&To=%2B2&From=%2B1"))
	f.Add([]byte("MessageSid=MM1&NumMedia=99999999999&MediaUrl0=a&To=%2B2&From=%2B1"))
	f.Add([]byte("MessageSid=SM1&Body=A&Body=STOP&To=%2B2&From=%2B1"))
	f.Fuzz(func(t *testing.T, body []byte) {
		params, err := url.ParseQuery(string(body))
		if err != nil {
			return
		}
		ev, ok, err := parseParams(params)
		if err != nil {
			if !errors.Is(err, crewcast.ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !ok {
			return
		}
		if ev.Provider != ProviderName || ev.EventID == "" || ev.MessageID == "" || ev.From == "" || ev.To == "" {
			t.Fatalf("incomplete event %+v", ev)
		}
		switch ev.Kind {
		case crewcast.KindInbound:
			if ev.Status != "" || len(ev.Media) > maxMediaParams {
				t.Fatalf("bad inbound event %+v", ev)
			}
		case crewcast.KindStatus:
			if !ev.Status.Valid() {
				t.Fatalf("invalid status in %+v", ev)
			}
			if (ev.Status == crewcast.StatusFailed || ev.Status == crewcast.StatusUnknown) != (ev.ErrorClass != crewcast.ClassNone) {
				t.Fatalf("class %q does not fit status %q", ev.ErrorClass, ev.Status)
			}
		default:
			t.Fatalf("unexpected kind in %+v", ev)
		}
	})
}

// FuzzInterpretResponse feeds arbitrary API answers to the response
// interpreter: it must never panic, every failure must be a classified
// SendError, and waits stay within bounds.
func FuzzInterpretResponse(f *testing.F) {
	for _, name := range []string{"send_response.json", "lookup_response.json"} {
		f.Add(201, readTestdata(f, name), "")
	}
	f.Add(429, []byte(`{"code":20429,"message":"Too Many Requests","status":429}`), "5")
	f.Add(400, []byte(`{"code":"21610"}`), "")
	f.Add(500, []byte(`<html>`), "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Fuzz(func(t *testing.T, status int, body []byte, retry string) {
		msg, err := interpretResponse(status, http.Header{"Retry-After": {retry}}, body, testNow)
		if err == nil {
			if status < 200 || status > 299 || msg == nil || msg.SID == "" {
				t.Fatalf("status %d accepted as %+v", status, msg)
			}
			rs := msg.recipientStatus(crewcast.StatusSent)
			if !rs.Status.Valid() {
				t.Fatalf("invalid status %+v", rs)
			}
			return
		}
		var se *crewcast.SendError
		if !errors.As(err, &se) || se.Class == crewcast.ClassNone || se.HTTPStatus != status {
			t.Fatalf("unclassified error %v", err)
		}
		if se.RetryAfter < 0 || se.RetryAfter > adapter.MaxRetryAfter {
			t.Fatalf("RetryAfter %v out of bounds", se.RetryAfter)
		}
	})
}
