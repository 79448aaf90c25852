package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // IANA zones for contact time zones, whatever the host has installed
	"unicode/utf8"

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/group"
	"github.com/crewcast/crewcast/store"
)

// Contacts, crews and saved templates (docs/design.md §11).

// Limits of directory entries: generous for people, small enough that one
// contact cannot bloat every group it is sent to.
const (
	maxNameLen      = 200
	maxTags         = 50
	maxTagLen       = 64
	maxFields       = 50
	maxFieldValue   = 1000
	maxImportLine   = 8192    // bytes of one CSV record
	maxImportRows   = 100_000 // rows of one import
	maxImportErrors = 1000    // errors listed in one import answer
	maxCrewMembers  = group.MaxRecipients
)

// newDirID returns prefix + 16 random bytes in lower-case base32.
func newDirID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// dirError maps the store's not-found and conflict to what the client sees.
func dirError(err error, what string) error {
	switch {
	case errors.Is(err, actor.ErrNotFound):
		return notFound(what)
	case errors.Is(err, store.ErrConflict):
		return newError(http.StatusConflict, codeConflict, what+" already exists")
	}
	return err
}

// getDirEntry answers GET /v1/{contacts,crews,templates}/{id}: the entry
// get finds, shown by view, or what dirError makes of a miss.
func getDirEntry[T, J any](w http.ResponseWriter, r *http.Request, what string,
	get func(context.Context, string) (T, error), view func(T) (J, error)) error {
	e, err := get(r.Context(), r.PathValue("id"))
	if err != nil {
		return dirError(err, what)
	}
	out, err := view(e)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteDirEntry answers DELETE /v1/{contacts,crews,templates}/{id}; del
// commits the audit entry of action with the delete.
func (a *api) deleteDirEntry(w http.ResponseWriter, r *http.Request, what, action string,
	del func(context.Context, string, ...store.AuditEntry) error) error {
	id := r.PathValue("id")
	if err := del(r.Context(), id, a.auditEntry(r, action, id)); err != nil {
		return dirError(err, what)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// writeCreated answers 201 Created with v and the new entry's Location.
func writeCreated(w http.ResponseWriter, location string, v any) {
	w.Header().Set("Location", location)
	writeJSON(w, http.StatusCreated, v)
}

// noErr adapts a view that cannot fail to getDirEntry.
func noErr[T, J any](view func(T) J) func(T) (J, error) {
	return func(e T) (J, error) { return view(e), nil }
}

// ---- contacts ----

type contactJSON struct {
	ID       string            `json:"id"`
	Number   string            `json:"number"`
	Name     string            `json:"name"`
	Email    string            `json:"email"`
	Tags     []string          `json:"tags"`
	Timezone string            `json:"timezone"`
	Fields   map[string]string `json:"fields"`
	// Consent is the contact's consent state (consent.go).
	Consent   string     `json:"consent"`
	CreatedAt *time.Time `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
}

func contactOf(c store.Contact) contactJSON {
	tags := c.Tags
	if tags == nil {
		tags = []string{}
	}
	fields := c.Fields
	if fields == nil {
		fields = map[string]string{}
	}
	return contactJSON{ID: c.ID, Number: c.Number, Name: c.Name, Email: c.Email, Tags: tags, Timezone: c.Timezone, Fields: fields,
		CreatedAt: tsOrNil(c.CreatedAt), UpdatedAt: tsOrNil(c.UpdatedAt)}
}

// contactInput is the body of POST /v1/contacts and PATCH
// /v1/contacts/{id} (absent fields keep their value on PATCH).
type contactInput struct {
	Number   *string            `json:"number"`
	Name     *string            `json:"name"`
	Email    *string            `json:"email"`
	Tags     *[]string          `json:"tags"`
	Timezone *string            `json:"timezone"`
	Fields   *map[string]string `json:"fields"`
}

// knownZones remembers the zone names time.LoadLocation accepted: it
// parses the zone database on every call, a fifth of a 50,000-row
// import's time. Only valid names are kept, so the set stays as small as
// the IANA list.
var knownZones sync.Map

// checkTimezone accepts "" or an IANA zone name.
func checkTimezone(tz string) error {
	if tz == "" {
		return nil
	}
	if _, ok := knownZones.Load(tz); ok {
		return nil
	}
	if tz == "Local" || strings.HasPrefix(tz, "/") || strings.Contains(tz, "..") {
		return fmt.Errorf("%q is not an IANA time zone such as America/Chicago", tz)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("%q is not an IANA time zone such as America/Chicago", tz)
	}
	knownZones.Store(tz, struct{}{})
	return nil
}

// checkContact validates a contact's values, naming the field at fault
// (prefix + "number", …).
func checkContact(c *store.Contact) []group.FieldError {
	var errs []group.FieldError
	n, err := group.NormalizeNumber(c.Number)
	if err != nil {
		errs = append(errs, group.FieldError{Field: "number", Message: err.Error(), Input: c.Number})
	} else {
		c.Number = n
	}
	c.Name = strings.TrimSpace(c.Name)
	if len(c.Name) > maxNameLen || !utf8.ValidString(c.Name) {
		errs = append(errs, group.FieldError{Field: "name", Message: fmt.Sprintf("at most %d characters of valid text", maxNameLen)})
	}
	if e, err := group.NormalizeEmail(c.Email); err != nil {
		// The input is not echoed: an address is personal data.
		errs = append(errs, group.FieldError{Field: "email", Message: err.Error()})
	} else {
		c.Email = e
	}
	if len(c.Tags) > maxTags {
		errs = append(errs, group.FieldError{Field: "tags", Message: fmt.Sprintf("at most %d tags", maxTags)})
	}
	for i, t := range c.Tags {
		t = strings.TrimSpace(t)
		if len(t) > maxTagLen || strings.Contains(t, ";") || !utf8.ValidString(t) {
			errs = append(errs, group.FieldError{Field: fmt.Sprintf("tags[%d]", i), Message: fmt.Sprintf("at most %d characters, no ';'", maxTagLen)})
		}
	}
	c.Timezone = strings.TrimSpace(c.Timezone)
	if err := checkTimezone(c.Timezone); err != nil {
		errs = append(errs, group.FieldError{Field: "timezone", Message: err.Error()})
	}
	if len(c.Fields) > maxFields {
		errs = append(errs, group.FieldError{Field: "fields", Message: fmt.Sprintf("at most %d fields", maxFields)})
	}
	for k, v := range c.Fields {
		switch {
		case !group.ValidFieldKey(k):
			errs = append(errs, group.FieldError{Field: "fields", Message: fmt.Sprintf("%q: a field name is 1 to 64 letters, digits, _ or -", k)})
		case len(v) > maxFieldValue || !utf8.ValidString(v):
			errs = append(errs, group.FieldError{Field: "fields." + k, Message: fmt.Sprintf("at most %d characters of valid text", maxFieldValue)})
		case strings.TrimSpace(v) == "":
			delete(c.Fields, k) // an empty field is no field: templates' default applies
		}
	}
	return errs
}

func fieldErrors(errs []group.FieldError) error {
	if len(errs) == 0 {
		return nil
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalidRequest, Message: strings.Join(parts, "; "), Fields: errs}
}

func (in contactInput) applyTo(c *store.Contact) {
	if in.Number != nil {
		c.Number = *in.Number
	}
	if in.Name != nil {
		c.Name = *in.Name
	}
	if in.Email != nil {
		c.Email = *in.Email
	}
	if in.Tags != nil {
		c.Tags = *in.Tags
	}
	if in.Timezone != nil {
		c.Timezone = *in.Timezone
	}
	if in.Fields != nil {
		c.Fields = *in.Fields
	}
}

// contactTexts checks what of a contact a template renders into a message
// text (its name, its field values) as group.CheckText checks the text.
func contactTexts(c store.Contact) []group.FieldError {
	var errs []group.FieldError
	if e := group.CheckText("name", c.Name); e != nil {
		errs = append(errs, *e)
	}
	for _, k := range sortedStrings(slices.Collect(maps.Keys(c.Fields))) {
		if e := group.CheckText("fields."+k, c.Fields[k]); e != nil {
			errs = append(errs, *e)
		}
	}
	return errs
}

func (a *api) createContact(w http.ResponseWriter, r *http.Request) error {
	var in contactInput
	if err := decodeJSON(w, r, a.cfg.MaxBodyBytes, &in); err != nil {
		return err
	}
	if in.Number == nil {
		return invalid("number", "required")
	}
	c := store.Contact{ID: newDirID("ct_")}
	in.applyTo(&c)
	if err := textErrors(contactTexts(c)); err != nil {
		return err
	}
	if err := fieldErrors(checkContact(&c)); err != nil {
		return err
	}
	now := a.now()
	c.CreatedAt, c.UpdatedAt = now, now
	if err := a.store.CreateContact(r.Context(), c, a.auditEntry(r, auditContactCreated, "")); err != nil {
		return dirError(err, "a contact with this number")
	}
	c.Tags = normalTags(c.Tags)
	view, err := a.contactView(r.Context(), c)
	if err != nil {
		return err
	}
	writeCreated(w, "/v1/contacts/"+c.ID, view)
	return nil
}

// normalTags is the store's tag normalization, for answers built without
// reading the row back.
func normalTags(tags []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return sortedStrings(out)
}

func sortedStrings(s []string) []string {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

func (a *api) getContact(w http.ResponseWriter, r *http.Request) error {
	return getDirEntry(w, r, "contact", a.store.GetContact, func(c store.Contact) (contactJSON, error) {
		return a.contactView(r.Context(), c)
	})
}

func (a *api) patchContact(w http.ResponseWriter, r *http.Request) error {
	var in contactInput
	if err := decodeJSON(w, r, a.cfg.MaxBodyBytes, &in); err != nil {
		return err
	}
	c, err := a.store.GetContact(r.Context(), r.PathValue("id"))
	if err != nil {
		return dirError(err, "contact")
	}
	in.applyTo(&c)
	if err := textErrors(contactTexts(c)); err != nil {
		return err
	}
	if err := fieldErrors(checkContact(&c)); err != nil {
		return err
	}
	c.UpdatedAt = a.now()
	if err := a.store.UpdateContact(r.Context(), c, a.auditEntry(r, auditContactUpdated, c.ID)); err != nil {
		return dirError(err, "a contact with this number")
	}
	c, err = a.store.GetContact(r.Context(), c.ID)
	if err != nil {
		return dirError(err, "contact")
	}
	view, err := a.contactView(r.Context(), c)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, view)
	return nil
}

func (a *api) deleteContact(w http.ResponseWriter, r *http.Request) error {
	return a.deleteDirEntry(w, r, "contact", auditContactDeleted, a.store.DeleteContact)
}

type contactListJSON struct {
	Contacts   []contactJSON `json:"contacts"`
	NextCursor string        `json:"next_cursor"`
}

func (a *api) listContacts(w http.ResponseWriter, r *http.Request) error {
	limit, err := queryLimit(r, 1000)
	if err != nil {
		return err
	}
	qv := r.URL.Query()
	q := store.ContactQuery{Q: strings.TrimSpace(qv.Get("q")), Tag: qv.Get("tag"), Cursor: qv.Get("cursor"), Limit: limit}
	if len(q.Q) > maxNameLen {
		return invalid("q", fmt.Sprintf("at most %d characters", maxNameLen))
	}
	if name := qv.Get("crew"); name != "" {
		k, err := a.crewByRef(r.Context(), name)
		if err != nil {
			return err
		}
		q.Crew = k.ID
	}
	rows, next, err := a.store.ListContacts(r.Context(), q)
	if err != nil {
		return err
	}
	out := contactListJSON{Contacts: make([]contactJSON, len(rows)), NextCursor: next}
	for i, c := range rows {
		out.Contacts[i] = contactOf(c)
	}
	if err := a.withConsent(r.Context(), out.Contacts); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---- CSV import ----

type importErrorJSON struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

type importJSON struct {
	Created   int               `json:"created"`
	Updated   int               `json:"updated"`
	Unchanged int               `json:"unchanged"`
	Errors    []importErrorJSON `json:"errors"`
	// ErrorsTotal counts every bad line when errors lists only the first.
	ErrorsTotal int `json:"errors_total,omitempty"`
	// ConsentKeptOptedOut counts the rows whose consent=opted_in was not
	// taken because the number is suppressed: an import never opts a
	// STOPped number back in (consent.go).
	ConsentKeptOptedOut int `json:"consent_kept_opted_out"`
}

// importColumns is the header of an import: which column holds what.
type importColumns struct {
	number, name, email, tags, timezone int // -1 when absent
	consent, consentSource              int // -1 when absent
	fields                              map[int]string
}

func parseImportHeader(rec []string) (importColumns, error) {
	cols := importColumns{number: -1, name: -1, email: -1, tags: -1, timezone: -1, consent: -1, consentSource: -1, fields: map[int]string{}}
	seen := map[string]bool{}
	for i, h := range rec {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		key := strings.ToLower(h)
		if key == "" {
			return cols, fmt.Errorf("column %d has no name", i+1)
		}
		if seen[key] {
			return cols, fmt.Errorf("column %q appears twice", h)
		}
		seen[key] = true
		switch key {
		case "number":
			cols.number = i
		case "name":
			cols.name = i
		case "email":
			cols.email = i
		case "tags":
			cols.tags = i
		case "timezone":
			cols.timezone = i
		case "consent":
			cols.consent = i
		case "consent_source":
			cols.consentSource = i
		default:
			if !group.ValidFieldKey(h) {
				return cols, fmt.Errorf("column %q: a field name is 1 to 64 letters, digits, _ or -", h)
			}
			cols.fields[i] = h
		}
	}
	if cols.number < 0 {
		return cols, errors.New("the header must name a number column: number,name,tags,timezone,<field>…")
	}
	return cols, nil
}

// importRow is one good line of an import: the values of the columns the
// header named (absent columns keep the stored values).
type importRow struct {
	line int
	c    store.Contact
	// consent is the row's consent column ("" when absent, empty or
	// unknown: no change), source its consent_source (default import).
	consent, source string
}

func (a *api) importContacts(w http.ResponseWriter, r *http.Request) error {
	dry, err := queryBool(r, "dry_run")
	if err != nil {
		return err
	}
	atomic, err := queryBool(r, "atomic")
	if err != nil {
		return err
	}
	body := http.MaxBytesReader(w, r.Body, a.cfg.MaxImportBytes)
	cr := csv.NewReader(body)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	rep := importJSON{Errors: []importErrorJSON{}}
	width, cols, err := readImportHeader(cr)
	if err != nil {
		return err
	}
	rows, err := readImportRows(cr, width, cols, a.now(), &rep)
	if err != nil {
		return err
	}
	if atomic && rep.ErrorsTotal > 0 {
		writeJSON(w, http.StatusUnprocessableEntity, rep)
		return nil
	}
	contacts, err := a.mergeImport(r.Context(), rows, cols)
	if err != nil {
		return err
	}
	// One entry for the whole import (none for a dry run, which writes
	// nothing), committed with it.
	counts, err := a.store.ImportContacts(r.Context(), contacts, dry, a.auditEntry(r, auditContactsImported, ""))
	if err != nil {
		return err
	}
	if rep.ConsentKeptOptedOut, err = a.importConsent(r, rows, dry); err != nil {
		return err
	}
	rep.Created, rep.Updated, rep.Unchanged = counts.Created, counts.Updated, counts.Unchanged
	if rep.ErrorsTotal == len(rep.Errors) {
		rep.ErrorsTotal = 0
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// addError counts a bad line of an import and keeps its message while
// fewer than maxImportErrors are kept.
func (rep *importJSON) addError(line int, msg string) {
	rep.ErrorsTotal++
	if len(rep.Errors) < maxImportErrors {
		rep.Errors = append(rep.Errors, importErrorJSON{Line: line, Error: msg})
	}
}

// readImportHeader reads an import's header line and returns how many
// columns it names and which is which.
func readImportHeader(cr *csv.Reader) (int, importColumns, error) {
	header, err := cr.Read()
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return 0, importColumns{}, err
	case errors.Is(err, io.EOF):
		return 0, importColumns{}, invalid("body", "empty CSV: the first line must be a header such as number,name,tags,timezone")
	case err != nil:
		return 0, importColumns{}, invalid("body", "line 1: "+csvMessage(err))
	}
	cols, err := parseImportHeader(header)
	if err != nil {
		return 0, importColumns{}, invalid("body", "line 1: "+err.Error())
	}
	return len(header), cols, nil
}

// readImportRows reads an import's lines after the header: the good ones
// are returned, each bad one is added to rep. An error ends the import (a
// body over the limit, too many rows).
func readImportRows(cr *csv.Reader, width int, cols importColumns, now time.Time, rep *importJSON) ([]importRow, error) {
	var rows []importRow
	var mbe *http.MaxBytesError
	lineOf := map[string]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			if errors.As(err, &mbe) {
				return nil, err
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			rep.addError(line, csvMessage(err))
			continue
		}
		if len(rows)+rep.ErrorsTotal >= maxImportRows {
			return nil, newError(http.StatusRequestEntityTooLarge, codeTooLarge, fmt.Sprintf("at most %d rows per import", maxImportRows))
		}
		size := 0
		for _, f := range rec {
			size += len(f)
		}
		if size > maxImportLine {
			rep.addError(line, fmt.Sprintf("line is longer than %d bytes", maxImportLine))
			continue
		}
		if len(rec) > width {
			rep.addError(line, fmt.Sprintf("%d values for %d columns", len(rec), width))
			continue
		}
		row, msg := importRowOf(rec, cols, now)
		if msg != "" {
			rep.addError(line, msg)
			continue
		}
		row.line = line
		c := row.c
		if first, ok := lineOf[c.Number]; ok {
			rep.addError(line, fmt.Sprintf("number %s is already on line %d", c.Number, first))
			continue
		}
		lineOf[c.Number] = line
		rows = append(rows, row)
	}
	return rows, nil
}

// importRowOf reads one CSV record of an import; msg says what is wrong
// with it ("" when nothing is).
func importRowOf(rec []string, cols importColumns, now time.Time) (row importRow, msg string) {
	get := func(i int) string {
		if i < 0 || i >= len(rec) {
			return ""
		}
		return rec[i]
	}
	c := store.Contact{ID: newDirID("ct_"), Number: get(cols.number), Name: get(cols.name), Email: get(cols.email), Timezone: get(cols.timezone),
		CreatedAt: now, UpdatedAt: now}
	if t := get(cols.tags); t != "" {
		c.Tags = strings.Split(t, ";")
	}
	if len(cols.fields) > 0 {
		c.Fields = make(map[string]string, len(cols.fields))
		for i, k := range cols.fields {
			c.Fields[k] = get(i)
		}
	}
	errs := append(contactTexts(c), checkContact(&c)...)
	consent, source, cerrs := checkImportConsent(get(cols.consent), get(cols.consentSource))
	if errs = append(errs, cerrs...); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return row, strings.Join(msgs, "; ")
	}
	return importRow{c: c, consent: consent, source: source}, ""
}

// mergeImport completes import rows with the stored values of the columns
// the file does not have, so that a file of number,name leaves a known
// contact's tags, zone and fields alone, and a field column sets (or, when
// empty, removes) that field only.
func (a *api) mergeImport(ctx context.Context, rows []importRow, cols importColumns) ([]store.Contact, error) {
	numbers := make([]string, len(rows))
	for i, r := range rows {
		numbers[i] = r.c.Number
	}
	known, err := a.store.ContactsByNumbers(ctx, numbers)
	if err != nil {
		return nil, err
	}
	out := make([]store.Contact, len(rows))
	for i, r := range rows {
		c := r.c
		if old, ok := known[c.Number]; ok {
			if cols.name < 0 {
				c.Name = old.Name
			}
			if cols.email < 0 {
				c.Email = old.Email
			}
			if cols.tags < 0 {
				c.Tags = old.Tags
			}
			if cols.timezone < 0 {
				c.Timezone = old.Timezone
			}
			merged := make(map[string]string, len(old.Fields)+len(c.Fields))
			for k, v := range old.Fields {
				merged[k] = v
			}
			for _, k := range cols.fields {
				delete(merged, k)
			}
			for k, v := range c.Fields {
				merged[k] = v
			}
			c.Fields = merged
		}
		out[i] = c
	}
	return out, nil
}

// csvMessage explains a CSV syntax error without the reader's line prefix.
func csvMessage(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(pe.Err, csv.ErrQuote):
			return `a quote (") inside an unquoted value; quote the whole value and double the inner quote`
		case errors.Is(pe.Err, csv.ErrBareQuote):
			return `a bare quote (") in an unquoted value`
		}
		return pe.Err.Error()
	}
	return err.Error()
}

// ---- crews ----

type crewJSON struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Members     []string   `json:"members"`
	Size        int        `json:"size"`
	CreatedAt   *time.Time `json:"created_at"`
	UpdatedAt   *time.Time `json:"updated_at"`
}

func crewOf(k store.Crew) crewJSON {
	m := k.Members
	if m == nil {
		m = []string{}
	}
	return crewJSON{ID: k.ID, Name: k.Name, Description: k.Description, Members: m, Size: len(m),
		CreatedAt: tsOrNil(k.CreatedAt), UpdatedAt: tsOrNil(k.UpdatedAt)}
}

type crewInput struct {
	Name        *string   `json:"name"`
	Description *string   `json:"description"`
	Members     *[]string `json:"members"`
}

// crewByRef finds a crew by id or, failing that, by name; a miss is a 422
// naming it.
func (a *api) crewByRef(ctx context.Context, ref string) (store.Crew, error) {
	k, err := a.store.FindCrew(ctx, ref)
	if errors.Is(err, actor.ErrNotFound) {
		return store.Crew{}, &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest,
			Message: fmt.Sprintf("crew %q: no such crew", ref), Fields: []group.FieldError{{Field: "crew", Message: "no such crew", Input: ref}}}
	}
	return k, err
}

