package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/twilio"
)

// simCall is one entry of the simulator's GET /sim/calls.
type simCall struct {
	ID      string `json:"id"`
	To      string `json:"to"`
	Say     string `json:"say"`
	Digits  string `json:"digits"`
	Outcome string `json:"outcome"`
}

// TestLadderSMSVoiceEmail (issue 31 acceptance) against `crewcast sim`
// with Twilio: the text at 0, a call at 3 s, a mail at 6 s. Ada answers
// the text (no call, no mail); Bo presses 1 on the call (no mail; his
// gather callback replayed, also with another digit, changes nothing); Cy
// lets the call ring out, opens his mail's link (the GET changes nothing)
// and presses the button; Dee never answers and gets the text, one call
// and one mail, no more.
func TestLadderSMSVoiceEmail(t *testing.T) {
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	simProc, simURL := startSim(t, "--seed", "1", "--twilio-webhook-url", relaySrv.URL+"/webhooks/twilio", "--delay-ms", "5,20",
		"--smtp-addr", "127.0.0.1:0")
	smtpURL := strings.TrimSpace(waitLine(t, simProc, "CREWCAST_SMTP_URL=", 10*time.Second))
	var k struct {
		SID   string `json:"twilio_account_sid"`
		Token string `json:"twilio_auth_token"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/keys", simToken, nil, &k, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	env := []string{"CREWCAST_TWILIO_ACCOUNT_SID=" + k.SID, "CREWCAST_TWILIO_AUTH_TOKEN=" + k.Token, "CREWCAST_TWILIO_API_BASE=" + simURL,
		"CREWCAST_ADMIN_KEY=" + adminKey, "CREWCAST_PUBLIC_URL=" + relaySrv.URL,
		"CREWCAST_SMTP_URL=" + smtpURL, "CREWCAST_EMAIL_FROM=crewcast@example.org"}
	_, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "twilio")
	relay.setUpstream(base)

	to := numbers(4)
	ada, bo, cy, dee := to[0], to[1], to[2], to[3]
	names := []string{"ada", "bo", "cy", "dee"}
	for i, name := range names {
		body := map[string]any{"number": to[i], "name": name, "email": name + "@example.org"}
		if _, err := call(http.MethodPost, base+"/v1/contacts", adminKey, body, nil, http.StatusCreated); err != nil {
			t.Fatal(err)
		}
	}
	for number, answer := range map[string]string{bo: "1", cy: "none", dee: "none"} {
		if _, err := call(http.MethodPost, simURL+"/sim/voice/script", simToken, map[string]string{"to": number, "answer": answer}, nil, http.StatusNoContent); err != nil {
			t.Fatal(err)
		}
	}
	var g struct{ ID string }
	body := map[string]any{"from": from, "to": to, "text": "Crew call 7am at the north gate",
		"responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}},
		"followup":  map[string]any{"steps": []map[string]string{{"after": "3s", "channel": "voice"}, {"after": "6s", "channel": "email"}}}}
	if _, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &g, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	pollGroup(t, base, adminKey, g.ID, 30*time.Second, "every text delivered", func(v groupView) bool { return v.Counts["delivered"] == 4 })
	if _, err := call(http.MethodPost, simURL+"/sim/inbound", simToken, map[string]string{"from": ada, "to": from, "text": "1", "provider": "twilio"},
		nil, http.StatusAccepted); err != nil {
		t.Fatal(err)
	}
	responses := func() map[string]string {
		var out struct {
			Recipients []struct{ Number, Response string } `json:"recipients"`
		}
		if _, err := call(http.MethodGet, base+"/v1/groups/"+g.ID+"/recipients", adminKey, nil, &out, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, r := range out.Recipients {
			m[r.Number] = r.Response
		}
		return m
	}
	deadline := time.Now().Add(30 * time.Second)
	for responses()[ada] != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("Ada's text answer not recorded: %v", responses())
		}
		time.Sleep(100 * time.Millisecond)
	}
	calls := func() map[string][]simCall {
		var out struct {
			Calls []simCall `json:"calls"`
		}
		if _, err := call(http.MethodGet, simURL+"/sim/calls", simToken, nil, &out, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		m := map[string][]simCall{}
		for _, c := range out.Calls {
			m[c.To] = append(m[c.To], c)
		}
		return m
	}
	for responses()[bo] != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("Bo's key press not recorded: %v; calls %v", responses(), calls())
		}
		time.Sleep(100 * time.Millisecond)
	}
	boCall := calls()[bo]
	if len(boCall) != 1 || !strings.Contains(boCall[0].Say, "Press 1 for Coming, press 2 for Cannot") || boCall[0].Digits != "1" {
		t.Fatalf("Bo's call %+v", boCall)
	}
	// Bo's gather callback replayed, exactly and with another digit: the
	// same CallSid's gather, so the same event; his answer stays.
	gatherURL := relaySrv.URL + "/webhooks/twilio/voice?" + url.Values{"g": {g.ID}, "k": {"gather"}, "r": {"1"}, "s": {"f1-1"}}.Encode()
	for _, digit := range []string{"1", "2"} {
		form := url.Values{"AccountSid": {k.SID}, "ApiVersion": {"2010-04-01"}, "CallSid": {boCall[0].ID}, "From": {from}, "To": {bo},
			"Direction": {"outbound-api"}, "CallStatus": {"in-progress"}, "Digits": {digit}, "AnsweredBy": {"human"}}
		req, _ := http.NewRequest(http.MethodPost, gatherURL, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set(twilio.SignatureHeader, twilio.Signature(k.Token, gatherURL, form))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("replayed gather (digit %s): %d", digit, resp.StatusCode)
		}
	}
	mailTo := func(addr string) []simMail {
		var out []simMail
		for _, m := range simMailbox(t, simURL) {
			if len(m.To) == 1 && m.To[0] == addr {
				out = append(out, m)
			}
		}
		return out
	}
	for len(mailTo("cy@example.org")) == 0 || len(mailTo("dee@example.org")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the email step did not reach Cy and Dee: %+v", simMailbox(t, simURL))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cyMail := mailTo("cy@example.org")[0]
	if len(cyMail.Links) < 2 {
		t.Fatalf("Cy's mail has links %v", cyMail.Links)
	}
	link := cyMail.Links[1] // Cannot
	if _, err := call(http.MethodGet, link, "", nil, nil, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if got := responses(); got[cy] != "" {
		t.Fatalf("a GET of the link answered for Cy: %v", got)
	}
	req, _ := http.NewRequest(http.MethodPost, link, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST the link: %d", resp.StatusCode)
	}
	for responses()[cy] != "2" {
		if time.Now().After(deadline) {
			t.Fatalf("Cy's answer by email not recorded: %v", responses())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Past every step: nothing more goes out to anyone.
	time.Sleep(2 * time.Second)
	if got := responses(); got[ada] != "1" || got[bo] != "1" || got[cy] != "2" || got[dee] != "" {
		t.Errorf("responses %v", got)
	}
	var replies struct {
		Replies []struct{ Number string } `json:"replies"`
	}
	if _, err := call(http.MethodGet, base+"/v1/replies?limit=100&group_id="+g.ID, adminKey, nil, &replies, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	perNumber := map[string]int{}
	for _, r := range replies.Replies {
		perNumber[r.Number]++
	}
	if perNumber[ada] != 1 || perNumber[bo] != 1 || perNumber[cy] != 1 || perNumber[dee] != 0 {
		t.Errorf("replies per number %v: want one each from Ada (text), Bo (call) and Cy (email link)", perNumber)
	}
	sends, dups := ledger(t, simURL)
	if len(dups) != 0 {
		t.Errorf("duplicates in the simulator's ledger: %+v", dups)
	}
	var raw struct {
		Sends []struct{ To, Channel string } `json:"sends"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/ledger", simToken, nil, &raw, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range raw.Sends {
		ch := s.Channel
		if ch == "" {
			ch = "sms"
		}
		got[s.To] += ch + " "
	}
	for _, p := range names {
		got[p+"@example.org"] = strconv.Itoa(len(mailTo(p + "@example.org")))
	}
	want := map[string]string{ada: "sms ", bo: "sms voice ", cy: "sms voice ", dee: "sms voice ",
		"ada@example.org": "0", "bo@example.org": "0", "cy@example.org": "1", "dee@example.org": "1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s got %q, want %q (ledger %d rows)", k, got[k], v, len(sends))
		}
	}
	c := calls()
	if c[cy][0].Outcome != "no_answer" || c[dee][0].Outcome != "no_answer" {
		t.Errorf("calls %v", c)
	}
	// Each answer says how it came, and the counts add them up by channel.
	var gv struct {
		Counts struct {
			ByChannel map[string]int `json:"by_channel"`
		} `json:"counts"`
		Recipients []struct {
			Number     string `json:"number"`
			AnsweredBy string `json:"answered_by"`
		} `json:"recipients"`
	}
	if _, err := call(http.MethodGet, base+"/v1/groups/"+g.ID, adminKey, nil, &gv, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, r := range gv.Recipients {
		by[r.Number] = r.AnsweredBy
	}
	if by[ada] != "sms" || by[bo] != "voice" || by[cy] != "email" || by[dee] != "" ||
		gv.Counts.ByChannel["sms"] != 1 || gv.Counts.ByChannel["voice"] != 1 || gv.Counts.ByChannel["email"] != 1 {
		t.Errorf("answered_by %v, counts.by_channel %v", by, gv.Counts.ByChannel)
	}
	// How each call ended is in the journal.
	var events struct {
		Events []struct{ Type string } `json:"events"`
	}
	if _, err := call(http.MethodGet, base+"/v1/groups/"+g.ID+"/events", adminKey, nil, &events, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, e := range events.Events {
		if e.Type == "recipient.call_ended" {
			ended++
		}
	}
	if ended != 3 {
		t.Errorf("%d recipient.call_ended events, want 3 (Bo answered, Cy and Dee no answer)", ended)
	}
}

// TestLadderVoiceTelnyx: the voice step through Telnyx TeXML against
// `crewcast sim`: Ada presses 2 (her answer), Bo is busy (the call's end
// is journaled, no answer); each is called once.
func TestLadderVoiceTelnyx(t *testing.T) {
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20")
	env := append(serveEnv(t, simURL, simURL), "CREWCAST_TELNYX_TEXML_CONNECTION_ID=1773070540731319841")
	_, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx")
	relay.setUpstream(base)
	to := numbers(2)
	ada, bo := to[0], to[1]
	for number, answer := range map[string]string{ada: "2", bo: "busy"} {
		if _, err := call(http.MethodPost, simURL+"/sim/voice/script", simToken, map[string]string{"to": number, "answer": answer}, nil, http.StatusNoContent); err != nil {
			t.Fatal(err)
		}
	}
	var g struct{ ID string }
	body := map[string]any{"from": from, "to": to, "text": "Crew call 7am",
		"responses": []map[string]string{{"key": "Y", "label": "Coming"}, {"key": "N", "label": "Cannot"}},
		"followup":  map[string]any{"steps": []map[string]string{{"after": "2s", "channel": "voice"}}}}
	if _, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &g, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	ended := func() int {
		var events struct {
			Events []struct{ Type string } `json:"events"`
		}
		if _, err := call(http.MethodGet, base+"/v1/groups/"+g.ID+"/events", adminKey, nil, &events, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range events.Events {
			if e.Type == "recipient.call_ended" {
				n++
			}
		}
		return n
	}
	for {
		var out struct {
			Recipients []struct{ Number, Response string } `json:"recipients"`
		}
		if _, err := call(http.MethodGet, base+"/v1/groups/"+g.ID+"/recipients", adminKey, nil, &out, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		resp := map[string]string{}
		for _, r := range out.Recipients {
			resp[r.Number] = r.Response
		}
		if resp[ada] == "N" && resp[bo] == "" && ended() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("responses %v, %d calls ended", resp, ended())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var calls struct {
		Calls []simCall `json:"calls"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/calls", simToken, nil, &calls, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if len(calls.Calls) != 2 {
		t.Fatalf("calls %+v, want one each", calls.Calls)
	}
}
