package e2e

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// replyCase is one line of group/testdata/replies.tsv: a real-world reply
// and what it is (stop, start, help, possible or -).
type replyCase struct{ text, want string }

func loadReplyCases(t *testing.T) []replyCase {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "group", "testdata", "replies.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []replyCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			text, want, _ := strings.Cut(line, "\t")
			out = append(out, replyCase{text, want})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOptOutRepliesThroughSimulator sends every classifier case as a
// signed inbound webhook from `crewcast sim` to `crewcast serve`, one
// recipient each, and checks which numbers end up suppressed (exactly the
// opt-outs) and which replies are flagged possible_opt_out.
func TestOptOutRepliesThroughSimulator(t *testing.T) {
	cases := loadReplyCases(t)
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20")
	_, base := startServe(t, "serve", serveEnv(t, simURL, simURL), "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx")
	relay.setUpstream(base)
	to := numbers(len(cases))
	id := createGroup(t, base, to, "Crew call: site B, 7:00. Reply YES or NO.")
	pollGroup(t, base, adminKey, id, 60*time.Second, "every recipient delivered", func(g groupView) bool {
		return g.Counts["delivered"] == len(cases)
	})
	for i, c := range cases {
		body := map[string]string{"from": to[i], "to": from, "text": c.text}
		if _, err := call(http.MethodPost, simURL+"/sim/inbound", simToken, body, nil, http.StatusAccepted); err != nil {
			t.Fatal(err)
		}
	}
	type reply struct {
		Number         string `json:"number"`
		Text           string `json:"text"`
		PossibleOptOut bool   `json:"possible_opt_out"`
	}
	var replies struct {
		Replies []reply `json:"replies"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, err := call(http.MethodGet, base+"/v1/replies?limit=1000&group_id="+id, adminKey, nil, &replies, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if len(replies.Replies) >= len(cases) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d replies recorded", len(replies.Replies), len(cases))
		}
	}
	var sup struct {
		Suppressions []struct {
			Number string `json:"number"`
			Reason string `json:"reason"`
		} `json:"suppressions"`
	}
	if _, err := call(http.MethodGet, base+"/v1/suppressions?limit=1000", adminKey, nil, &sup, http.StatusOK); err != nil {
		t.Fatal(err)
	}
	suppressed := map[string]string{}
	for _, s := range sup.Suppressions {
		suppressed[s.Number] = s.Reason
	}
	flagged := map[string]bool{}
	for _, r := range replies.Replies {
		flagged[r.Number] = r.PossibleOptOut
	}
	for i, c := range cases {
		if reason, ok := suppressed[to[i]]; ok != (c.want == "stop") || ok && reason != "stop" {
			t.Errorf("%q (%s): suppressed %v (%q), want %v", c.text, c.want, ok, reason, c.want == "stop")
		}
		if flagged[to[i]] != (c.want == "possible") {
			t.Errorf("%q (%s): possible_opt_out %v", c.text, c.want, flagged[to[i]])
		}
	}
}
