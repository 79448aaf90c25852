package main

import (
	"context"
	"strings"
	"testing"
)

func TestSendersCommands(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	code, out, errs := e.client("admin", "senders", "add", "+15550100001", "--provider", "telnyx", "--pool", "dispatch",
		"--registration", "10dlc", "--campaign", "CMP1", "--status", "approved")
	if code != 0 || !strings.Contains(out, "added +15550100001 (telnyx") || !strings.Contains(out, "1 mps") {
		t.Fatalf("add: %d %q %q", code, out, errs)
	}
	if code, out, errs := e.client("admin", "senders", "add", "--provider", "twilio", "--mps", "0.5", "+15550100002"); code != 0 || !strings.Contains(out, "0.5 mps") {
		t.Fatalf("add (flags first): %d %q %q", code, out, errs)
	}
	s, err := e.st.GetSender(ctx, "+15550100001")
	if err != nil || s.Pool != "dispatch" || s.Registration.CampaignID != "CMP1" || s.Registration.Status != "approved" {
		t.Fatalf("stored %+v, %v", s, err)
	}
	code, out, _ = e.client("admin", "senders", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NUMBER") ||
		!strings.Contains(lines[1], "+15550100002") || !strings.Contains(lines[2], "dispatch") || !strings.Contains(lines[2], "10dlc") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if code, out, errs := e.client("admin", "senders", "remove", "+15550100002"); code != 0 || !strings.Contains(out, "removed +15550100002") {
		t.Fatalf("remove: %d %q %q", code, out, errs)
	}
	if _, err := e.st.GetSender(ctx, "+15550100002"); err == nil {
		t.Fatal("removed sender still stored")
	}
	// Refusals.
	if code, _, errs := e.client("admin", "senders", "remove", "+15550100002"); code == 0 || !strings.Contains(errs, "no sender") {
		t.Errorf("remove unknown: %d %s", code, errs)
	}
	if code, _, errs := e.client("admin", "senders", "add", "+15550100001", "--provider", "twilio"); code == 0 || !strings.Contains(errs, "409") && !strings.Contains(errs, "already") {
		t.Errorf("add twice: %d %s", code, errs)
	}
	if code, _, errs := e.client("admin", "senders", "add", "+15550100003", "--provider", "plivo"); code == 0 || !strings.Contains(errs, "provider") {
		t.Errorf("bad provider: %d %s", code, errs)
	}
	if code, _, _ := e.client("admin", "senders", "add", "+15550100003"); code != 2 {
		t.Errorf("missing --provider: exit %d, want 2", code)
	}
	if code, _, errs := e.client("send", "senders", "list"); code == 0 || !strings.Contains(errs, "403") {
		t.Errorf("non-admin key: %d %s", code, errs)
	}
}
