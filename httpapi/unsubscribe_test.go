package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/email"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// An unsubscribe link: GET shows a button and changes nothing; POST (or
// a one-click POST) opts the contact's address out of email, kept as a
// keyed hash; a forged one is a 404.
func TestUnsubscribeLink(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AnswerKey = answerKey })
	ctx := context.Background()
	if err := e.st.CreateContact(ctx, store.Contact{ID: "c1", Number: "+15550100002", Name: "Bo", Email: "Bo@Example.org"}); err != nil {
		t.Fatal(err)
	}
	id, _, err := e.mini.create(ctx, group.Request{From: "+15550100000", Text: "Crew call", To: []string{"+15550100001", "+15550100002"}},
		tracker.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	link := strings.TrimPrefix(email.UnsubscribeLink(answerKey, "", id, 1), "/a/")
	hash := email.OptOutHash(answerKey, "bo@example.org")
	resp, b := e.do("GET", "/a/"+link, "", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Send me no more email") || strings.Contains(string(b), "example.org") {
		t.Fatalf("GET = %d %s", resp.StatusCode, b)
	}
	if out, _ := e.st.EmailOptedOut(ctx, hash); out {
		t.Fatal("a GET opted the address out")
	}
	resp, b = e.do("POST", "/a/"+link, "List-Unsubscribe=One-Click", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "no more email") {
		t.Fatalf("POST = %d %s", resp.StatusCode, b)
	}
	if out, err := e.st.EmailOptedOut(ctx, hash); err != nil || !out {
		t.Fatalf("after the POST: %v %v", out, err)
	}
	// No email on the first recipient's contact: nothing to stop.
	if resp, b := e.do("POST", "/a/"+strings.TrimPrefix(email.UnsubscribeLink(answerKey, "", id, 0), "/a/"), "", "", nil); resp.StatusCode != 200 ||
		!strings.Contains(string(b), "No email to stop") {
		t.Fatalf("no address: %d %s", resp.StatusCode, b)
	}
	forged := email.Sign([]byte("another key, also thirty-two by!"), email.Token{Kind: email.KindUnsubscribe, Group: id, Recipient: 1})
	if resp, _ := e.do("POST", "/a/"+forged, "", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("forged = %d", resp.StatusCode)
	}
}

// /a/{token} is throttled per client: past the burst, 429 with Retry-After.
func TestAnswerLinkThrottled(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AnswerKey = answerKey })
	var last *http.Response
	for range linkBurst + 1 {
		last, _ = e.do("GET", "/a/not-a-token", "", "", nil)
	}
	if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
		t.Fatalf("request %d = %d, want 429 with Retry-After", linkBurst+1, last.StatusCode)
	}
}
