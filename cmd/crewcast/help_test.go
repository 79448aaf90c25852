package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// Every help text is pinned by a golden file (go test -run TestHelp
// -update rewrites them), so a change to what users read is reviewed as a
// diff. Help must not depend on the environment: a key or a database URL
// in CREWCAST_* must never show up in it.
func TestHelpGolden(t *testing.T) {
	t.Setenv("CREWCAST_KEY", "cc_secret_from_env")
	t.Setenv("CREWCAST_ADMIN_KEY", "admin_secret_from_env")
	t.Setenv("CREWCAST_DB", "postgres://u:pw@db/x")
	t.Setenv("CREWCAST_SEND_RATE", "7")
	t.Setenv("CREWCAST_SIM_ADDR", "127.0.0.1:1")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"crewcast", []string{"help"}},
		{"serve", []string{"serve", "-h"}},
		{"demo", []string{"demo", "-h"}},
		{"send", []string{"send", "-h"}},
		{"status", []string{"status", "-h"}},
		{"cancel", []string{"cancel", "-h"}},
		{"retry", []string{"retry", "-h"}},
		{"resolve", []string{"resolve", "-h"}},
		{"keys", []string{"keys", "-h"}},
		{"keys-create", []string{"keys", "create", "-h"}},
		{"report", []string{"report", "-h"}},
		{"report-deliveries", []string{"report", "deliveries", "-h"}},
		{"version", []string{"version", "-h"}},
		{"migrate", []string{"migrate", "-h"}},
		{"sim", []string{"sim", "-h"}},
		{"retention", []string{"retention", "-h"}},
		{"erase", []string{"erase", "-h"}},
		{"contacts-import", []string{"contacts", "import", "-h"}},
		{"contacts-list", []string{"contacts", "list", "-h"}},
		{"crews", []string{"crews", "-h"}},
		{"templates", []string{"templates", "-h"}},
		{"groups", []string{"groups", "list", "-h"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(context.Background(), c.args...)
			if code != exitOK {
				t.Errorf("exit %d, want %d", code, exitOK)
			}
			got := stdout + stderr
			for _, secret := range []string{"cc_secret_from_env", "admin_secret_from_env", "pw@db"} {
				if strings.Contains(got, secret) {
					t.Errorf("help shows %q from the environment", secret)
				}
			}
			path := filepath.Join("testdata", "help-"+c.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestHelpGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("help differs from %s (go test -run TestHelpGolden -update rewrites it after review):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// Exit codes are a contract for scripts: 0 done, 1 an error or (send)
// recipients needing attention, 2 a usage error, 3 an interrupted follow
// (TestSendInterrupted).
func TestExitCodes(t *testing.T) {
	e := newCLIEnv(t)
	e.fake.afterCreate = func(id string) {
		if err := e.fake.deliver(id, 0, !strings.HasSuffix(id, "2")); err != nil {
			t.Error(err)
		}
	}
	send := []string{"send", "--from", "+15550100000", "--to", "+15550100001", "--text", "x"}
	for _, c := range []struct {
		name string
		key  string
		args []string
		code int
		msg  string
	}{
		{"send delivered", "send", send, exitOK, ""},
		{"send failed", "send", send, exitFailed, "1 recipient needs attention: 1 failed"},
		{"unknown command", "send", []string{"sned"}, exitUsage, `unknown command "sned"`},
		{"unknown flag", "send", []string{"send", "--form", "x"}, exitUsage, "flag provided but not defined: -form"},
		{"stray argument", "send", append(send, "foo"), exitUsage, `unexpected argument "foo"`},
		{"bad flag value", "send", []string{"send", "--check-after", "soon"}, exitUsage, "invalid value"},
		{"status two ids", "read", []string{"status", "a", "b"}, exitUsage, `unexpected argument "b"`},
		{"status missing group", "read", []string{"status", "grp_nope"}, exitFailed, "404"},
		{"server refuses", "read", send, exitFailed, "403"},
		{"version argument", "read", []string{"version", "now"}, exitUsage, `unexpected argument "now"`},
		{"demo argument", "read", []string{"demo", "now"}, exitUsage, `unexpected argument "now"`},
		{"serve argument", "read", []string{"serve", "now"}, exitUsage, `unexpected argument "now"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := e.client(c.key, c.args...)
			if code != c.code || !strings.Contains(errs, c.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q\nstdout: %s", code, errs, c.code, c.msg, out)
			}
		})
	}
	t.Setenv("CREWCAST_URL", "not a url")
	if code, _, errs := runCLI(context.Background(), "status", "x", "--key", "k"); code != exitUsage || !strings.Contains(errs, "not an http(s) URL") {
		t.Errorf("bad CREWCAST_URL: %d %q", code, errs)
	}
}
