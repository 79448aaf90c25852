package sqlq

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// crewReads is a Querier that answers CrewContacts' statements from a
// script: the crew's position range, then each read by the condition it
// has (the lower half, the upper half, or none: the whole crew), each
// member row carrying the crew's updated_at as that read saw it. It
// records the reads in the order they came.
type crewReads struct {
	lo, hi int64
	// lower, upper and whole are the member ids and crew updated_at each
	// read returns.
	lower, upper, whole crewRead

	mu    sync.Mutex
	reads []string
}

type crewRead struct {
	ids     []string
	updated int64
}

func (q *crewReads) QueryRow(_ context.Context, query string, _ ...any) Row {
	if !strings.Contains(query, "MIN(position)") {
		return errRow{fmt.Errorf("unexpected QueryRow %q", query)}
	}
	return scriptRows{rows: [][]any{{q.lo, q.hi}}}.first()
}

func (q *crewReads) Query(_ context.Context, query string, _ ...any) (Rows, error) {
	var name string
	var r crewRead
	switch {
	case strings.Contains(query, "m.position <= ?"):
		name, r = "lower", q.lower
	case strings.Contains(query, "m.position > ?"):
		name, r = "upper", q.upper
	case strings.Contains(query, "crew_members m"):
		name, r = "whole", q.whole
	default:
		return nil, fmt.Errorf("unexpected Query %q", query)
	}
	q.mu.Lock()
	q.reads = append(q.reads, name)
	q.mu.Unlock()
	var rows [][]any
	for _, id := range r.ids {
		rows = append(rows, []any{id, "+15550100000", "", "", "{}", int64(1), int64(1), "", r.updated})
	}
	return &scriptRows{rows: rows, at: -1}, nil
}

func (q *crewReads) Exec(context.Context, string, ...any) (int64, error) {
	return 0, fmt.Errorf("unexpected Exec")
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// scriptRows returns fixed rows, assigning each value to a *string or
// *int64 destination.
type scriptRows struct {
	rows [][]any
	at   int
}

func (r scriptRows) first() Row { r.at = 0; return &r }

func (r *scriptRows) Next() bool { r.at++; return r.at < len(r.rows) }
func (r *scriptRows) Err() error { return nil }
func (r *scriptRows) Close()     {}
func (r *scriptRows) Scan(dest ...any) error {
	row := r.rows[r.at]
	if len(dest) != len(row) {
		return fmt.Errorf("scan into %d destinations, row has %d", len(dest), len(row))
	}
	for i, v := range row {
		switch d := dest[i].(type) {
		case *string:
			*d = v.(string)
		case *int64:
			*d = v.(int64)
		default:
			return fmt.Errorf("destination %d: %T", i, dest[i])
		}
	}
	return nil
}

func ids(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// A crew of crewSplit members or more is read in two halves at once; the
// halves are used only when both saw the same membership (the crew's
// updated_at) and neither is empty — otherwise the crew is read again in
// one statement, and that read is the answer.
func TestCrewContactsHalvesAndTheirFallback(t *testing.T) {
	t.Parallel()
	n := int64(crewSplit)
	lower, upper := ids(crewSplit/2, "lo"), ids(crewSplit/2, "up")
	whole := ids(crewSplit-1, "whole") // one member gone meanwhile
	for _, tc := range []struct {
		name         string
		lower, upper crewRead
		want         []string
		wantWhole    bool
	}{
		{"halves agree", crewRead{lower, 7}, crewRead{upper, 7}, append(slices.Clone(lower), upper...), false},
		{"membership changed between the halves", crewRead{lower, 7}, crewRead{upper, 8}, whole, true},
		{"lower half empty", crewRead{nil, 8}, crewRead{upper, 8}, whole, true},
		{"upper half empty", crewRead{lower, 8}, crewRead{nil, 8}, whole, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &crewReads{lo: 0, hi: n - 1, lower: tc.lower, upper: tc.upper, whole: crewRead{whole, 8}}
			d := New(Conn{Engine: "test", Read: q})
			got, err := d.CrewContacts(context.Background(), "crew_x")
			if err != nil {
				t.Fatal(err)
			}
			gotIDs := make([]string, len(got))
			for i, c := range got {
				gotIDs[i] = c.ID
			}
			if !slices.Equal(gotIDs, tc.want) {
				t.Errorf("read %d members (first %v), want %d (first %v)", len(gotIDs), gotIDs[:min(2, len(gotIDs))],
					len(tc.want), tc.want[:min(2, len(tc.want))])
			}
			slices.Sort(q.reads)
			wantReads := []string{"lower", "upper"}
			if tc.wantWhole {
				wantReads = []string{"lower", "upper", "whole"}
			}
			if !slices.Equal(q.reads, wantReads) {
				t.Errorf("reads %v, want %v", q.reads, wantReads)
			}
		})
	}
	// Below crewSplit: one read, no halves.
	q := &crewReads{lo: 0, hi: n - 2, whole: crewRead{whole, 8}}
	if got, err := New(Conn{Engine: "test", Read: q}).CrewContacts(context.Background(), "crew_x"); err != nil || len(got) != len(whole) {
		t.Fatalf("small crew: %d members, %v", len(got), err)
	}
	if !slices.Equal(q.reads, []string{"whole"}) {
		t.Errorf("small crew reads %v, want [whole]", q.reads)
	}
}
