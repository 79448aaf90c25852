package server

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlite"
	"github.com/crewcast/crewcast/tracker"
)

// Escalation crews (docs/design.md §12) are resolved to their members' numbers
// from the directory, by id or name; an unknown crew is a 422 naming it.
func TestEscalationCrewsResolveFromTheDirectory(t *testing.T) {
	t.Parallel() // its own server and database
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "crews.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	for i, n := range []string{"+15550100071", "+15550100072", "+15550100073"} {
		if err := st.CreateContact(ctx, store.Contact{ID: "ct_" + string(rune('a'+i)), Number: n, Name: "S" + n[len(n)-1:], CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateCrew(ctx, store.Crew{ID: "cr_sup", Name: "Supervisors", Members: []string{"ct_a", "ct_b"}, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateCrew(ctx, store.Crew{ID: "cr_on", Name: "On call", Members: []string{"ct_b", "ct_c"}, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	resolve := crewNumbers(st)
	got, err := resolve(ctx, []string{"Supervisors", "cr_on"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"+15550100071", "+15550100072", "+15550100073"}; !slices.Equal(got, want) {
		t.Fatalf("numbers %v, want %v (each once)", got, want)
	}
	_, err = resolve(ctx, []string{"Nobody"})
	var ve *tracker.ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "escalate.crews" || ve.Fields[0].Input != "Nobody" {
		t.Fatalf("unknown crew: %v", err)
	}
}
