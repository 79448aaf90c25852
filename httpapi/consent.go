package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// ---- consent records (docs/architecture.md, "Consent records") ----

// suppressedForms returns which of numbers are suppressed, in clear or
// under the keyed hash an erased person's opt-out is kept as.
func (a *api) suppressedForms(ctx context.Context, numbers []string) (map[string]bool, error) {
	look := append([]string(nil), numbers...)
	hashOf := map[string]string{}
	if a.cfg.Privacy != nil {
		for _, n := range numbers {
			if h := a.cfg.Privacy.HashedNumber(n); h != "" {
				hashOf[h] = n
				look = append(look, h)
			}
		}
	}
	sup, err := a.store.Suppressed(ctx, look)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(sup))
	for k := range sup {
		if n, ok := hashOf[k]; ok {
			k = n
		}
		out[k] = true
	}
	return out, nil
}

// consentStates returns the consent state of each of numbers
// (store.ConsentState) and each one's newest history entry.
func (a *api) consentStates(ctx context.Context, numbers []string) (map[string]string, map[string]store.ConsentEntry, error) {
	sup, err := a.suppressedForms(ctx, numbers)
	if err != nil {
		return nil, nil, err
	}
	latest, err := a.store.LatestConsent(ctx, numbers)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(numbers))
	for _, n := range numbers {
		e, ok := latest[n]
		out[n] = store.ConsentState(e, ok, sup[n])
	}
	return out, latest, nil
}

// withConsent fills in the consent state of contacts shown.
func (a *api) withConsent(ctx context.Context, cs []contactJSON) error {
	numbers := make([]string, len(cs))
	for i, c := range cs {
		numbers[i] = c.Number
	}
	states, _, err := a.consentStates(ctx, numbers)
	if err != nil {
		return err
	}
	for i := range cs {
		cs[i].Consent = states[cs[i].Number]
	}
	return nil
}

// contactView is one contact as the API shows it, consent state included.
func (a *api) contactView(ctx context.Context, c store.Contact) (contactJSON, error) {
	out := []contactJSON{contactOf(c)}
	if err := a.withConsent(ctx, out); err != nil {
		return contactJSON{}, err
	}
	return out[0], nil
}

type consentEntryJSON struct {
	At     *time.Time `json:"at"`
	State  string     `json:"state"`
	Source string     `json:"source"`
	By     string     `json:"by"`
	Text   string     `json:"text"`
}

type consentHistoryJSON struct {
	History []consentEntryJSON `json:"history"`
}

// getContactConsent answers GET /v1/contacts/{id}/consent: the contact's
// consent history, oldest first.
func (a *api) getContactConsent(w http.ResponseWriter, r *http.Request) error {
	c, err := a.store.GetContact(r.Context(), r.PathValue("id"))
	if err != nil {
		return dirError(err, "contact")
	}
	h, err := a.store.ConsentHistory(r.Context(), c.Number)
	if err != nil {
		return err
	}
	out := consentHistoryJSON{History: make([]consentEntryJSON, len(h))}
	for i, e := range h {
		out.History[i] = consentEntryJSON{At: tsOrNil(e.At), State: e.State, Source: e.Source, By: e.By, Text: e.Text}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// operatorConsent is the consent entry of an operator's suppression add
// (opted_out) or removal (opted_in): source board for a signed-in user,
// api for a key, by their id.
func operatorConsent(r *http.Request, number, state string, at time.Time) store.ConsentEntry {
	who := requestActor(r)
	src := store.ConsentSourceAPI
	if who.Type == store.ActorUser {
		src = store.ConsentSourceBoard
	}
	return store.ConsentEntry{Number: number, At: at, State: state, Source: src, By: who.ID}
}

// checkImportConsent checks an import row's consent and consent_source
// values: consent is opted_in, opted_out, or empty or unknown (no change);
// consent_source is one of store.ConsentSources, import when empty.
func checkImportConsent(consent, source string) (string, string, []group.FieldError) {
	var errs []group.FieldError
	consent, source = strings.TrimSpace(consent), strings.TrimSpace(source)
	switch consent {
	case store.ConsentOptedIn, store.ConsentOptedOut:
	case "", store.ConsentUnknown:
		consent = ""
	default:
		errs = append(errs, group.FieldError{Field: "consent", Message: `must be "opted_in", "opted_out" or "unknown"`})
	}
	if source == "" {
		source = store.ConsentSourceImport
	} else if !slices.Contains(store.ConsentSources, source) {
		errs = append(errs, group.FieldError{Field: "consent_source",
			Message: "must be one of " + strings.Join(store.ConsentSources, ", ")})
	}
	return consent, source, errs
}

// importConsent records the consent columns of an import's rows (after
// the contacts were written; with dryRun it only counts). A row's
// opted_in for a suppressed number is not taken (the opt-out stands) and
// counted in kept; an opted_out suppresses the number (reason manual,
// like an operator's) if it is not already. A row that says what the
// number's history already says adds no entry, so importing the same file
// again changes nothing.
func (a *api) importConsent(r *http.Request, rows []importRow, dryRun bool) (kept int, err error) {
	var numbers []string
	for _, row := range rows {
		if row.consent != "" {
			numbers = append(numbers, row.c.Number)
		}
	}
	if len(numbers) == 0 {
		return 0, nil
	}
	ctx := r.Context()
	sup, err := a.suppressedForms(ctx, numbers)
	if err != nil {
		return 0, err
	}
	latest, err := a.store.LatestConsent(ctx, numbers)
	if err != nil {
		return 0, err
	}
	now := a.now().UTC()
	by := requestActor(r).ID
	var entries []store.ConsentEntry
	var suppress []string
	for _, row := range rows {
		n := row.c.Number
		switch {
		case row.consent == "":
			continue
		case row.consent == store.ConsentOptedIn && sup[n]:
			kept++
			continue
		case row.consent == store.ConsentOptedOut && !sup[n]:
			suppress = append(suppress, n)
		}
		if last, ok := latest[n]; ok && last.State == row.consent {
			continue
		}
		entries = append(entries, store.ConsentEntry{Number: n, At: now, State: row.consent, Source: row.source, By: by})
	}
	if dryRun {
		return kept, nil
	}
	for _, n := range suppress {
		if err := a.suppress(r, store.Suppression{Number: n, Reason: store.ReasonManual, CreatedAt: now}); err != nil {
			return kept, err
		}
	}
	return kept, a.store.AppendConsent(ctx, entries...)
}

// suppress adds a suppression through the Suppressor (so no provider call
// to the number starts after it), with its audit entry.
func (a *api) suppress(r *http.Request, s store.Suppression) error {
	add := a.store.AddSuppression
	if sp, ok := a.svc.(Suppressor); ok {
		add = sp.AddSuppression
	}
	return add(r.Context(), s, store.AuditEntry{At: s.CreatedAt, Actor: requestActor(r), Action: auditSuppressAdd,
		Target: store.AuditNumber(s.Number) + " " + s.Reason})
}
