package e2e

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// calloutView is a callout as GET /v1/groups/{id} shows it.
type calloutView struct {
	Status string         `json:"status"`
	Counts map[string]any `json:"counts"`
	Waves  struct {
		Sent   int     `json:"sent"`
		NextAt *string `json:"next_at"`
	} `json:"waves"`
	Recipients []struct {
		Number   string `json:"number"`
		Status   string `json:"status"`
		Wave     int    `json:"wave"`
		Selected bool   `json:"selected"`
		Standby  bool   `json:"standby"`
	} `json:"recipients"`
}

func pollCallout(t *testing.T, base, id, what string, cond func(calloutView) bool) calloutView {
	t.Helper()
	var g calloutView
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		g = calloutView{}
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

// TestCalloutFillsThroughSimulator: 12 people, need 3, waves of 4 every
// 3 s, against `crewcast sim`. Wave 1 (people 0–3): person 0 declines,
// persons 1 and 2 say YES at the same instant (both selected). Wave 2
// (4–7) goes 3 s later; person 4's YES fills the quota: 8–11 become
// not_needed and wave 3 never goes. Person 5's YES after the fill is
// standby (filled_text); person 1 changes to NO and person 5 takes the
// place (confirmed_text). The simulator's ledger holds exactly the
// expected messages: nobody texted twice the same thing, 8–11 never.
func TestCalloutFillsThroughSimulator(t *testing.T) {
	t.Parallel() // its own processes, files and ports; the kill and database-cut tests stay serial
	relay := newWebhookRelay(newNotifier())
	relaySrv := httptest.NewServer(relay)
	t.Cleanup(relaySrv.Close)
	_, simURL := startSim(t, "--seed", "1", "--telnyx-webhook-url", relaySrv.URL+"/webhooks/telnyx", "--delay-ms", "5,20")
	_, base := startServe(t, "serve", serveEnv(t, simURL, simURL), "--db", filepath.Join(t.TempDir(), "crewcast.db"),
		"--provider", "telnyx", "--send-rate", "0")
	relay.setUpstream(base)
	to := numbers(12)
	const text, confirmed = "Callout: north gate by 7.", "You're on: north gate by 7."
	var out struct {
		ID string `json:"id"`
	}
	body := map[string]any{"from": from, "to": to, "text": text, "mode": "individual",
		"responses": []map[string]string{{"key": "1", "label": "Coming", "ack": "yes"}, {"key": "2", "label": "Can't", "ack": "no"}},
		"quorum":    map[string]any{"response": "1", "count": 3},
		"waves":     map[string]any{"size": 4, "every": "3s"}, "confirmed_text": confirmed}
	if _, err := call(http.MethodPost, base+"/v1/groups", adminKey, body, &out, http.StatusCreated); err != nil {
		t.Fatal(err)
	}
	id := out.ID
	answer := func(i int, text string) {
		t.Helper()
		in := map[string]string{"from": to[i], "to": from, "text": text}
		if _, err := call(http.MethodPost, simURL+"/sim/inbound", simToken, in, nil, http.StatusAccepted); err != nil {
			t.Error(err)
		}
	}
	pollCallout(t, base, id, "wave 1 delivered", func(g calloutView) bool { return numberDelivered(g) == 4 })
	answer(0, "2")
	var wg sync.WaitGroup
	for _, i := range []int{1, 2} { // two YES at the same instant
		wg.Add(1)
		go func() { defer wg.Done(); answer(i, "1") }()
	}
	wg.Wait()
	pollCallout(t, base, id, "wave 2 sent", func(g calloutView) bool { return g.Waves.Sent == 2 })
	answer(4, "1")
	g := pollCallout(t, base, id, "quota filled", func(g calloutView) bool { return g.Counts["not_needed"] == 4.0 })
	if g.Waves.Sent != 2 || g.Waves.NextAt != nil {
		t.Fatalf("after the fill: waves %+v", g.Waves)
	}
	answer(5, "1") // after the fill: standby
	pollCallout(t, base, id, "standby", func(g calloutView) bool { return g.Counts["standby"] == 1.0 })
	answer(1, "2") // a selected person changes their answer
	g = pollCallout(t, base, id, "replaced", func(g calloutView) bool {
		return g.Counts["standby"] == 0.0 && g.Counts["selected"] == 3.0 && g.Recipients[5].Selected
	})
	// Auto-replies and late receipts settle; two more wave periods pass:
	// no wave 3.
	time.Sleep(7 * time.Second)
	g = pollCallout(t, base, id, "final", func(g calloutView) bool { return numberDelivered(g) == 8 })
	for i, r := range g.Recipients {
		wantStatus, wantWave := "delivered", 1+i/4
		if i >= 8 {
			wantStatus, wantWave = "not_needed", 0
		}
		wantSel := i == 2 || i == 4 || i == 5
		if r.Number != to[i] || r.Status != wantStatus || r.Wave != wantWave || r.Selected != wantSel || r.Standby {
			t.Errorf("recipient %d: %+v; want status %s wave %d selected %v", i, r, wantStatus, wantWave, wantSel)
		}
	}
	if g.Counts["not_needed"] != 4.0 || g.Counts["selected"] != 3.0 || g.Counts["standby"] != 0.0 || g.Waves.Sent != 2 {
		t.Errorf("counts %v waves %+v", g.Counts, g.Waves)
	}
	const filled = "Thanks — we have enough people now. You're not needed this time."
	want := map[int][]string{0: {text}, 1: {text, confirmed}, 2: {text, confirmed}, 3: {text}, 4: {text, confirmed},
		5: {text, filled, confirmed}, 6: {text}, 7: {text}}
	sends, dups := ledger(t, simURL)
	if len(dups) != 0 {
		t.Errorf("duplicates in the ledger: %+v", dups)
	}
	got := map[string][]string{}
	for _, s := range sends {
		got[s.To] = append(got[s.To], strings.SplitN(s.Text, "\n", 2)[0])
	}
	for i, num := range to {
		if strings.Join(got[num], "|") != strings.Join(want[i], "|") {
			t.Errorf("person %d: the simulator accepted %q, want %q", i, got[num], want[i])
		}
	}
	if len(sends) != 13 {
		t.Errorf("%d messages in the ledger, want 13", len(sends))
	}
}

func numberDelivered(g calloutView) int {
	n := 0
	for _, r := range g.Recipients {
		if r.Status == "delivered" {
			n++
		}
	}
	return n
}
