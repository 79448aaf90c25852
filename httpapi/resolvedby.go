package httpapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
)

// resolvedBy maps a recipient's roster index to the display name of who
// confirmed it delivered by hand (a recipient.resolved event in the journal),
// so the board can say "Delivered (marked by Ana)". Only those events are
// decoded; a name that cannot be found is left empty ("marked by hand").
func (a *api) resolvedBy(ctx context.Context, id string) (map[int]string, error) {
	byIndex := map[int]string{}
	err := a.store.Load(ctx, id, 0, func(e actor.Event) error {
		if e.Type != group.TypeResolved {
			return nil
		}
		ev, err := group.Decode(e.Type, e.Data)
		if err != nil {
			return err
		}
		// Only "delivered" is final as marked: "not delivered" may lead to
		// a retry whose outcome the provider reports, not the operator.
		res := ev.(group.Resolved)
		if res.Outcome == group.ResolveDelivered {
			byIndex[res.Index] = res.By
		} else {
			delete(byIndex, res.Index)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load recipient.resolved: %w", err)
	}
	names := map[string]string{}
	for i, who := range byIndex {
		if _, ok := names[who]; !ok {
			names[who] = a.principalName(ctx, who)
		}
		byIndex[i] = names[who]
	}
	return byIndex, nil
}

// principalName is the name of a board user or API key by id, or "" when
// neither is known.
func (a *api) principalName(ctx context.Context, id string) string {
	if id == "" {
		return ""
	}
	if u, err := a.store.UserByID(ctx, id); err == nil {
		return u.Name
	} else if !errors.Is(err, actor.ErrNotFound) {
		return ""
	}
	keys, err := a.store.ListKeys(ctx)
	if err != nil {
		return ""
	}
	for _, k := range keys {
		if k.ID == id {
			return k.Name
		}
	}
	return ""
}
