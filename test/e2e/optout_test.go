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
// opt-outs), which replies are flagged possible_opt_out, and that with
// CREWCAST_HELP_REPLY and the default --opt-out-reply provider crewcast
// answers each HELP once and nothing else.
func TestOptOutRepliesThroughSimulator(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	cases := loadReplyCases(t)
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20")
	const helpText = "Crew call alerts from the depot. Reply STOP to end."
	env := append(serveEnv(t, simURL, simURL), "CREWCAST_HELP_REPLY="+helpText) // --opt-out-reply: the default, provider
	_, base := startServe(t, "serve", env, "--db", filepath.Join(t.TempDir(), "crewcast.db"), "--provider", "telnyx")
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
	// Exactly one help reply per HELP/INFO, and nothing else from crewcast.
	sends, _ := ledger(t, simURL)
	for deadline := time.Now().Add(10 * time.Second); countHelp(sends, helpText) < countWant(cases, "help"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
		sends, _ = ledger(t, simURL)
	}
	perNumber := map[string][]string{}
	for _, s := range sends {
		perNumber[s.To] = append(perNumber[s.To], s.Text)
	}
	for i, c := range cases {
		want := []string{"Crew call: site B, 7:00. Reply YES or NO."}
		if c.want == "help" {
			want = append(want, helpText)
		}
		if got := perNumber[to[i]]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q (%s): the simulator accepted %q, want %q", c.text, c.want, got, want)
		}
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

func countHelp(sends []ledgerRow, text string) int {
	n := 0
	for _, s := range sends {
		if s.Text == text {
			n++
		}
	}
	return n
}

func countWant(cases []replyCase, want string) int {
	n := 0
	for _, c := range cases {
		if c.want == want {
			n++
		}
	}
	return n
}
