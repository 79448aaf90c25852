package sim

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestTwilioAuth(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	k := c.keys
	other := "AC" + strings.Repeat("0", 32)
	for _, tc := range []struct{ name, pathSID, user, pass string }{
		{"no auth", k.TwilioAccountSID, "", ""},
		{"wrong token", k.TwilioAccountSID, k.TwilioAccountSID, "nope"},
		{"wrong user", k.TwilioAccountSID, other, k.TwilioAuthToken},
		{"other account in path", other, k.TwilioAccountSID, k.TwilioAuthToken},
	} {
		r := c.mustDo(c.twilioReq(tc.pathSID, tc.user, tc.pass, twilioBody(alice, "x")))
		var e tTwilioError
		r.decode(t, &e)
		if r.status != http.StatusUnauthorized || e.Code != 20003 || e.Status != 401 || e.Message == "" ||
			e.MoreInfo != "https://www.twilio.com/docs/errors/20003" {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	req, err := http.NewRequest(http.MethodGet, c.base+"/2010-04-01/Accounts/"+k.TwilioAccountSID+"/Messages/SMx.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.mustDo(req); r.status != http.StatusUnauthorized {
		t.Errorf("GET without auth: %d", r.status)
	}
	if got := c.ledger(); len(got) != 0 {
		t.Fatalf("unauthorised sends recorded: %v", got)
	}
}

var sidPattern = regexp.MustCompile(`^SM[0-9a-f]{32}$`)

func TestTwilioSendAndStatusCallbacks(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	s, c := newSim(t, Config{TwilioWebhookURL: rc.url("/webhooks/twilio")})
	r := c.twilioSend(twilioBody(alice, "Crew call 7am"))
	var m struct {
		SID, Status, To, From, Body, Direction string
		AccountSID                             string  `json:"account_sid"`
		DateSent                               *string `json:"date_sent"`
		ErrorCode                              *int    `json:"error_code"`
	}
	r.decode(t, &m)
	if r.status != http.StatusCreated || !sidPattern.MatchString(m.SID) || m.Status != "queued" || m.To != alice ||
		m.From != ourNumber || m.Body != "Crew call 7am" || m.Direction != "outbound-api" || m.AccountSID != c.keys.TwilioAccountSID {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	if led := c.ledger(); len(led) != 1 || led[0].ID != m.SID || led[0].To != alice || led[0].Provider != "twilio" {
		t.Fatalf("ledger: %+v", led)
	}

	var statuses, tokens []string
	for _, h := range rc.collect(t, 3) {
		f := twilioForm(t, s, h)
		if f.Get("MessageSid") != m.SID || f.Get("AccountSid") != c.keys.TwilioAccountSID || f.Get("From") != ourNumber ||
			f.Get("To") != alice || f.Get("ApiVersion") != "2010-04-01" || f.Get("ErrorCode") != "" {
			t.Fatalf("callback: %s", h.body)
		}
		statuses = append(statuses, f.Get("MessageStatus"))
		tokens = append(tokens, h.header.Get("I-Twilio-Idempotency-Token"))
		if f.Get("MessageStatus") == "delivered" && len(f.Get("RawDlrDoneDate")) != 10 {
			t.Fatalf("RawDlrDoneDate %q", f.Get("RawDlrDoneDate"))
		}
	}
	if !slices.Equal(statuses, []string{"queued", "sent", "delivered"}) {
		t.Fatalf("statuses %v", statuses)
	}
	if tokens[0] == tokens[1] || tokens[1] == tokens[2] || tokens[0] == tokens[2] {
		t.Fatalf("callbacks share a token: %v", tokens)
	}
	rc.drained(t, s)

	g := c.twilioGet(m.SID)
	g.decode(t, &m)
	if g.status != http.StatusOK || m.Status != "delivered" || m.DateSent == nil || m.ErrorCode != nil {
		t.Fatalf("GET: %d %s", g.status, g.body)
	}
	if g := c.twilioGet("SMnope"); g.status != http.StatusNotFound {
		t.Fatalf("GET unknown: %d", g.status)
	}
}

func TestTwilioValidation(t *testing.T) {
	t.Parallel()
	_, c := newSim(t, Config{})
	many := twilioBody(alice, "x")
	for range 11 {
		many.Add("MediaUrl", "https://example.com/a.png")
	}
	for _, tc := range []struct {
		name string
		form url.Values
		code int
	}{
		{"no To", url.Values{"From": {ourNumber}, "Body": {"x"}}, 21604},
		{"bad To", url.Values{"From": {ourNumber}, "To": {"12"}, "Body": {"x"}}, 21211},
		{"no From", url.Values{"To": {alice}, "Body": {"x"}}, 21603},
		{"no Body", url.Values{"From": {ourNumber}, "To": {alice}}, 21602},
		{"eleven media", many, 21623},
		{"bad callback", url.Values{"From": {ourNumber}, "To": {alice}, "Body": {"x"}, "StatusCallback": {"nope"}}, 21609},
	} {
		r := c.twilioSend(tc.form)
		var e tTwilioError
		r.decode(t, &e)
		if r.status != http.StatusBadRequest || e.Code != tc.code || e.Status != 400 {
			t.Errorf("%s: %d %s, want 400 code %d", tc.name, r.status, r.body, tc.code)
		}
	}
	if got := c.ledger(); len(got) != 0 {
		t.Fatalf("invalid sends recorded: %v", got)
	}
	mms := twilioBody(alice, "x")
	mms.Add("MediaUrl", "https://example.com/a.png")
	var m struct{ SID string }
	c.twilioSend(mms).decode(t, &m)
	if !strings.HasPrefix(m.SID, "MM") {
		t.Fatalf("MMS sid %q", m.SID)
	}
}

func TestTwilioRetries(t *testing.T) {
	t.Parallel()
	t.Run("one retry, same token", func(t *testing.T) {
		t.Parallel()
		// Every odd attempt fails, so each callback succeeds on its retry.
		rc := newReceiver(t, func(n int, _ *http.Request, _ hook) int {
			if n%2 == 1 {
				return http.StatusInternalServerError
			}
			return http.StatusNoContent
		})
		s, c := newSim(t, Config{TwilioWebhookURL: rc.url("/tw")})
		c.twilioSend(twilioBody(alice, "x"))
		hs := rc.collect(t, 6)
		var statuses []string
		for i := 0; i < 6; i += 2 {
			a, b := hs[i], hs[i+1]
			twilioForm(t, s, a)
			f := twilioForm(t, s, b)
			if a.header.Get("I-Twilio-Idempotency-Token") != b.header.Get("I-Twilio-Idempotency-Token") || string(a.body) != string(b.body) {
				t.Fatalf("retry differs: %s / %s", a.header.Get("I-Twilio-Idempotency-Token"), b.header.Get("I-Twilio-Idempotency-Token"))
			}
			statuses = append(statuses, f.Get("MessageStatus"))
		}
		if !slices.Equal(statuses, []string{"queued", "sent", "delivered"}) {
			t.Fatalf("statuses %v", statuses)
		}
		rc.drained(t, s)
	})
	for _, tc := range []struct {
		name     string
		fragment string
		cfg      int
		want     int // attempts per callback
	}{
		{"default", "", 0, 2},
		{"rc=3 fragment", "#rc=3", 0, 4},
		{"rc=0 fragment", "#rc=0", 0, 1},
		{"configured none", "", NoTwilioRetries, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(int, *http.Request, hook) int { return http.StatusBadGateway })
			s, c := newSim(t, Config{TwilioRetries: tc.cfg})
			form := twilioBody(alice, "x")
			form.Set("StatusCallback", rc.url("/tw"+tc.fragment))
			c.twilioSend(form)
			counts := map[string]int{}
			for _, h := range rc.collect(t, 3*tc.want) {
				f := twilioForm(t, s, h) // the fragment is not part of the signed URL
				counts[f.Get("MessageStatus")+"/"+h.header.Get("I-Twilio-Idempotency-Token")]++
			}
			if len(counts) != 3 {
				t.Fatalf("callbacks %v", counts)
			}
			for k, n := range counts {
				if n != tc.want {
					t.Fatalf("%s posted %d times, want %d", k, n, tc.want)
				}
			}
			rc.drained(t, s)
		})
	}
}

func TestTwilioFailuresAndUnknown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		faults   Faults
		statuses []string
		code     string
	}{
		{"undelivered", Faults{FailRate: 1, TwilioFailCodes: []string{"30003"}}, []string{"queued", "sent", "undelivered"}, "30003"},
		{"failed, never sent", Faults{FailRate: 1, TwilioFailCodes: []string{"30002"}}, []string{"queued", "failed"}, "30002"},
		{"unknown stops at sent", Faults{UnknownRate: 1}, []string{"queued", "sent"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, nil)
			s, c := newSim(t, Config{TwilioWebhookURL: rc.url("/tw"), Faults: tc.faults})
			var m struct{ SID string }
			c.twilioSend(twilioBody(alice, "x")).decode(t, &m)
			var statuses []string
			var last url.Values
			for _, h := range rc.collect(t, len(tc.statuses)) {
				last = twilioForm(t, s, h)
				statuses = append(statuses, last.Get("MessageStatus"))
			}
			rc.drained(t, s)
			if !slices.Equal(statuses, tc.statuses) {
				t.Fatalf("statuses %v, want %v", statuses, tc.statuses)
			}
			if last.Get("ErrorCode") != tc.code {
				t.Fatalf("ErrorCode %q, want %q", last.Get("ErrorCode"), tc.code)
			}
			var got struct {
				Status    string
				ErrorCode *int `json:"error_code"`
			}
			c.twilioGet(m.SID).decode(t, &got)
			if got.Status != tc.statuses[len(tc.statuses)-1] || (tc.code != "") != (got.ErrorCode != nil) {
				t.Fatalf("GET status %q error_code %v", got.Status, got.ErrorCode)
			}
		})
	}
}
