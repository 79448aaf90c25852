package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `contacts import` takes an email column and `contacts list` shows it
// (and finds a contact by it).
func TestContactsEmailCLI(t *testing.T) {
	e := newCLIEnv(t)
	p := filepath.Join(t.TempDir(), "c.csv")
	if err := os.WriteFile(p, []byte("number,name,email\n+15550100081,Ada,ada@example.org\n+15550100082,Bo,\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := e.client("send", "contacts", "import", p); code != 0 || !strings.Contains(out, "imported: 2 created") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	code, out, errs := e.client("read", "contacts", "list", "--q", "example.org")
	if code != 0 || !strings.Contains(out, "EMAIL") || !strings.Contains(out, "ada@example.org") ||
		strings.Contains(out, "Bo") || !strings.Contains(out, "1 contacts") {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
}
