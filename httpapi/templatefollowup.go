package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// A template can hold a follow-up, in the old form or as a ladder of
// steps (docs/design.md §17); the board's New message form fills its
// follow-up fields from it. It is stored as the JSON the API took, after
// the same checks a create request's `followup` gets.

// applyTemplateFollowup sets t's follow-up from a request's raw value:
// nil keeps it, null clears it, an object is validated and stored.
func applyTemplateFollowup(t *store.Template, raw json.RawMessage) error {
	switch {
	case raw == nil:
		return nil
	case bytes.Equal(bytes.TrimSpace(raw), []byte("null")):
		t.Followup = nil
		return nil
	}
	var f group.FollowupInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return invalid("followup", fmt.Sprintf("must be an object of after, max, text or steps: %v", err))
	}
	if err := fieldErrors(group.CheckFollowup(&f)); err != nil {
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	t.Followup = b
	return nil
}

// templateFollowupOf decodes t's stored follow-up into out.
func templateFollowupOf(t store.Template, out *templateJSON) error {
	if len(t.Followup) == 0 {
		return nil
	}
	var f group.FollowupInput
	if err := json.Unmarshal(t.Followup, &f); err != nil {
		return fmt.Errorf("template %q followup: %w", t.ID, err)
	}
	out.Followup = &f
	return nil
}