// resolveMembers turns member references (contact ids or phone numbers)
// into contact ids. A number nobody has yet becomes a new contact, made in
// the crew write's own transaction (returned as fresh, for
// store.Crew.NewContacts; audited as contacts.imported by the request's
// actor, next to the crew's entry); an unknown id is a 422 naming it.
func (a *api) resolveMembers(r *http.Request, refs []string) (ids []string, fresh []store.Contact, err error) {
	ctx := r.Context()
	if len(refs) > maxCrewMembers {
		return nil, nil, invalid("members", fmt.Sprintf("at most %d members", maxCrewMembers))
	}
	var known, numbers []string
	isID := make([]bool, len(refs))
	for i, ref := range refs {
		ref = strings.TrimSpace(ref)
		if strings.HasPrefix(ref, "ct_") {
			known = append(known, ref)
			isID[i] = true
			continue
		}
		n, err := group.NormalizeNumber(ref)
		if err != nil {
			return nil, nil, &apiError{Status: http.StatusBadRequest, Code: codeInvalidRequest,
				Message: fmt.Sprintf("members[%d]: %q is neither a contact id nor a phone number", i, ref),
				Fields:  []group.FieldError{{Field: fmt.Sprintf("members[%d]", i), Message: "neither a contact id nor a phone number", Input: ref}}}
		}
		refs[i] = n
		numbers = append(numbers, n)
	}
	byID, err := a.store.ContactsByIDs(ctx, known)
	if err != nil {
		return nil, nil, err
	}
	byNumber, err := a.store.ContactsByNumbers(ctx, numbers)
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, 0, len(refs))
	now := a.now()
	for i, ref := range refs {
		ref = strings.TrimSpace(ref)
		if isID[i] {
			if _, ok := byID[ref]; !ok {
				return nil, nil, &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest,
					Message: fmt.Sprintf("members[%d]: no contact %q", i, ref),
					Fields:  []group.FieldError{{Field: fmt.Sprintf("members[%d]", i), Message: "no such contact", Input: ref}}}
			}
			out = append(out, ref)
			continue
		}
		c, ok := byNumber[ref]
		if !ok {
			c = store.Contact{ID: newDirID("ct_"), Number: ref, CreatedAt: now, UpdatedAt: now}
			byNumber[ref] = c
			fresh = append(fresh, c)
		}
		out = append(out, c.ID)
	}
	return out, fresh, nil
}

