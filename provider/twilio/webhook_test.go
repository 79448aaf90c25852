package twilio

import (
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crewcast/crewcast"
)

// signedRequest builds the webhook Twilio would post to hookURL.
func signedRequest(t testing.TB, hookURL string, body []byte) crewcast.WebhookRequest {
	t.Helper()
	params, err := url.ParseQuery(string(body))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(SignatureHeader, Signature(testToken, hookURL, params))
	return crewcast.WebhookRequest{URL: hookURL, Header: h, Body: body}
}

// TestParseWebhookGolden signs every fixture in testdata/webhooks and
// compares the Events with <fixture>.events.json.
func TestParseWebhookGolden(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	files, err := filepath.Glob("testdata/webhooks/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found %d webhook fixtures, want at least 8", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			events, err := c.ParseWebhook(signedRequest(t, testHookURL, body))
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON(t, "webhooks/"+name+".events.json", events)
		})
	}
}

func TestParseWebhookSemantics(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	parse := func(name string) []crewcast.Event {
		t.Helper()
		events, err := c.ParseWebhook(signedRequest(t, testHookURL, readTestdata(t, "webhooks/"+name+".txt")))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return events
	}
	type row struct {
		kind     crewcast.EventKind
		eventID  string
		to       string
		status   crewcast.Status
		provider string
		code     string
		class    crewcast.ErrorClass
	}
	for name, want := range map[string]row{
		"status_sent":                {crewcast.KindStatus, "SM0123456789abcdef0123456789abcdef:sent:", "+15550100001", crewcast.StatusSent, "sent", "", ""},
		"status_delivered":           {crewcast.KindStatus, "SM0123456789abcdef0123456789abcdef:delivered:", "+15550100001", crewcast.StatusDelivered, "delivered", "", ""},
		"status_undelivered_30003":   {crewcast.KindStatus, "SM1123456789abcdef0123456789abcdef:undelivered:30003", "+15550100002", crewcast.StatusFailed, "undelivered", "30003", crewcast.ClassCarrier},
		"status_failed_30006":        {crewcast.KindStatus, "SM2223456789abcdef0123456789abcdef:failed:30006", "+15550100003", crewcast.StatusFailed, "failed", "30006", crewcast.ClassRecipient},
		"status_partially_delivered": {crewcast.KindStatus, "MM3333456789abcdef0123456789abcdef:partially_delivered:", "+15550100004", crewcast.StatusUnknown, "partially_delivered", "", crewcast.ClassUncertain},
		"inbound_sms":                {crewcast.KindInbound, "SM4443456789abcdef0123456789abcdef:received:", "+15550100000", "", "", "", ""},
	} {
		ev := parse(name)
		if len(ev) != 1 {
			t.Errorf("%s: %d events", name, len(ev))
			continue
		}
		e := ev[0]
		got := row{e.Kind, e.EventID, e.To, e.Status, e.ProviderStatus, e.ErrorCode, e.ErrorClass}
		if got != want || e.Provider != "twilio" || !e.OccurredAt.Equal(testNow) {
			t.Errorf("%s: got %+v (provider %q, at %v)\nwant %+v", name, got, e.Provider, e.OccurredAt, want)
		}
	}
	sms := parse("inbound_sms")[0]
	if sms.From != "+15550100001" || sms.Text != "Yes - see you at 7!" || sms.Media != nil {
		t.Errorf("inbound SMS = %+v", sms)
	}
	mms := parse("inbound_mms")[0]
	wantMedia := []string{
		"https://api.twilio.com/2010-04-01/Accounts/AC00000000000000000000000000000001/Messages/MM5553456789abcdef0123456789abcdef/Media/ME01",
		"https://api.twilio.com/2010-04-01/Accounts/AC00000000000000000000000000000001/Messages/MM5553456789abcdef0123456789abcdef/Media/ME02",
	}
	if mms.Kind != crewcast.KindInbound || mms.From != "+15550100002" || mms.Text != "" || !slices.Equal(mms.Media, wantMedia) {
		t.Errorf("inbound MMS = %+v", mms)
	}
	if ev := parse("voice_call"); ev != nil {
		t.Errorf("voice webhook gave %+v, want no events", ev)
	}
}

