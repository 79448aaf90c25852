package testproc

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sh(t *testing.T, script string, env ...string) *Proc {
	t.Helper()
	p, err := Start("sh", "/bin/sh", []string{"-c", script}, env, filepath.Join(t.TempDir(), "sh.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestWaitURL(t *testing.T) {
	for _, tc := range []struct {
		out, prefix, want string
		ok                bool
	}{
		{"crewcast serving on http://127.0.0.1:41234 (provider telnyx, store sqlite)", "crewcast serving on ", "http://127.0.0.1:41234", true},
		{"crewcast sim listening on http://127.0.0.1:9090 (ledger: …)", "crewcast sim listening on ", "http://127.0.0.1:9090", true},
		{"  board:    http://127.0.0.1:41234/", "crewcast serving on ", "", false},
		{"crewcast serving on nowhere", "crewcast serving on ", "", false},
	} {
		p := sh(t, "echo '"+tc.out+"'")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		got, err := p.WaitURL(ctx, tc.prefix)
		cancel()
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("WaitURL(%q) after %q = %q, %v; want %q, ok=%v", tc.prefix, tc.out, got, err, tc.want, tc.ok)
		}
	}
}

func TestWaitLineTimesOutAndStopKills(t *testing.T) {
	p := sh(t, "trap '' TERM; echo started; sleep 30")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := p.WaitLine(ctx, "never"); err == nil {
		t.Fatal("WaitLine found a line that was never printed")
	}
	if got, err := p.WaitLine(t.Context(), "started"); err != nil || got != "" {
		t.Fatalf("WaitLine(started) = %q, %v", got, err)
	}
	if err := p.Stop(100 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop of a process ignoring SIGTERM = %v, want killed", err)
	}
	if !p.KilledBySIGKILL() || p.Alive() {
		t.Fatalf("after Stop: killed by SIGKILL %v, alive %v", p.KilledBySIGKILL(), p.Alive())
	}
	if err := p.Stop(time.Second); err == nil {
		t.Fatal("Stop of an exited process reported no error")
	}
	if !strings.Contains(Tail(p.LogPath, 5), "started") {
		t.Fatalf("log tail %q lacks the output", Tail(p.LogPath, 5))
	}
}

func TestEnvironmentIsCleaned(t *testing.T) {
	t.Setenv("CREWCAST_FROM_PARENT", "leak")
	p := sh(t, `echo "env:${CREWCAST_FROM_PARENT}/${CREWCAST_SET}"`, "CREWCAST_SET=given")
	got, err := p.WaitLine(t.Context(), "env:")
	if err != nil || got != "/given" {
		t.Fatalf("child saw %q, %v; want only what the caller set", got, err)
	}
	if got := CleanEnv([]string{"PATH=/bin", "CREWCAST_DB=/x", "HOME=/root", "CREWCAST_ADMIN_KEY=k"}); strings.Join(got, ",") != "PATH=/bin,HOME=/root" {
		t.Errorf("CleanEnv = %v", got)
	}
}

func TestWaitLineReportsAnExit(t *testing.T) {
	p := sh(t, "echo hello; exit 3")
	if _, err := p.WaitLine(t.Context(), "never"); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("WaitLine on an exited process = %v", err)
	}
	<-p.Done()
	if p.Err() == nil || p.KilledBySIGKILL() {
		t.Fatalf("exit 3: Err %v, killed %v", p.Err(), p.KilledBySIGKILL())
	}
}
