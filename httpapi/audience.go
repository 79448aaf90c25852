package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Turning a create request's crews, tags, contacts and template into what
// group.Plan needs (docs/design.md §11): the people they stand for, in order
// (crews' members, then tags, then contacts), each once, with their
// contact id, name and fields; and the saved template's text and
// responses. What the client names but crewcast does not know is a 422
// naming it.

func unknownRef(field, ref, what string) *apiError {
	return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest,
		Message: fmt.Sprintf("%s: %s %q", field, what, ref),
		Fields:  []group.FieldError{{Field: field, Message: fmt.Sprintf("%s %q", what, ref), Input: ref}}}
}

// applyTemplate copies a saved template's text and responses into req
// where the client gave none.
func (a *api) applyTemplate(ctx context.Context, req *group.Request) error {
	if req.Template == "" {
		return nil
	}
	t, err := a.store.GetTemplate(ctx, req.Template)
	if errors.Is(err, actor.ErrNotFound) {
		t, err = a.store.TemplateByName(ctx, req.Template)
	}
	if errors.Is(err, actor.ErrNotFound) {
		return unknownRef("template", req.Template, "no such template")
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(req.Text) == "" {
		req.Text = t.Text
	}
	if req.Responses == nil && len(t.Responses) > 0 {
		if err := json.Unmarshal(t.Responses, &req.Responses); err != nil {
			return fmt.Errorf("template %q responses: %w", t.ID, err)
		}
	}
	return nil
}

// resolveAudience fills req.Resolved from req.Crews, req.Tags and
// req.Contacts, and completes To/Recipients entries that are known
// contacts (id, fields, and the name when the client gave none).
func (a *api) resolveAudience(ctx context.Context, req *group.Request) error {
	if err := a.applyTemplate(ctx, req); err != nil {
		return err
	}
	// resolved holds the people in order (crews' members, then tags',
	// then contacts'), each contact once. A crew's members and a tag's
	// contacts are distinct already, so the set of ids taken is only
	// built once a second list may repeat one: a request for one crew of
	// 100,000 people copies each contact once and hashes none.
	var resolved []group.RecipientInput
	var taken map[string]bool
	lists := 0
	take := func(cs []store.Contact) {
		if lists > 0 && taken == nil {
			taken = make(map[string]bool, len(resolved)+len(cs))
			for _, r := range resolved {
				taken[r.ContactID] = true
			}
		}
		lists++
		if resolved == nil {
			resolved = make([]group.RecipientInput, 0, len(cs))
		}
		for _, c := range cs {
			if taken != nil {
				if taken[c.ID] {
					continue
				}
				taken[c.ID] = true
			}
			resolved = append(resolved, recipientOfContact(c))
		}
	}
	for i, ref := range req.Crews {
		k, err := a.crewByRef(ctx, ref)
		if err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				return unknownRef(fmt.Sprintf("crews[%d]", i), ref, "no such crew")
			}
			return err
		}
		members, err := a.store.CrewContacts(ctx, k.ID)
		if err != nil {
			return err
		}
		if len(members) == 0 {
			return unknownRef(fmt.Sprintf("crews[%d]", i), ref, "crew has no members")
		}
		take(members)
	}
	for i, tag := range req.Tags {
		cs, err := a.store.ContactsByTag(ctx, tag)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return unknownRef(fmt.Sprintf("tags[%d]", i), tag, "no contact has this tag")
		}
		take(cs)
	}
	var rawNumbers, ids []string
	for i, ref := range req.Contacts {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "ct_") {
			ids = append(ids, ref)
			continue
		}
		if _, err := group.NormalizeNumber(ref); err != nil {
			return unknownRef(fmt.Sprintf("contacts[%d]", i), ref, "neither a contact id nor a phone number")
		}
		rawNumbers = append(rawNumbers, ref)
	}
	if len(ids) > 0 {
		take(nil) // from here on, ids taken are remembered
	}
	var missing []string
	for _, id := range ids {
		if !taken[id] && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	got, err := a.store.ContactsByIDs(ctx, missing)
	if err != nil {
		return err
	}
	for _, id := range missing {
		if c, ok := got[id]; ok {
			take([]store.Contact{c})
		}
	}
	for i, ref := range req.Contacts {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "ct_") && !taken[ref] {
			return unknownRef(fmt.Sprintf("contacts[%d]", i), ref, "no such contact")
		}
	}
	if len(req.Crews)+len(req.Tags)+len(req.Contacts) > 0 && len(resolved) == 0 && len(rawNumbers) == 0 &&
		len(req.To)+len(req.Recipients) == 0 {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest, Message: "no one to send to",
			Fields: []group.FieldError{{Field: "crews", Message: "no one to send to"}}}
	}
	// Raw numbers (in contacts, to, recipients) that are known contacts
	// get that contact's id, fields and — when the client gave none — name
	// (group.Plan reads req.Known).
	explicit := make([]string, 0, len(req.To)+len(req.Recipients)+len(rawNumbers))
	norm := func(s string) string {
		n, err := group.NormalizeNumber(s)
		if err != nil {
			return ""
		}
		return n
	}
	for _, n := range req.To {
		explicit = append(explicit, norm(n))
	}
	for _, r := range req.Recipients {
		explicit = append(explicit, norm(r.Number))
	}
	for _, n := range rawNumbers {
		explicit = append(explicit, norm(n))
	}
	known, err := a.store.ContactsByNumbers(ctx, explicit)
	if err != nil {
		return err
	}
	req.Known = make(map[string]group.RecipientInput, len(known))
	for n, c := range known {
		req.Known[n] = recipientOfContact(c)
	}
	for _, n := range rawNumbers {
		in := group.RecipientInput{Number: n}
		if c, ok := known[norm(n)]; ok {
			in = recipientOfContact(c)
		}
		resolved = append(resolved, in)
	}
	req.Resolved = resolved
	return nil
}

// recipientOfContact is a saved contact as a recipient.
func recipientOfContact(c store.Contact) group.RecipientInput {
	return group.RecipientInput{Number: c.Number, Name: c.Name, ContactID: c.ID, Fields: c.Fields, Timezone: c.Timezone}
}