// TestParseWebhookEventIDFromSignedContent: the I-Twilio-Idempotency-Token
// header is not covered by the signature, so a captured STOP or START
// re-posted with a new token must still be recognised as the same event
// (issue 12 finding 3: it was the EventID, so every replay was new).
func TestParseWebhookEventIDFromSignedContent(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	for _, name := range []string{"status_delivered", "inbound_sms"} {
		body := readTestdata(t, "webhooks/"+name+".txt")
		var ids []string
		for _, token := range []string{"", "b1a4c7d2-retry-stable", "attacker-chosen-1", "attacker-chosen-2"} {
			req := signedRequest(t, testHookURL, body)
			if token != "" {
				req.Header.Set(IdempotencyTokenHeader, token)
			}
			ev, err := c.ParseWebhook(req)
			if err != nil || len(ev) != 1 {
				t.Fatalf("%s: %v %+v", name, err, ev)
			}
			if strings.Contains(ev[0].EventID, token) && token != "" {
				t.Errorf("%s: EventID %q carries the unsigned token", name, ev[0].EventID)
			}
			ids = append(ids, ev[0].EventID)
		}
		for _, id := range ids[1:] {
			if id != ids[0] {
				t.Errorf("%s: EventIDs differ across tokens: %q", name, ids)
				break
			}
		}
	}
}

// TestParseWebhookRepeatedParameters: the signature covers every value of
// a repeated name (sorted), but parsing would read only the first, so a
// signed "Body=A&Body=STOP" could mean either. Such forms are refused.
func TestParseWebhookRepeatedParameters(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	base := string(readTestdata(t, "webhooks/inbound_sms.txt"))
	for _, extra := range []string{"&Body=STOP", "&From=%2B15550100009", "&MessageSid=SMother", "&SmsStatus=delivered"} {
		ev, err := c.ParseWebhook(signedRequest(t, testHookURL, []byte(base+extra)))
		if !errors.Is(err, crewcast.ErrMalformed) {
			t.Errorf("repeated %q: events %+v, err %v; want ErrMalformed", extra, ev, err)
		}
	}
	// A repeated parameter crewcast does not read is harmless.
	if _, err := c.ParseWebhook(signedRequest(t, testHookURL, []byte(base+"&ToCity=X"))); err != nil {
		t.Errorf("repeated unread parameter: %v", err)
	}
}

func TestParseWebhookURLChoice(t *testing.T) {
	body := readTestdata(t, "webhooks/status_delivered.txt")
	const public = "https://crew.example.com"
	behindProxy := newTestClient(t, "http://127.0.0.1:1", func(cfg *Config) { cfg.PublicURL = public + "/" })
	noPublic := newTestClient(t, "http://127.0.0.1:1", nil)

	signedFor := func(signedURL, reqURL string) crewcast.WebhookRequest {
		r := signedRequest(t, signedURL, body)
		r.URL = reqURL
		return r
	}
	cases := []struct {
		name   string
		c      *Client
		req    crewcast.WebhookRequest
		wantOK bool
	}{
		{"absolute URL used as is", noPublic, signedFor(testHookURL, testHookURL), true},
		{"absolute URL wins over PublicURL", behindProxy, signedFor("https://other.example/hook", "https://other.example/hook"), true},
		{"path joined to PublicURL", behindProxy, signedFor(public+"/webhooks/twilio?g=1", "/webhooks/twilio?g=1"), true},
		{"empty URL means PublicURL", behindProxy, signedFor(public+"/", ""), true},
		{"path without PublicURL", noPublic, signedFor(testHookURL, "/webhooks/twilio"), false},
		{"empty URL without PublicURL", noPublic, signedFor(testHookURL, ""), false},
		{"internal URL behind a proxy does not match", behindProxy, signedFor(public+"/webhooks/twilio", "http://127.0.0.1:8080/webhooks/twilio"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.ParseWebhook(tc.req)
			if tc.wantOK && err != nil {
				t.Errorf("err = %v", err)
			}
			if !tc.wantOK && !errors.Is(err, crewcast.ErrBadSignature) {
				t.Errorf("err = %v, want ErrBadSignature", err)
			}
		})
	}
}

func TestParseWebhookVerifiesBeforeInterpreting(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	// A form missing To would be malformed, but unsigned it is rejected
	// for its signature first.
	noTo := []byte("MessageSid=SM1&MessageStatus=delivered&From=%2B15550100000")
	req := crewcast.WebhookRequest{URL: testHookURL, Header: http.Header{SignatureHeader: {Signature(testToken, testHookURL, nil)}}, Body: noTo}
	if _, err := c.ParseWebhook(req); !errors.Is(err, crewcast.ErrBadSignature) || errors.Is(err, crewcast.ErrMalformed) {
		t.Errorf("unsigned: %v, want only ErrBadSignature", err)
	}
	if _, err := c.ParseWebhook(signedRequest(t, testHookURL, noTo)); !errors.Is(err, crewcast.ErrMalformed) || errors.Is(err, crewcast.ErrBadSignature) {
		t.Errorf("signed: %v, want only ErrMalformed", err)
	}
	// A body that is not even a form cannot be verified.
	for _, body := range []string{"%zz", "a=%", `{"MessageSid":"SM1"}; x=1`} {
		req := crewcast.WebhookRequest{URL: testHookURL, Header: http.Header{SignatureHeader: {vectorSig}}, Body: []byte(body)}
		if _, err := c.ParseWebhook(req); !errors.Is(err, crewcast.ErrBadSignature) {
			t.Errorf("%q: %v, want ErrBadSignature", body, err)
		}
	}
	// A single flipped byte in a real form breaks the signature.
	r := signedRequest(t, testHookURL, readTestdata(t, "webhooks/status_delivered.txt"))
	r.Body = []byte(strings.Replace(string(r.Body), "delivered", "delivereD", 1))
	if _, err := c.ParseWebhook(r); !errors.Is(err, crewcast.ErrBadSignature) {
		t.Errorf("flipped byte: %v", err)
	}
}