// crewAudit is the audit of a crew write: the creation of its new
// contacts (contacts.imported), if any, then the crew's own entry; the
// store commits them with the write.
func (a *api) crewAudit(r *http.Request, k store.Crew, action, target string) []store.AuditEntry {
	var out []store.AuditEntry
	if len(k.NewContacts) > 0 {
		out = append(out, a.auditEntry(r, auditContactsImported, ""))
	}
	return append(out, a.auditEntry(r, action, target))
}

func checkCrewName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > maxNameLen {
		return invalid("name", fmt.Sprintf("required, at most %d characters", maxNameLen))
	}
	if strings.HasPrefix(name, "crw_") {
		return invalid("name", `must not start with "crw_" (crew ids do)`)
	}
	return nil
}

// applyCrewInput sets what in gives on k: a trimmed name (checked; a new
// crew must have one), description and members (resolved to contact ids).
func (a *api) applyCrewInput(r *http.Request, k *store.Crew, in crewInput, create bool) error {
	if in.Name != nil {
		k.Name = strings.TrimSpace(*in.Name)
	}
	if create || in.Name != nil {
		if err := checkCrewName(k.Name); err != nil {
			return err
		}
	}
	if in.Description != nil {
		k.Description = strings.TrimSpace(*in.Description)
	}
	if in.Members != nil {
		ids, fresh, err := a.resolveMembers(r, *in.Members)
		if err != nil {
			return err
		}
		k.Members, k.NewContacts = ids, fresh
	}
	return nil
}

