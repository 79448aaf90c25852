package main

import (
	"context"
	"strings"
	"testing"
)

// The commands with subcommands share pickSubcommand: each answers a
// missing, unknown or help subcommand the same way, naming itself.
func TestSubcommandChoice(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"users"}, 2, "crewcast users create"},
		{[]string{"users", "promote"}, 2, `crewcast users: unknown subcommand "promote"`},
		{[]string{"users", "--help"}, 0, "crewcast users reset-password USER"},
		{[]string{"keys", "help"}, 0, "crewcast keys revoke ID"},
		{[]string{"retention"}, 2, "crewcast retention run"},
		{[]string{"retention", "purge"}, 2, `crewcast retention: unknown subcommand "purge"`},
		{[]string{"retention", "-h"}, 0, "crewcast retention status"},
		{[]string{"report", "weekly"}, 2, `crewcast report: unknown report "weekly"`},
		{[]string{"report", "-h"}, 0, "usage: crewcast report deliveries|summary"},
	} {
		code, _, errs := runCLI(context.Background(), c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: %d %q, want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}
