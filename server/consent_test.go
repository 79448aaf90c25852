package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crewcast/crewcast"
	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/server"
	"github.com/crewcast/crewcast/store"
)

// importCSV posts a CSV import and returns its answer.
func importCSV(t *testing.T, srv *server.Server, csv string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/v1/contacts/import", strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminKey)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("import: %d %s", resp.StatusCode, b)
	}
	return out
}

// contactConsent returns the consent state of the contact with number and
// its history ("" when there is no such contact).
func contactConsent(t *testing.T, srv *server.Server, number string) (string, []map[string]any) {
	t.Helper()
	code, b := apiDo(t, srv, http.MethodGet, "/v1/contacts?q="+strings.TrimPrefix(number, "+"), nil)
	var list struct {
		Contacts []struct{ ID, Number, Consent string }
	}
	if code != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("GET /v1/contacts: %d %s", code, b)
	}
	for _, c := range list.Contacts {
		if c.Number == number {
			code, b := apiDo(t, srv, http.MethodGet, "/v1/contacts/"+c.ID+"/consent", nil)
			var h struct{ History []map[string]any }
			if code != http.StatusOK || json.Unmarshal(b, &h) != nil {
				t.Fatalf("GET consent: %d %s", code, b)
			}
			return c.Consent, h.History
		}
	}
	return "", nil
}

// awaitStopConsent waits until the number is suppressed and its consent
// history has n entries.
func awaitStopConsent(t *testing.T, srv *server.Server, number string, n int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sup, err := srv.Store().Suppressed(ctx, []string{number})
		if err != nil {
			t.Fatal(err)
		}
		h, err := srv.Store().ConsentHistory(ctx, number)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := sup[number]; ok && len(h) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the STOP never made it to the list and the history: %v %+v", sup, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// notSentAgain creates a group to number and checks it is opted out and
// the simulator never got a message for it from srv.
func notSentAgain(t *testing.T, srv *server.Server, number, when string) {
	t.Helper()
	id := createGroup(t, srv, []string{number})
	await(t, srv, id, 20*time.Second, "complete", complete)
	if d := deliveries(t, srv, id); d[number].Status != crewcast.StatusOptedOut {
		t.Errorf("%s: a new group to the person who sent STOP: %s, want opted_out", when, d[number].Status)
	}
	if n := ledger(t, srv)[number]; n != 0 {
		t.Errorf("%s: the person who sent STOP was texted %d time(s)", when, n)
	}
}

// Issue 32 item 3: a STOP survives a re-import that says opted_in, a
// restart and an erasure followed by a re-import: the number stays
// suppressed, its contact reads opted_out, and a new group to it is not
// sent. The STOP is in the contact's consent history with its words; the
// erasure deletes that history, not the suppression.
func TestStopSurvivesImportErasureAndRestart(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		ctx := context.Background()
		to := numbers(2)
		file := "number,name,consent\n" + to[0] + ",Ana,opted_in\n" + to[1] + ",Ben,opted_in\n"
		srv1 := start(t, eng, sim.Faults{}, nil)
		importCSV(t, srv1, file)
		if state, h := contactConsent(t, srv1, to[0]); state != store.ConsentOptedIn || len(h) != 1 || h[0]["source"] != "import" {
			t.Fatalf("after the import: %s %+v", state, h)
		}
		id := createGroup(t, srv1, to)
		await(t, srv1, id, 20*time.Second, "complete", complete)
		if _, err := srv1.Sim().Inbound(ctx, to[0], testFrom, "STOP"); err != nil {
			t.Fatal(err)
		}
		awaitStopConsent(t, srv1, to[0], 2)
		state, h := contactConsent(t, srv1, to[0])
		if state != store.ConsentOptedOut || len(h) != 2 || h[1]["source"] != "sms" || h[1]["state"] != "opted_out" || h[1]["text"] != "STOP" {
			t.Fatalf("after the STOP: %s %+v", state, h)
		}
		if rep := importCSV(t, srv1, file); rep["consent_kept_opted_out"] != 1.0 {
			t.Fatalf("re-import opting the STOPped number in: %+v", rep)
		}
		if state, _ := contactConsent(t, srv1, to[0]); state != store.ConsentOptedOut {
			t.Fatalf("after the re-import: %s", state)
		}
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := srv1.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}

		srv2 := start(t, eng, sim.Faults{}, nil)
		if state, h := contactConsent(t, srv2, to[0]); state != store.ConsentOptedOut || len(h) != 2 {
			t.Fatalf("after a restart: %s %+v", state, h)
		}
		notSentAgain(t, srv2, to[0], "after a re-import and a restart")
		code, b := apiDo(t, srv2, http.MethodPost, "/v1/erasure", map[string]string{"number": to[0]})
		if code != http.StatusOK || !strings.Contains(string(b), `"opt_out_kept":true`) {
			t.Fatalf("POST /v1/erasure: %d %s", code, b)
		}
		if state, _ := contactConsent(t, srv2, to[0]); state != "" {
			t.Fatalf("the erased person's contact is still there: %s", state)
		}
		if h, err := srv2.Store().ConsentHistory(ctx, to[0]); err != nil || len(h) != 0 {
			t.Fatalf("the erased person's consent history is still there: %+v, %v", h, err)
		}
		if rep := importCSV(t, srv2, file); rep["consent_kept_opted_out"] != 1.0 {
			t.Fatalf("re-import after the erasure: %+v", rep)
		}
		if state, _ := contactConsent(t, srv2, to[0]); state != store.ConsentOptedOut {
			t.Fatalf("the re-imported erased person: %s, want opted_out", state)
		}
		if err := srv2.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}

		srv3 := start(t, eng, sim.Faults{}, nil)
		if state, _ := contactConsent(t, srv3, to[0]); state != store.ConsentOptedOut {
			t.Fatalf("the re-imported erased person after a restart: %s, want opted_out", state)
		}
		notSentAgain(t, srv3, to[0], "after an erasure, a re-import and a restart")
	})
}
