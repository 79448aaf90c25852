package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
)

// mailAPI calls the API as the admin and decodes a JSON answer into out.
func mailAPI(t *testing.T, srv *server.Server, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.URL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		_ = json.Unmarshal(b, out)
	}
	return resp.StatusCode
}

// An email step end to end through the server and the simulator's SMTP
// server: the mail carries one link per option; fetching a link changes
// nothing; pressing its button records the answer.
func TestEmailStepThroughSMTP(t *testing.T) {
	t.Parallel() // its own server and database
	box, err := sim.ServeSMTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	srv := start(t, engine{name: "sqlite", db: t.TempDir() + "/crewcast.db"}, sim.DefaultFaults(), func(c *server.Config) {
		c.SMTPURL, c.EmailFrom = "smtp://"+box.Addr(), "crewcast@example.org"
	})
	ada := "+15550100901"
	if code := mailAPI(t, srv, "POST", "/v1/contacts", map[string]any{"number": ada, "name": "Ada", "email": "ada@example.org"}, nil); code != 201 {
		t.Fatalf("contact: %d", code)
	}
	var g struct{ ID string }
	code := mailAPI(t, srv, "POST", "/v1/groups", map[string]any{"from": testFrom, "to": []string{ada}, "text": "Crew call 7am",
		"responses": []map[string]string{{"key": "1", "label": "Coming"}, {"key": "2", "label": "Cannot"}},
		"followup":  map[string]any{"steps": []map[string]string{{"after": "1s", "channel": "email"}}}}, &g)
	if code != 201 {
		t.Fatalf("create: %d", code)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(box.Mail()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no mail")
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := box.Mail()[0]
	if m.To[0] != "ada@example.org" || !strings.HasPrefix(m.Subject, "Reminder: Crew call 7am") || len(m.Links) != 2 || !m.HTML {
		t.Fatalf("mail %+v", m)
	}
	response := func() string {
		var out struct{ Recipients []struct{ Response string } }
		mailAPI(t, srv, "GET", "/v1/groups/"+g.ID+"/recipients", nil, &out)
		if len(out.Recipients) != 1 {
			t.Fatalf("recipients %+v", out)
		}
		return out.Recipients[0].Response
	}
	resp, err := http.Get(m.Links[1])
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Cannot") || response() != "" {
		t.Fatalf("GET the link: %d %s; response %q", resp.StatusCode, page, response())
	}
	resp, err = http.Post(m.Links[1], "application/x-www-form-urlencoded", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST the link: %d", resp.StatusCode)
	}
	for response() != "2" {
		if time.Now().After(deadline) {
			t.Fatalf("the answer by email was not recorded: %q", response())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(box.Mail()); n != 1 {
		t.Fatalf("%d mails, want 1", n)
	}
}
