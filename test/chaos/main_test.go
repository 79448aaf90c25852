package main

import (
	"io"
	"testing"
)

// A scenario this machine cannot run fails the run unless skipping is asked
// for: a hand run without PostgreSQL must not exit 0 as if it had passed.
func TestNotRunFailsUnlessAllowed(t *testing.T) {
	t.Setenv("CREWCAST_CHAOS_ALLOW_SKIP", "")
	t.Setenv("CI", "")
	cfg, err := parseConfig([]string{"-bin", "/bin/true"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.allowSkip {
		t.Fatal("allowSkip is on by default; want off")
	}
	notRun := scenarioResult{name: "T7"}
	if v, bad := verdictOf(notRun, cfg.allowSkip); !bad {
		t.Fatalf("a scenario not run gives %q and does not fail the run", v)
	}
	if v, bad := verdictOf(notRun, true); bad || v != "NOT RUN" {
		t.Fatalf("with -allow-skip: %q, fails=%v; want NOT RUN, not failing", v, bad)
	}
	if _, bad := verdictOf(scenarioResult{name: "T1", ran: true, problems: []string{"dup"}}, true); !bad {
		t.Fatal("a failing scenario passes under -allow-skip")
	}
	if v, bad := verdictOf(scenarioResult{name: "T1", ran: true}, false); bad || v != "PASS" {
		t.Fatalf("a clean scenario: %q, fails=%v", v, bad)
	}
	cfg, err = parseConfig([]string{"-bin", "/bin/true", "-allow-skip"}, io.Discard)
	if err != nil || !cfg.allowSkip {
		t.Fatalf("-allow-skip not parsed: %v %v", cfg.allowSkip, err)
	}
}
