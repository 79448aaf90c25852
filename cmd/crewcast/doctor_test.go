package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/provider/sim"
	"github.com/crewcast/crewcast/store/sqlite"
)

// startSim runs the provider simulator for credential checks.
func startSim(t *testing.T) (*sim.Sim, string) {
	t.Helper()
	s, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s, u
}

func migratedDB(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "crewcast.db")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// clearEnv keeps the machine's CREWCAST_* settings out of the doctor.
func clearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CREWCAST_") {
			t.Setenv(k, "")
		}
	}
}

func TestDoctor(t *testing.T) {
	pg := os.Getenv("CREWCAST_TEST_POSTGRES")
	clearEnv(t)
	s, simURL := startSim(t)
	k := s.Keys()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	defer healthy.Close()
	db := migratedDB(t)
	telnyxArgs := func(apiKey, pub, public string) []string {
		return []string{"doctor", "--db", db, "--provider", "telnyx", "--telnyx-api-base", simURL,
			"--telnyx-api-key", apiKey, "--telnyx-public-key", pub, "--public-url", public}
	}

	t.Run("telnyx all good", func(t *testing.T) {
		code, out, errOut := runOps(telnyxArgs(k.TelnyxAPIKey, k.TelnyxPublicKey, healthy.URL)...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
		for _, want := range []string{"(current)", "Telnyx accepted the credentials", "well-formed Ed25519", "/healthz answers", "no problems found"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"wrong api key", telnyxArgs("KEY-wrong", k.TelnyxPublicKey, healthy.URL), []string{"Telnyx refused the credentials (401", "check CREWCAST_TELNYX_API_KEY"}},
		{"bad public key", telnyxArgs(k.TelnyxAPIKey, "bm90IGEga2V5", healthy.URL), []string{"CREWCAST_TELNYX_PUBLIC_KEY is not a Telnyx webhook public key"}},
		{"public url unreachable", telnyxArgs(k.TelnyxAPIKey, k.TelnyxPublicKey, "http://127.0.0.1:1"), []string{"cannot reach http://127.0.0.1:1/healthz"}},
		{"public url not crewcast", telnyxArgs(k.TelnyxAPIKey, k.TelnyxPublicKey, healthy.URL+"/elsewhere"), []string{"answered 404 Not Found"}},
		{"twilio wrong token", []string{"doctor", "--db", db, "--provider", "twilio", "--twilio-api-base", simURL,
			"--twilio-account-sid", k.TwilioAccountSID, "--twilio-auth-token", strings.Repeat("0", 32)},
			[]string{"Twilio refused the credentials"}},
		{"unknown provider", []string{"doctor", "--db", db, "--provider", "carrier-pigeon"}, []string{"unknown provider"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runOps(c.args...)
			if code != 1 || !strings.Contains(errOut, "problem(s) found") {
				t.Fatalf("exit %d:\n%s%s", code, out, errOut)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}

	t.Run("twilio good", func(t *testing.T) {
		code, out, errOut := runOps("doctor", "--db", db, "--provider", "twilio", "--twilio-api-base", simURL,
			"--twilio-account-sid", k.TwilioAccountSID, "--twilio-auth-token", k.TwilioAuthToken)
		if code != 0 || !strings.Contains(out, "Twilio accepted the credentials") {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
	})

	t.Run("database not migrated", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "empty.db")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runOps("doctor", "--db", empty)
		if code != 1 || !strings.Contains(out, "is not a migrated crewcast database; run crewcast migrate") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("database directory missing", func(t *testing.T) {
		code, out, _ := runOps("doctor", "--db", filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
		if code != 1 || !strings.Contains(out, "is not writable") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	t.Run("postgres unreachable", func(t *testing.T) {
		code, out, _ := runOps("doctor", "--db", "postgres://u:secret@127.0.0.1:1/x?connect_timeout=2")
		if code != 1 || !strings.Contains(out, "cannot connect to PostgreSQL") || strings.Contains(out, "secret") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})

	if pg != "" {
		t.Run("postgres reachable", func(t *testing.T) {
			code, out, _ := runOps("doctor", "--db", pg)
			// The shared test database may or may not hold a migrated
			// crewcast schema in its default search path; either way the
			// doctor must have connected and said which.
			if !strings.Contains(out, "PostgreSQL") || strings.Contains(out, "cannot connect") {
				t.Fatalf("exit %d:\n%s", code, out)
			}
		})
	}
}

func TestHealthcheck(t *testing.T) {
	ready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer ready.Close()
	if code, out, errOut := runOps("healthcheck", "--url", ready.URL+"/readyz"); code != 0 || out != "ready\n" {
		t.Fatalf("ready server: exit %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runOps("healthcheck", "--url", ready.URL+"/other"); code != 1 || !strings.Contains(errOut, "503") {
		t.Fatalf("unready server: exit %d %q", code, errOut)
	}
	if code, _, _ := runOps("healthcheck", "--url", "http://127.0.0.1:1/readyz"); code != 1 {
		t.Fatalf("no server: exit %d", code)
	}
}
