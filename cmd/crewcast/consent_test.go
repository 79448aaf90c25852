package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 32 item 3: `contacts import` reads the consent columns, and says
// when a row's opted_in was not taken because the number is suppressed.
func TestContactsImportKeepsOptOut(t *testing.T) {
	e := newCLIEnv(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out1 := write("out.csv", "number,name,consent\n+15550100071,Ada,opted_out\n")
	if code, out, errs := e.client("send", "contacts", "import", out1); code != 0 || !strings.Contains(out, "imported: 1 created") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	in := write("in.csv", "number,consent\n+15550100071,opted_in\n")
	code, out, errs := e.client("send", "contacts", "import", in)
	if code != 0 || !strings.Contains(out, "1 row said opted_in for a suppressed number: kept opted_out") {
		t.Fatalf("re-import opting a suppressed number in: %d %q %q", code, out, errs)
	}
}