func TestParseWebhookMalformedAndIgnored(t *testing.T) {
	c := newTestClient(t, "http://127.0.0.1:1", nil)
	for name, body := range map[string]string{
		"status without To":    "MessageSid=SM1&MessageStatus=delivered&From=%2B1",
		"status without From":  "MessageSid=SM1&MessageStatus=delivered&To=%2B2",
		"inbound without From": "MessageSid=SM1&Body=hi&To=%2B2",
	} {
		if _, err := c.ParseWebhook(signedRequest(t, testHookURL, []byte(body))); !errors.Is(err, crewcast.ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
	for name, body := range map[string]string{
		"empty form":                 "",
		"no MessageSid":              "MessageStatus=delivered&To=%2B2&From=%2B1",
		"sid without status or body": "MessageSid=SM1&To=%2B2&From=%2B1",
	} {
		ev, err := c.ParseWebhook(signedRequest(t, testHookURL, []byte(body)))
		if err != nil || ev != nil {
			t.Errorf("%s: %+v, %v; want nothing", name, ev, err)
		}
	}
	// Fallbacks: SmsSid/SmsStatus when the Message* names are absent, an
	// unrecognized status, media without NumMedia.
	ev, err := c.ParseWebhook(signedRequest(t, testHookURL, []byte("SmsSid=SM9&SmsStatus=sent&To=%2B2&From=%2B1")))
	if err != nil || len(ev) != 1 || ev[0].MessageID != "SM9" || ev[0].Status != crewcast.StatusSent || ev[0].EventID != "SM9:sent:" {
		t.Errorf("SmsSid fallback: %+v, %v", ev, err)
	}
	ev, err = c.ParseWebhook(signedRequest(t, testHookURL, []byte("MessageSid=SM9&MessageStatus=teleported&To=%2B2&From=%2B1")))
	if err != nil || len(ev) != 1 || ev[0].Status != crewcast.StatusUnknown || ev[0].ErrorClass != crewcast.ClassUncertain {
		t.Errorf("unrecognized status: %+v, %v", ev, err)
	}
	ev, err = c.ParseWebhook(signedRequest(t, testHookURL, []byte("MessageSid=MM9&Body=&To=%2B2&From=%2B1&MediaUrl0=a&MediaUrl2=c")))
	if err != nil || len(ev) != 1 || ev[0].Kind != crewcast.KindInbound || !slices.Equal(ev[0].Media, []string{"a", "c"}) {
		t.Errorf("media without NumMedia: %+v, %v", ev, err)
	}
	ev, err = c.ParseWebhook(signedRequest(t, testHookURL, []byte("MessageSid=SM9&MessageStatus=delivered&Body=Crew+call&To=%2B2&From=%2B1")))
	if err != nil || len(ev) != 1 || ev[0].Kind != crewcast.KindStatus || ev[0].Text != "Crew call" {
		t.Errorf("status callback with Body: %+v, %v", ev, err)
	}
	ev, err = c.ParseWebhook(signedRequest(t, testHookURL, []byte("MessageSid=SM9&MessageStatus=failed&ErrorCode=21610&To=%2B2&From=%2B1")))
	if err != nil || len(ev) != 1 || !ev[0].OptOut || ev[0].ErrorClass != crewcast.ClassRecipient {
		t.Errorf("opt-out callback: %+v, %v", ev, err)
	}
}

func TestEmptyTwiML(t *testing.T) {
	var doc struct {
		XMLName  xml.Name
		Children []xml.Name `xml:",any"`
	}
	if err := xml.Unmarshal([]byte(EmptyTwiML), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.XMLName.Local != "Response" || len(doc.Children) != 0 || !strings.HasPrefix(EmptyTwiML, "<?xml") {
		t.Errorf("EmptyTwiML = %s", EmptyTwiML)
	}
	if TwiMLContentType != "text/xml" {
		t.Errorf("TwiMLContentType = %s", TwiMLContentType)
	}
}
