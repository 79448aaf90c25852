package main

import (
	"context"
	"strings"
	"testing"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
)

// Issue 27 item 4: the doctor says where the hash key comes from —
// configured, generated and stored in the database, or missing — and when
// a configured key differs from the stored one.
func TestDoctorHashKey(t *testing.T) {
	clearEnv(t)
	db := migratedDB(t)
	check := func(want string, args ...string) {
		t.Helper()
		_, out, _ := runOps(append([]string{"doctor", "--db", db}, args...)...)
		var line string
		for l := range strings.SplitSeq(out, "\n") {
			if strings.Contains(l, "hash key:") {
				line = l
			}
		}
		if !strings.Contains(line, want) {
			t.Errorf("hash key line %q lacks %q:\n%s", line, want, out)
		}
	}
	check("missing")
	check("configured", "--hash-key", "k")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureServerKey(context.Background(), store.HashKeyName, []byte("generated")); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	check("generated and stored in the database")
	check("differs from the one stored in the database", "--hash-key", "k")
	check("configured (CREWCAST_HASH_KEY", "--hash-key", "generated")
}
