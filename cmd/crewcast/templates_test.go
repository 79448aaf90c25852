package main

import (
	"strings"
	"testing"
)

// TestTemplatesCommands drives crewcast templates list|create|show|delete
// against the real API: a template created with responses is listed, shown
// with its text and options, refused without text, and deleted by name.
func TestTemplatesCommands(t *testing.T) {
	e := newCLIEnv(t)
	if code, out, errs := e.client("read", "templates", "list"); code != 0 || !strings.Contains(out, "0 templates") {
		t.Fatalf("empty list: %d %q %q", code, out, errs)
	}
	code, out, errs := e.client("send", "templates", "create", "Crew call", "--text", "Hi {{first_name}}, crew call 7am?", "--responses", "1=Coming,2=Cannot")
	if code != 0 || !strings.HasPrefix(out, "tpl_") || !strings.Contains(out, "Crew call") {
		t.Fatalf("create: %d %q %q", code, out, errs)
	}
	id := strings.Fields(out)[0]
	if code, _, errs := e.client("send", "templates", "create", "Empty"); code != 2 || !strings.Contains(errs, "--text") {
		t.Fatalf("create without text: %d %q", code, errs)
	}
	if code, _, errs := e.client("send", "templates", "create", "Bad", "--text", "Hi {{nope}}"); code != 1 || !strings.Contains(errs, "nope") {
		t.Fatalf("create with an unknown variable: %d %q", code, errs)
	}
	code, out, _ = e.client("read", "templates", "list")
	if code != 0 || !strings.Contains(out, "Crew call") || !strings.Contains(out, id) || !strings.Contains(out, "1 template") {
		t.Fatalf("list: %d %q", code, out)
	}
	for _, ref := range []string{"Crew call", id} {
		code, out, errs = e.client("read", "templates", "show", ref)
		if code != 0 || !strings.Contains(out, "Hi {{first_name}}, crew call 7am?") || !strings.Contains(out, "1=Coming") || !strings.Contains(out, "2=Cannot") {
			t.Fatalf("show %s: %d %q %q", ref, code, out, errs)
		}
	}
	if code, _, errs := e.client("read", "templates", "show", "Nobody"); code != 1 || !strings.Contains(errs, "no template") {
		t.Fatalf("show unknown: %d %q", code, errs)
	}
	if code, out, errs := e.client("send", "templates", "delete", "Crew call"); code != 0 || !strings.Contains(out, "deleted template Crew call") {
		t.Fatalf("delete: %d %q %q", code, out, errs)
	}
	if code, out, _ := e.client("read", "templates"); code != 0 || !strings.Contains(out, "0 templates") {
		t.Fatalf("after delete: %d %q", code, out)
	}
}
