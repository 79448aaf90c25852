package telnyx

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/internal/adapter"
)

func webhookFixtures(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob("testdata/webhooks/*.json")
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

// FuzzVerify feeds arbitrary headers and bodies to Verify: it must never
// panic, and it must never accept a timestamp outside the window.
func FuzzVerify(f *testing.F) {
	f.Add([]byte(vectorBody), vectorSignature, vectorTimestamp, int64(0))
	f.Add([]byte(vectorBody), vectorSignature, vectorTimestamp, int64(301))
	f.Add([]byte("x"), "", "", int64(0))
	f.Add([]byte("x"), "====", "-1", int64(-5))
	for _, body := range webhookFixtures(f) {
		h := Sign(testPrivateKey, time.Unix(1700000000, 0), body)
		f.Add(body, h.Get(SignatureHeader), h.Get(TimestampHeader), int64(0))
	}
	key, err := ParsePublicKey(testPublicKeyB64)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, sig, ts string, nowOffset int64) {
		now := time.Unix(1700000000, 0).Add(time.Duration(nowOffset%100000) * time.Second)
		h := http.Header{SignatureHeader: {sig}, TimestampHeader: {ts}}
		err := Verify(key, h, body, now, DefaultTolerance)
		if err == nil {
			sec, ok := parseUnixSeconds(ts)
			if !ok {
				t.Fatalf("accepted timestamp %q that does not parse", ts)
			}
			if d := now.Sub(time.Unix(sec, 0)); d > DefaultTolerance || d < -DefaultTolerance {
				t.Fatalf("accepted a timestamp %v away", d)
			}
		} else if !errors.Is(err, crewcast.ErrBadSignature) {
			t.Fatalf("error %v does not wrap ErrBadSignature", err)
		}
	})
}

// FuzzParseEvents feeds arbitrary bodies to the decoder that runs once a
// signature has verified (calling it directly keeps Ed25519 out of the
// loop): it must never panic, fail only with ErrMalformed, and produce only
// well-formed Events.
func FuzzParseEvents(f *testing.F) {
	for _, body := range webhookFixtures(f) {
		f.Add(body)
	}
	f.Add([]byte(`{"data":{"event_type":"message.sent","id":"e","payload":{"id":"m","from":"+1","to":"+2"}}}`))
	f.Add([]byte(`{"data":{"event_type":"message.received","id":1,"payload":{"id":"m","from":{"phone_number":"+1"},"to":["+2"],"cc":"+3","media":["u",{"url":null}]}},"meta":{"attempt":"7"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		events, err := parseEvents(body)
		if err != nil {
			if !errors.Is(err, crewcast.ErrMalformed) || errors.Is(err, crewcast.ErrBadSignature) {
				t.Fatalf("signed body gave %v", err)
			}
			return
		}
		for _, ev := range events {
			if ev.Provider != ProviderName || ev.EventID == "" || ev.MessageID == "" || ev.To == "" {
				t.Fatalf("incomplete event %+v", ev)
			}
			switch ev.Kind {
			case crewcast.KindInbound:
				if ev.Status != "" || ev.From == "" {
					t.Fatalf("bad inbound event %+v", ev)
				}
			case crewcast.KindSent, crewcast.KindStatus:
				if !ev.Status.Valid() {
					t.Fatalf("invalid status in %+v", ev)
				}
				if (ev.Status == crewcast.StatusFailed || ev.Status == crewcast.StatusUnknown) != (ev.ErrorClass != crewcast.ClassNone) {
					t.Fatalf("class %q does not fit status %q", ev.ErrorClass, ev.Status)
				}
			default:
				t.Fatalf("unknown kind in %+v", ev)
			}
		}
	})
}

// FuzzInterpretResponse feeds arbitrary API answers to the response
// interpreter: it must never panic, every failure must be a classified
// SendError, and waits stay within bounds.
func FuzzInterpretResponse(f *testing.F) {
	for _, name := range []string{"send_response.json", "group_mms_response.json", "lookup_response.json"} {
		f.Add(200, readTestdata(f, name), "")
	}
	f.Add(429, []byte(`{"errors":[{"code":"10011"}]}`), "7")
	f.Add(429, []byte(``), "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(403, []byte(`{"errors":[{"code":"40300","detail":"x"}]}`), "")
	f.Add(500, []byte(`<html>`), "")
	f.Fuzz(func(t *testing.T, status int, body []byte, retry string) {
		msg, err := interpretResponse(status, http.Header{"Retry-After": {retry}}, body, testNow)
		if err == nil {
			if status < 200 || status > 299 || msg == nil || msg.ID == "" {
				t.Fatalf("status %d accepted as %+v", status, msg)
			}
			rss := recipientStatuses(msg, crewcast.StatusSent)
			if len(rss) != len(msg.To) {
				t.Fatalf("%d recipients gave %d statuses", len(msg.To), len(rss))
			}
			for _, rs := range rss {
				if !rs.Status.Valid() {
					t.Fatalf("invalid status %+v", rs)
				}
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

// FuzzJSONString: jsonString's fast path decodes every valid JSON string
// literal exactly as encoding/json does.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"+15550100001"`, `""`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", `"tab	"`, `"é"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		if !json.Valid(b) || json.Unmarshal(b, &want) != nil {
			return
		}
		got, err := jsonString(b)
		if err != nil || got != want {
			t.Fatalf("jsonString(%q) = %q, %v; encoding/json gives %q", b, got, err, want)
		}
	})
}
