package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codedView is a group as GET /v1/groups/{id} shows it, with each
// recipient's reply code and answer.
type codedView struct {
	Recipients []struct {
		Number   string `json:"number"`
		Status   string `json:"status"`
		Text     string `json:"text"`
		Code     string `json:"code"`
		Response string `json:"response"`
	} `json:"recipients"`
}

func pollCoded(t *testing.T, base, id, what string, cond func(codedView) bool) codedView {
	t.Helper()
	var g codedView
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		g = codedView{}
		if _, err := call(http.MethodGet, base+"/v1/groups/"+id, adminKey, nil, &g, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if cond(g) {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %+v", what, g)
		}
	}
}

// TestReplyCodesThroughSimulator (issue 29 item 3, design §15): against
// `crewcast sim`, Bob is in two callouts from one number, Ann in the first
// only. The second one's hint shows Bob's code B; Bob's bare "1" is
// ambiguous (kept, applied to neither, one listing message); "2A" and
// "b1" land in their groups; Ann's bare answer works as ever. The ledger
// holds exactly the expected messages, none twice.
func TestReplyCodesThroughSimulator(t *testing.T) {
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20")
	_, base := startServe(t, "serve", serveEnv(t, simURL, simURL), "--db", filepath.Join(t.TempDir(), "crewcast.db"),
		"--provider", "telnyx", "--send-rate", "0")
	relay.setUpstream(base)
	people := numbers(2)
	bob, ann := people[0], people[1]
	responses := []map[string]string{{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "Can't", "ack": "no"}}
	create := func(text string, to []string) string {
		t.Helper()
		var out struct {
			ID string `json:"id"`
		}
		body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual", "responses": responses}
		if _, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &out, http.StatusCreated); err != nil {
			t.Fatal(err)
		}
		return out.ID
	}
	delivered := func(n int) func(codedView) bool {
		return func(g codedView) bool {
			k := 0
			for _, r := range g.Recipients {
				if r.Status == "delivered" {
					k++
				}
			}
			return k == n
		}
	}
	answer := func(who, text string) {
		t.Helper()
		in := map[string]string{"from": who, "to": from, "text": text}
		if _, err := call(http.MethodPost, simURL+"/sim/inbound", simToken, in, nil, http.StatusAccepted); err != nil {
			t.Fatal(err)
		}
	}
	a := create("North gate 7am", []string{bob, ann})
	pollCoded(t, base, a, "a delivered", delivered(2))
	b := create("South gate 9am", []string{bob})
	g := pollCoded(t, base, b, "b delivered", delivered(1))
	if r := g.Recipients[0]; r.Code != "B" || r.Text != "South gate 9am\nReply 1B Coming, 2B Can't" {
		t.Fatalf("bob in b: %+v", r)
	}
	answer(bob, "1") // bare, with two open: ambiguous
	var amb struct {
		Replies []struct {
			GroupID   string `json:"group_id"`
			Text      string `json:"text"`
			Ambiguous bool   `json:"ambiguous"`
		} `json:"replies"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := call(http.MethodGet, base+"/v1/replies?ambiguous=1", adminKey, nil, &amb, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if len(amb.Replies) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ambiguous reply: %+v", amb)
		}
	}
	if r := amb.Replies[0]; r.GroupID != "" || r.Text != "1" || !r.Ambiguous {
		t.Fatalf("ambiguous reply %+v", r)
	}
	answer(bob, "2A")
	answer(bob, "b1")
	answer(ann, "1")
	pollCoded(t, base, a, "2A and ann's answer in a", func(g codedView) bool {
		return g.Recipients[0].Response == "2" && g.Recipients[1].Response == "1"
	})
	pollCoded(t, base, b, "b1 in b", func(g codedView) bool { return g.Recipients[0].Response == "1" })
	// The listing is sent once, after the ambiguous reply's commit.
	var got map[string][]string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		sends, dups := ledger(t, simURL)
		if len(dups) != 0 {
			t.Fatalf("duplicates in the ledger: %+v", dups)
		}
		got = map[string][]string{}
		for _, s := range sends {
			got[s.To] = append(got[s.To], s.Text)
		}
		if len(got[bob]) >= 3 || time.Now().After(deadline) {
			break
		}
	}
	if len(got[bob]) != 3 || got[bob][0] != "North gate 7am\nReply 1 Coming, 2 Can't" ||
		got[bob][1] != "South gate 9am\nReply 1B Coming, 2B Can't" || !strings.Contains(got[bob][2], "A: North gate 7am — Reply 1A Coming, 2A Can't") ||
		!strings.Contains(got[bob][2], "B: South gate 9am — Reply 1B Coming, 2B Can't") {
		t.Errorf("bob was sent %q", got[bob])
	}
	if len(got[ann]) != 1 || got[ann][0] != "North gate 7am\nReply 1 Coming, 2 Can't" {
		t.Errorf("ann was sent %q", got[ann])
	}
}
