package httpapi

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// validated holds "METHOD /path" of every documented operation whose
// response checkResponse checked during this test binary's run; the
// coverage check asks each operation for a checked 2xx answer
// (validatedOK), since an error answer's schema is the shared envelope.
var validated sync.Map

// validatedOK holds those of them checked with a 2xx answer.
var validatedOK sync.Map

// notValidated lists the documented operations no httpapi test checks a
// 2xx answer of (empty: every one is checked); the coverage check at the end of
// a full run fails on any other operation left unchecked, and on an entry
// here that a test now checks (so the list only shrinks).
var notValidated = []string{}

// coverageRun runs the tests, then (on a full, passing run: no -run,
// -skip, -fuzz or -list filter, not -short) fails when a documented
// operation's 2xx answer was never validated and it is not in
// notValidated.
type coverageRun struct{ m *testing.M }

func (c coverageRun) Run() int {
	code := c.m.Run()
	if code != 0 || !fullRun() {
		return code
	}
	missing, stale, err := coverage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "response-validation coverage:", err)
		return 1
	}
	for _, op := range missing {
		_, some := validated.Load(op)
		fmt.Fprintf(os.Stderr, "response-validation coverage: %s is documented but no test checked a 2xx answer of it (error answers checked: %v)\n", op, some)
	}
	for _, op := range stale {
		fmt.Fprintf(os.Stderr, "response-validation coverage: %s is in notValidated but a test checked it: remove it\n", op)
	}
	if len(missing)+len(stale) > 0 {
		return 1
	}
	return 0
}

// fullRun reports whether every test of the package ran.
func fullRun() bool {
	for _, name := range []string{"test.run", "test.skip", "test.fuzz", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

// coverage compares the operations the document declares with those the
// tests validated.
func coverage() (missing, stale []string, err error) {
	d, err := docForCoverage()
	if err != nil {
		return nil, nil, err
	}
	for path, item := range d.Paths.Map() {
		for method := range item.Operations() {
			op := method + " " + path
			_, ok := validatedOK.Load(op)
			allowed := slices.Contains(notValidated, op)
			switch {
			case !ok && !allowed:
				missing = append(missing, op)
			case ok && allowed:
				stale = append(stale, op)
			}
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	return missing, stale, nil
}

// TestCoverageCountsOperations checks the bookkeeping the coverage check
// relies on: a checked response marks its operation.
func TestCoverageCountsOperations(t *testing.T) {
	e := newEnv(t, nil)
	e.do("GET", "/v1/groups", "", "admin", nil)
	if _, ok := validatedOK.Load("GET /v1/groups"); !ok {
		t.Fatal("GET /v1/groups was checked but not recorded")
	}
	for _, op := range notValidated {
		if !strings.Contains(op, " /") {
			t.Errorf("notValidated entry %q is not METHOD /path", op)
		}
	}
}