func (a *api) createCrew(w http.ResponseWriter, r *http.Request) error {
	var in crewInput
	if err := decodeJSON(w, r, a.cfg.MaxCreateBodyBytes, &in); err != nil {
		return err
	}
	k := store.Crew{ID: newDirID("crw_")}
	if err := a.applyCrewInput(r, &k, in, true); err != nil {
		return err
	}
	now := a.now()
	k.CreatedAt, k.UpdatedAt = now, now
	if err := a.store.CreateCrew(r.Context(), k, a.crewAudit(r, k, auditCrewCreated, "")...); err != nil {
		return dirError(err, "a crew with this name")
	}
	k, err := a.store.GetCrew(r.Context(), k.ID)
	if err != nil {
		return dirError(err, "crew")
	}
	writeCreated(w, "/v1/crews/"+k.ID, crewOf(k))
	return nil
}

func (a *api) getCrew(w http.ResponseWriter, r *http.Request) error {
	return getDirEntry(w, r, "crew", a.store.GetCrew, noErr(crewOf))
}

func (a *api) patchCrew(w http.ResponseWriter, r *http.Request) error {
	var in crewInput
	if err := decodeJSON(w, r, a.cfg.MaxCreateBodyBytes, &in); err != nil {
		return err
	}
	k, err := a.store.GetCrew(r.Context(), r.PathValue("id"))
	if err != nil {
		return dirError(err, "crew")
	}
	if err := a.applyCrewInput(r, &k, in, false); err != nil {
		return err
	}
	k.UpdatedAt = a.now()
	if err := a.store.UpdateCrew(r.Context(), k, a.crewAudit(r, k, auditCrewUpdated, k.ID)...); err != nil {
		return dirError(err, "a crew with this name")
	}
	if k, err = a.store.GetCrew(r.Context(), k.ID); err != nil {
		return dirError(err, "crew")
	}
	writeJSON(w, http.StatusOK, crewOf(k))
	return nil
}

