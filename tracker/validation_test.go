package tracker

import (
	"context"
	"errors"
	"testing"

	"github.com/crewcast/crewcast/group"
)

// Issue 12 finding 7: a create with 520,000 empty numbers was validated in
// full (every number parsed, 520,000 errors). It is refused at once with
// one error; a merely bad list reports its first 100 problems and the total.
func TestCreateRefusesHugeAndBadListsBoundedly(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	var ve *ValidationError
	_, _, err := e.tr.Create(ctx, group.Request{From: from, To: make([]string, 520000), Text: "x"}, CreateOptions{})
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "to" || ve.Total != 1 {
		t.Fatalf("520,000 numbers: %v", err)
	}
	_, _, err = e.tr.Create(ctx, group.Request{From: from, To: make([]string, 5000), Text: "x"}, CreateOptions{})
	if !errors.As(err, &ve) || len(ve.Fields) != group.MaxFieldErrors || ve.Total != 5000 {
		t.Fatalf("5,000 empty numbers: %d fields, total %d (%v)", len(ve.Fields), ve.Total, err)
	}
}
