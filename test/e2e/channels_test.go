package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// simMail is one entry of the simulator's GET /sim/mail.
type simMail struct {
	To      []string `json:"to"`
	Subject string   `json:"subject"`
	Links   []string `json:"links"`
}

func simMailbox(t *testing.T, simURL string) []simMail {
	t.Helper()
	var out struct {
		Mail []simMail `json:"mail"`
	}
	if _, err := call(http.MethodGet, simURL+"/sim/mail", simToken, nil, &out, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	return out.Mail
}

// TestLadderSMSThenEmail (issue 31 acceptance, the sms → email part)
// against `crewcast sim --smtp-addr`: a ladder of the text (at 0) and an
// email step (3 s). Ada answers the text and gets no mail; Bo opens his
// mail's link (the GET changes nothing), presses the button (his answer is
// recorded, once, also when the link is posted again); Cy never answers
// and gets exactly his one mail; no text is sent twice.
func TestLadderSMSThenEmail(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	simProc, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20",
		"--smtp-addr", "127.0.0.1:0")
	smtpURL := strings.TrimSpace(waitLine(t, simProc, "CREWCAST_SMTP_URL=", 10*time.Second))
	env := append(serveEnv(t, simURL, simURL), "CREWCAST_SMTP_URL="+smtpURL, "CREWCAST_EMAIL_FROM=crewcast@example.org")
	_, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx")
	relay.setUpstream(base)

	to := numbers(3)
	ada, bo, cy := to[0], to[1], to[2]
	for i, name := range []string{"ada", "bo", "cy"} {
		body := map[string]any{"number": to[i], "name": name, "email": name + "@example.org"}
		if _, err := call(http.MethodPost, base+"/v1/contacts", adminKey, body, nil, http.StatusCreated); err != nil {
			t.Fatal(err)
		}
	}
	var g struct{ ID string }
	body := map[string]any{"from": from, "to": to, "text": "Crew call 7am at the north gate",
		"responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}},
		"followup":  map[string]any{"steps": []map[string]string{{"after": "3s", "channel": "email"}}}}
	if _, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &g, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	pollGroup(t, base, adminKey, g.ID, 30*time.Second, "every text delivered", func(v groupView) bool { return v.Counts["delivered"] == 3 })
	if _, err := call(http.MethodPost, simURL+"/sim/inbound", simToken, map[string]string{"from": ada, "to": from, "text": "1"}, nil, http.StatusAccepted); err != nil {
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
	mailTo := func(addr string) []simMail {
		var out []simMail
		for _, m := range simMailbox(t, simURL) {
			if len(m.To) == 1 && m.To[0] == addr {
				out = append(out, m)
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(mailTo("bo@example.org")) == 0 || len(mailTo("cy@example.org")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the email step did not reach Bo and Cy: %+v", simMailbox(t, simURL))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := responses(); got[ada] != "1" {
		t.Fatalf("Ada's text answer not recorded: %v", got)
	}
	boMail := mailTo("bo@example.org")[0]
	if len(boMail.Links) < 2 {
		t.Fatalf("Bo's mail has links %v", boMail.Links)
	}
	link := boMail.Links[1] // Cannot
	if _, err := call(http.MethodGet, link, "", nil, nil, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	if got := responses(); got[bo] != "" {
		t.Fatalf("a GET of the link answered for Bo: %v", got)
	}
	for range 2 { // the second POST is a replay: the same answer
		req, _ := http.NewRequest(http.MethodPost, link, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST the link: %d", resp.StatusCode)
		}
	}
	for responses()[bo] != "2" {
		if time.Now().After(deadline) {
			t.Fatalf("Bo's answer by email not recorded: %v", responses())
		}
		time.Sleep(100 * time.Millisecond)
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
	if perNumber[ada] != 1 || perNumber[bo] != 1 || perNumber[cy] != 0 {
		t.Errorf("replies per number %v: want one each from Ada (text) and Bo (email link)", perNumber)
	}
	if n := len(mailTo("ada@example.org")); n != 0 {
		t.Errorf("Ada answered the text and still got %d mails", n)
	}
	if n, m := len(mailTo("bo@example.org")), len(mailTo("cy@example.org")); n != 1 || m != 1 {
		t.Errorf("Bo got %d mails and Cy %d; want exactly one each", n, m)
	}
	ledgerCounts(t, simURL) // no text accepted twice
}
