package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/crewcast/crewcast/apikey"
	"github.com/crewcast/crewcast/provider/sim"
)

// Finding 12 of issue 12: an Idempotency-Key belongs to the API key that
// used it. The same Idempotency-Key from two API keys makes two groups;
// from the same API key, the same group; with a different body, 422.
func TestIdempotencyKeysAreScopedToTheAPIKey(t *testing.T) {
	t.Parallel() // its own server and database
	forEachEngine(t, func(t *testing.T, eng engine) {
		srv := start(t, eng, sim.Faults{}, nil)
		other, _, err := apikey.Create(context.Background(), srv.Store(), "other sender", []apikey.Scope{apikey.ScopeSend}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		post := func(key, text string) (int, string) {
			t.Helper()
			body, _ := json.Marshal(map[string]any{"from": testFrom, "to": numbers(1), "text": text, "mode": "individual"})
			req, err := http.NewRequest(http.MethodPost, srv.URL()+"/v1/groups", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "shared-retry-key")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var out struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(b, &out)
			return resp.StatusCode, out.ID
		}
		code1, id1 := post(adminKey, testText)
		code2, id2 := post(other, testText)
		if code1 != http.StatusCreated || code2 != http.StatusCreated || id1 == "" || id2 == "" || id1 == id2 {
			t.Fatalf("same Idempotency-Key from two API keys: %d %q and %d %q, want two new groups", code1, id1, code2, id2)
		}
		if code, id := post(other, testText); code != http.StatusOK || id != id2 {
			t.Errorf("repeat by the same API key: %d %q, want 200 %q", code, id, id2)
		}
		if code, _ := post(other, "a different message"); code != http.StatusUnprocessableEntity {
			t.Errorf("same key, different body: %d, want 422", code)
		}
	})
}
