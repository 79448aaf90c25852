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
	var au audience
	if err := a.takeCrews(ctx, &au, req.Crews); err != nil {
		return err
	}
	if err := a.takeTags(ctx, &au, req.Tags); err != nil {
		return err
	}
	rawNumbers, err := a.takeContactRefs(ctx, &au, req.Contacts)
	if err != nil {
		return err
	}
	if len(req.Crews)+len(req.Tags)+len(req.Contacts) > 0 && len(au.resolved) == 0 && len(rawNumbers) == 0 &&
		len(req.To)+len(req.Recipients) == 0 {
		return &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest, Message: "no one to send to",
			Fields: []group.FieldError{{Field: "crews", Message: "no one to send to"}}}
	}
	return a.takeRawNumbers(ctx, &au, req, rawNumbers)
}

// audience collects the people of a request in order (crews' members,
// then tags', then contacts'), each contact once. A crew's members and a
// tag's contacts are distinct already, so the set of ids taken is only
// built once a second list may repeat one: a request for one crew of
// 100,000 people copies each contact once and hashes none.
type audience struct {
	resolved []group.RecipientInput
	taken    map[string]bool
	lists    int
}

// take appends the contacts not taken yet. take(nil) only makes the
// contacts taken from then on remembered.
func (au *audience) take(cs []store.Contact) {
	if au.lists > 0 && au.taken == nil {
		au.taken = make(map[string]bool, len(au.resolved)+len(cs))
		for _, r := range au.resolved {
			au.taken[r.ContactID] = true
		}
	}
	au.lists++
	if au.resolved == nil {
		au.resolved = make([]group.RecipientInput, 0, len(cs))
	}
	for _, c := range cs {
		if au.taken != nil {
			if au.taken[c.ID] {
				continue
			}
			au.taken[c.ID] = true
		}
		au.resolved = append(au.resolved, recipientOfContact(c))
	}
}

// takeCrews takes each crew's members; an unknown or empty crew is a 422
// naming its field.
func (a *api) takeCrews(ctx context.Context, au *audience, crews []string) error {
	for i, ref := range crews {
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
		au.take(members)
	}
	return nil
}

// takeTags takes each tag's contacts; a tag no contact has is a 422.
func (a *api) takeTags(ctx context.Context, au *audience, tags []string) error {
	for i, tag := range tags {
		cs, err := a.store.ContactsByTag(ctx, tag)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			return unknownRef(fmt.Sprintf("tags[%d]", i), tag, "no contact has this tag")
		}
		au.take(cs)
	}
	return nil
}

// takeContactRefs takes the contacts named by id and returns the phone
// numbers given in their place, in order.
func (a *api) takeContactRefs(ctx context.Context, au *audience, refs []string) ([]string, error) {
	var rawNumbers, ids []string
	for i, ref := range refs {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "ct_") {
			ids = append(ids, ref)
			continue
		}
		if _, err := group.NormalizeNumber(ref); err != nil {
			return nil, unknownRef(fmt.Sprintf("contacts[%d]", i), ref, "neither a contact id nor a phone number")
		}
		rawNumbers = append(rawNumbers, ref)
	}
	if len(ids) > 0 {
		au.take(nil) // from here on, ids taken are remembered
	}
	var missing []string
	for _, id := range ids {
		if !au.taken[id] && !slices.Contains(missing, id) {
			missing = append(missing, id)
		}
	}
	got, err := a.store.ContactsByIDs(ctx, missing)
	if err != nil {
		return nil, err
	}
	for _, id := range missing {
		if c, ok := got[id]; ok {
			au.take([]store.Contact{c})
		}
	}
	for i, ref := range refs {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "ct_") && !au.taken[ref] {
			return nil, unknownRef(fmt.Sprintf("contacts[%d]", i), ref, "no such contact")
		}
	}
	return rawNumbers, nil
}

// takeRawNumbers ends the audience: raw numbers (in contacts, to,
// recipients) that are known contacts get that contact's id, fields and —
// when the client gave none — name (group.Plan reads req.Known), and the
// raw numbers of contacts follow the contacts taken.
func (a *api) takeRawNumbers(ctx context.Context, au *audience, req *group.Request, rawNumbers []string) error {
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
		au.resolved = append(au.resolved, in)
	}
	req.Resolved = au.resolved
	return nil
}

// recipientOfContact is a saved contact as a recipient.
func recipientOfContact(c store.Contact) group.RecipientInput {
	return group.RecipientInput{Number: c.Number, Name: c.Name, ContactID: c.ID, Fields: c.Fields, Timezone: c.Timezone}
}
