package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/email"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/tracker"
)

var answerKey = []byte("answer-link-key-of-32-bytes-long")

// GET /a/{token} shows the choice and changes nothing; POST records it as
// the recipient's answer (one event id per link, so a replay is the same
// event); a forged or altered link is a 404; a canceled group's a 410.
func TestAnswerLink(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AnswerKey = answerKey })
	var mu sync.Mutex
	var got []crewcast.Event
	e.svc.IngestFunc = func(_ context.Context, evs []crewcast.Event) (bool, error) {
		mu.Lock()
		got = append(got, evs...)
		mu.Unlock()
		return true, nil
	}
	req := group.Request{From: "+15550100000", Text: "Crew call 7am <north gate>", To: []string{"+15550100001", "+15550100002"},
		Responses: []group.Option{{Key: "1", Label: "Coming"}, {Key: "2", Label: "Can't make it"}}}
	id, _, err := e.mini.create(context.Background(), req, tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok := email.Sign(answerKey, email.Token{Kind: email.KindAnswer, Group: id, Recipient: 1, Option: "2"})
	resp, b := e.do("GET", "/a/"+tok, "", "", nil)
	page := string(b)
	if resp.StatusCode != 200 || !strings.Contains(page, "Can&#39;t make it") || !strings.Contains(page, `<form method="post">`) ||
		!strings.Contains(page, "&lt;north gate&gt;") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET = %d %s", resp.StatusCode, page)
	}
	if len(got) != 0 {
		t.Fatalf("a GET answered: %+v", got)
	}
	for range 2 {
		if resp, b := e.do("POST", "/a/"+tok, "", "", nil); resp.StatusCode != 200 || !strings.Contains(string(b), "recorded") {
			t.Fatalf("POST = %d %s", resp.StatusCode, b)
		}
	}
	if len(got) != 2 || got[0].EventID != got[1].EventID || got[0].From != "+15550100002" || got[0].Text != "2" || got[0].MessageID != id ||
		got[0].Provider != tracker.EmailProvider || got[0].Kind != crewcast.KindInbound || got[0].To != "+15550100000" {
		t.Fatalf("ingested %+v", got)
	}
	other := email.Sign([]byte("another key, also thirty-two by!"), email.Token{Kind: email.KindAnswer, Group: id, Recipient: 1, Option: "2"})
	for _, bad := range []string{other, tok[:len(tok)-3], email.Sign(answerKey, email.Token{Kind: email.KindAnswer, Group: id, Recipient: 9, Option: "2"}),
		email.Sign(answerKey, email.Token{Kind: email.KindAnswer, Group: id, Recipient: 0, Option: "7"})} {
		for _, m := range []string{"GET", "POST"} {
			if resp, _ := e.do(m, "/a/"+bad, "", "", nil); resp.StatusCode != 404 {
				t.Errorf("%s bad link = %d, want 404", m, resp.StatusCode)
			}
		}
	}
	if len(got) != 2 {
		t.Fatalf("a bad link answered: %+v", got)
	}
	if err := e.svc.Cancel(context.Background(), id, "test"); err != nil {
		t.Fatal(err)
	}
	if resp, b := e.do("POST", "/a/"+tok, "", "", nil); resp.StatusCode != http.StatusGone || len(got) != 2 {
		t.Fatalf("after cancel = %d %s", resp.StatusCode, b)
	}
}
