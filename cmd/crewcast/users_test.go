package main

import (
	"context"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/store"
)

func TestUsersCommands(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	code, out, errs := e.client("admin", "users", "create", "--email", "Dee@example.com", "--name", "Dee Dispatch", "--role", "dispatcher")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	otp := strings.TrimSpace(out)
	if len(otp) < 12 || strings.Contains(otp, " ") || !strings.Contains(errs, "shown only now") {
		t.Fatalf("create printed %q / %q, want the one-time password alone on stdout", out, errs)
	}
	u, err := e.st.UserByEmail(ctx, "dee@example.com")
	if err != nil || u.Role != store.RoleDispatcher || u.Name != "Dee Dispatch" || strings.Contains(u.PasswordHash, otp) {
		t.Fatalf("stored user %+v, %v", u, err)
	}
	// --password-stdin reads the password instead of generating one.
	passwordInput = strings.NewReader("a chosen password here\n")
	defer func() { passwordInput = nil }()
	code, out, errs = e.client("admin", "users", "create", "--email", "vi@example.com", "--name", "Vi", "--role", "viewer", "--password-stdin")
	if code != 0 || strings.Contains(out, "a chosen password") || !strings.Contains(out, "created viewer") {
		t.Fatalf("create --password-stdin: %d %q %q", code, out, errs)
	}
	code, out, _ = e.client("admin", "users", "list")
	if code != 0 || !strings.Contains(out, "dee@example.com") || !strings.Contains(out, "Dee Dispatch") || !strings.Contains(out, "viewer") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	// Reset by email prints a new one-time password and bumps the epoch.
	code, out, errs = e.client("admin", "users", "reset-password", "dee@example.com")
	if code != 0 || strings.TrimSpace(out) == otp || len(strings.TrimSpace(out)) < 12 {
		t.Fatalf("reset-password: %d %q %q", code, out, errs)
	}
	if u2, _ := e.st.UserByID(ctx, u.ID); u2.SessionEpoch != u.SessionEpoch+1 || u2.PasswordHash == u.PasswordHash {
		t.Fatalf("after reset %+v", u2)
	}
	code, out, errs = e.client("admin", "users", "disable", u.ID)
	if code != 0 || !strings.Contains(out, "disabled "+u.ID) {
		t.Fatalf("disable: %d %q %q", code, out, errs)
	}
	if u3, _ := e.st.UserByID(ctx, u.ID); u3.DisabledAt.IsZero() {
		t.Fatal("not disabled")
	}
	// Refusals.
	if code, _, errs := e.client("admin", "users", "create", "--email", "x@example.com", "--name", "X", "--role", "boss"); code == 0 || !strings.Contains(errs, "role") {
		t.Errorf("bad role: %d %s", code, errs)
	}
	if code, _, errs := e.client("send", "users", "list"); code == 0 || !strings.Contains(errs, "403") {
		t.Errorf("non-admin key: %d %s", code, errs)
	}
	if code, _, errs := e.client("admin", "users", "disable", "nobody@example.com"); code == 0 || !strings.Contains(errs, "no user") {
		t.Errorf("unknown email: %d %s", code, errs)
	}
	if code, _, _ := e.client("admin", "users", "create", "--email", "y@example.com"); code != 2 {
		t.Errorf("missing flags: exit %d, want 2", code)
	}
}
