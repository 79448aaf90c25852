package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/tracker"
)

// crewNumbers resolves escalation crews (docs/design.md §12: `escalate.crews`, by
// id or name) to their members' numbers, each once, when a group is
// created: the numbers are frozen into the group like its roster. An
// unknown crew is a validation error naming it.
func crewNumbers(dir store.Directory) tracker.CrewResolver {
	return func(ctx context.Context, crews []string) ([]string, error) {
		var out []string
		seen := map[string]bool{}
		var bad []group.FieldError
		for _, ref := range crews {
			c, err := dir.FindCrew(ctx, ref)
			if errors.Is(err, actor.ErrNotFound) {
				bad = append(bad, group.FieldError{Field: "escalate.crews", Message: fmt.Sprintf("no crew %q", ref), Input: ref})
				continue
			}
			if err != nil {
				return nil, err
			}
			members, err := dir.CrewContacts(ctx, c.ID)
			if err != nil {
				return nil, err
			}
			for _, m := range members {
				if !seen[m.Number] {
					seen[m.Number] = true
					out = append(out, m.Number)
				}
			}
		}
		if len(bad) > 0 {
			return nil, &tracker.ValidationError{Fields: bad, Total: len(bad)}
		}
		return out, nil
	}
}