func (a *api) deleteCrew(w http.ResponseWriter, r *http.Request) error {
	return a.deleteDirEntry(w, r, "crew", auditCrewDeleted, a.store.DeleteCrew)
}

func (a *api) listCrews(w http.ResponseWriter, r *http.Request) error {
	ks, err := a.store.ListCrews(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Crews []crewJSON `json:"crews"`
	}{Crews: make([]crewJSON, len(ks))}
	for i, k := range ks {
		out.Crews[i] = crewOf(k)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ---- templates ----

type templateJSON struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Text      string         `json:"text"`
	Responses []group.Option `json:"responses"`
	// Followup is the saved follow-up (templatefollowup.go), absent for none.
	Followup  *group.FollowupInput `json:"followup,omitempty"`
	CreatedAt *time.Time           `json:"created_at"`
	UpdatedAt *time.Time           `json:"updated_at"`
}

func templateOf(t store.Template) (templateJSON, error) {
	out := templateJSON{ID: t.ID, Name: t.Name, Text: t.Text, Responses: []group.Option{},
		CreatedAt: tsOrNil(t.CreatedAt), UpdatedAt: tsOrNil(t.UpdatedAt)}
	if len(t.Responses) > 0 {
		if err := json.Unmarshal(t.Responses, &out.Responses); err != nil {
			return out, fmt.Errorf("template %q responses: %w", t.ID, err)
		}
	}
	return out, templateFollowupOf(t, &out)
}

type templateInput struct {
	Name      *string         `json:"name"`
	Text      *string         `json:"text"`
	Responses *[]group.Option `json:"responses"`
	// Followup: absent keeps, null clears, an object sets (templatefollowup.go).
	Followup json.RawMessage `json:"followup"`
}

// checkTemplateText parses a template text, answering 422 naming an
// unknown variable.
func checkTemplateText(field, text string) (*group.Template, error) {
	if strings.TrimSpace(text) == "" {
		return nil, invalid(field, "required")
	}
	if e := group.CheckText(field, text); e != nil {
		return nil, textErrors([]group.FieldError{*e})
	}
	t, err := group.ParseTemplate(text)
	var te *group.TemplateError
	if errors.As(err, &te) {
		return nil, &apiError{Status: http.StatusUnprocessableEntity, Code: codeInvalidRequest, Message: field + ": " + te.Error(),
			Fields: []group.FieldError{{Field: field, Message: te.Error(), Input: te.Var}}}
	}
	return t, err
}

func (a *api) saveTemplate(r *http.Request, t store.Template, in templateInput, create bool) (store.Template, error) {
	if in.Name != nil {
		t.Name = strings.TrimSpace(*in.Name)
	}
	if t.Name == "" || len(t.Name) > maxNameLen {
		return t, invalid("name", fmt.Sprintf("required, at most %d characters", maxNameLen))
	}
	if in.Text != nil {
		t.Text = *in.Text
	}
	if _, err := checkTemplateText("text", t.Text); err != nil {
		return t, err
	}
	if in.Responses != nil {
		if err := fieldErrors(group.CheckOptions("responses", *in.Responses, nil)); err != nil {
			return t, err
		}
		if err := textErrors(group.CheckOptionTexts("responses", *in.Responses)); err != nil {
			return t, err
		}
		b, err := json.Marshal(*in.Responses)
		if err != nil {
			return t, err
		}
		t.Responses = b
	}
	if err := applyTemplateFollowup(&t, in.Followup); err != nil {
		return t, err
	}
	t.UpdatedAt = a.now()
	var err error
	if create {
		t.CreatedAt = t.UpdatedAt
		err = a.store.CreateTemplate(r.Context(), t, a.auditEntry(r, auditTemplateCreated, ""))
	} else {
		err = a.store.UpdateTemplate(r.Context(), t, a.auditEntry(r, auditTemplateUpdated, t.ID))
	}
	if err != nil {
		return t, dirError(err, "a template with this name")
	}
	return t, nil
}

func (a *api) createTemplate(w http.ResponseWriter, r *http.Request) error {
	var in templateInput
	if err := decodeJSON(w, r, a.cfg.MaxBodyBytes, &in); err != nil {
		return err
	}
	t, err := a.saveTemplate(r, store.Template{ID: newDirID("tpl_")}, in, true)
	if err != nil {
		return err
	}
	out, err := templateOf(t)
	if err != nil {
		return err
	}
	writeCreated(w, "/v1/templates/"+t.ID, out)
	return nil
}

func (a *api) getTemplate(w http.ResponseWriter, r *http.Request) error {
	return getDirEntry(w, r, "template", a.store.GetTemplate, templateOf)
}

func (a *api) patchTemplate(w http.ResponseWriter, r *http.Request) error {
	var in templateInput
	if err := decodeJSON(w, r, a.cfg.MaxBodyBytes, &in); err != nil {
		return err
	}
	t, err := a.store.GetTemplate(r.Context(), r.PathValue("id"))
	if err != nil {
		return dirError(err, "template")
	}
	if t, err = a.saveTemplate(r, t, in, false); err != nil {
		return err
	}
	out, err := templateOf(t)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *api) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	return a.deleteDirEntry(w, r, "template", auditTemplateDeleted, a.store.DeleteTemplate)
}

func (a *api) listTemplates(w http.ResponseWriter, r *http.Request) error {
	ts, err := a.store.ListTemplates(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Templates []templateJSON `json:"templates"`
	}{Templates: make([]templateJSON, len(ts))}
	for i, t := range ts {
		if out.Templates[i], err = templateOf(t); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
