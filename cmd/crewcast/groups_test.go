package main

import (
	"strings"
	"testing"
)

// TestGroupsList drives crewcast groups list with --status and --limit
// against the API: newest first, one line per group with its counts, a
// status filter the server applies, a limit that says more exist, and a
// wrong status refused as a usage error.
func TestGroupsList(t *testing.T) {
	e := newCLIEnv(t)
	if code, out, errs := e.client("read", "groups", "list"); code != 0 || !strings.Contains(out, "0 groups") {
		t.Fatalf("empty: %d %q %q", code, out, errs)
	}
	var ids []string
	for _, text := range []string{"First call", "Second call", "Third call"} {
		code, out, errs := e.client("send", "send", "--from", "+15550100000", "--to", "+15550100001,+15550100002", "--text", text, "--no-follow")
		if code != 0 {
			t.Fatalf("send: %d %q %q", code, out, errs)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	code, out, errs := e.client("read", "groups", "list")
	if code != 0 || !strings.Contains(out, "3 groups") {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
	if i, j := strings.Index(out, "Third call"), strings.Index(out, "First call"); i < 0 || j < 0 || i > j {
		t.Errorf("not newest first:\n%s", out)
	}
	if !strings.Contains(out, "ID") || !strings.Contains(out, "STATUS") || !strings.Contains(out, ids[0]) {
		t.Errorf("list lacks its header or an id:\n%s", out)
	}
	code, out, _ = e.client("read", "groups", "list", "--limit", "2")
	if code != 0 || strings.Contains(out, "First call") || !strings.Contains(out, "Third call") || !strings.Contains(out, "2 groups (more: raise --limit)") {
		t.Errorf("limit 2: %d\n%s", code, out)
	}
	if code, out, errs := e.client("send", "cancel", ids[1]); code != 0 {
		t.Fatalf("cancel: %d %q %q", code, out, errs)
	}
	code, out, _ = e.client("read", "groups", "list", "--status", "canceled")
	if code != 0 || !strings.Contains(out, "Second call") || strings.Contains(out, "Third call") || !strings.Contains(out, "1 group\n") {
		t.Errorf("status canceled: %d\n%s", code, out)
	}
	if code, _, errs := e.client("read", "groups", "list", "--status", "done"); code != 2 || !strings.Contains(errs, "--status") {
		t.Errorf("bad status: %d %q", code, errs)
	}
	if code, _, errs := e.client("read", "groups", "list", "--limit", "0"); code != 2 || !strings.Contains(errs, "--limit") {
		t.Errorf("bad limit: %d %q", code, errs)
	}
}
